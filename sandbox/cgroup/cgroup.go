package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxrun/sandboxrun/internal/cgroupfs"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Root is where the host mounts its cgroup hierarchies.
const Root = "/sys/fs/cgroup"

// ErrNotFound means none of the cgroups asked for is on the host: it runs
// elsewhere (a remote engine) or under another parent.
var ErrNotFound = errors.New("cgroup not found on this host")

// Reader reads one cgroup's use.
type Reader struct {
	dirs cgroupfs.Dirs
}

// Find returns the Reader of the first of rels (a cgroup's path below the
// hierarchies' root, e.g. "docker/<id>") that exists under root.
func Find(root string, rels ...string) (*Reader, error) {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	v2 := err == nil
	for _, rel := range rels {
		rel = filepath.Clean("/" + rel)
		d := cgroupfs.Dirs{V2: v2}
		if v2 {
			d.CPU = filepath.Join(root, rel)
			d.Memory, d.Pids = d.CPU, d.CPU
		} else {
			d.CPU = filepath.Join(root, "cpuacct", rel)
			d.Memory = filepath.Join(root, "memory", rel)
			d.Pids = filepath.Join(root, "pids", rel)
		}
		r := &Reader{dirs: d}
		if fi, err := os.Stat(d.Memory); err == nil && fi.IsDir() {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w (looked for %v under %s)", ErrNotFound, rels, root)
}

// Read reads the cgroup's use now (cgroupfs.Dirs.Read).
func (r *Reader) Read() (sandbox.UsageSample, error) {
	f, err := r.dirs.Read()
	if err != nil {
		return sandbox.UsageSample{}, err
	}
	return sandbox.UsageSample{CPU: f.CPU, MemoryBytes: f.MemoryBytes, Pids: f.Pids}, nil
}
