package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Root is where the host mounts its cgroup hierarchies.
const Root = "/sys/fs/cgroup"

// ErrNotFound means none of the cgroups asked for is on the host: it runs
// elsewhere (a remote engine) or under another parent.
var ErrNotFound = errors.New("cgroup not found on this host")

// Reader reads one cgroup's use.
type Reader struct {
	v2 bool
	// cpu, memory and pids are the cgroup's folder in each hierarchy
	// (all the same one on version 2).
	cpu, memory, pids string
}

// Find returns the Reader of the first of rels (a cgroup's path below the
// hierarchies' root, e.g. "docker/<id>") that exists under root.
func Find(root string, rels ...string) (*Reader, error) {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	v2 := err == nil
	for _, rel := range rels {
		rel = filepath.Clean("/" + rel)
		r := &Reader{v2: v2}
		if v2 {
			r.cpu = filepath.Join(root, rel)
			r.memory, r.pids = r.cpu, r.cpu
		} else {
			r.cpu = filepath.Join(root, "cpuacct", rel)
			r.memory = filepath.Join(root, "memory", rel)
			r.pids = filepath.Join(root, "pids", rel)
		}
		if fi, err := os.Stat(r.memory); err == nil && fi.IsDir() {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w (looked for %v under %s)", ErrNotFound, rels, root)
}

// Read reads the cgroup's use now. Memory leaves out inactive file pages,
// which the kernel drops first, as `docker stats` does.
func (r *Reader) Read() (sandbox.UsageSample, error) {
	var s sandbox.UsageSample
	var err error
	if r.v2 {
		var usec int64
		usec, err = statField(filepath.Join(r.cpu, "cpu.stat"), "usage_usec")
		s.CPU = time.Duration(usec) * time.Microsecond
	} else {
		var ns int64
		ns, err = readInt(filepath.Join(r.cpu, "cpuacct.usage"))
		s.CPU = time.Duration(ns)
	}
	if err != nil {
		return s, err
	}
	usage, inactive := "memory.current", "inactive_file"
	if !r.v2 {
		usage, inactive = "memory.usage_in_bytes", "total_inactive_file"
	}
	if s.MemoryBytes, err = readInt(filepath.Join(r.memory, usage)); err != nil {
		return s, err
	}
	if in, err := statField(filepath.Join(r.memory, "memory.stat"), inactive); err == nil && in < s.MemoryBytes {
		s.MemoryBytes -= in
	}
	// A host without the pids controller still has CPU and memory.
	s.Pids, _ = readInt(filepath.Join(r.pids, "pids.current"))
	return s, nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// statField is the value of key in a flat keyed file ("key value" lines).
func statField(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte{' '})
		if ok && string(k) == key {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read %s %s: %w", path, key, err)
			}
			return n, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("read %s: no %s", path, key)
}
