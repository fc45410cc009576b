// Package cgroupfs reads one cgroup's CPU time, memory in use and process
// count from its files, on cgroup version 1 or 2. It imports nothing of
// sandboxrun's, so sandbox-init (in the sandbox) and the host's backends
// read the same files by the same rules.
package cgroupfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Dirs are one cgroup's folders: on version 2 one folder for everything;
// on version 1 the cgroup's folder in the cpuacct, memory and pids
// hierarchies.
type Dirs struct {
	V2                bool
	CPU, Memory, Pids string
}

// Figures are what a cgroup holds at one moment.
type Figures struct {
	CPU         time.Duration
	MemoryBytes int64 // without inactive file pages, as `docker stats` counts
	Pids        int64 // 0 when the pids controller is absent
}

// Read reads the cgroup's use now: version 2's cpu.stat usage_usec,
// memory.current and pids.current, or version 1's cpuacct.usage,
// memory.usage_in_bytes and pids.current. Memory leaves out inactive file
// pages, which the kernel drops first. A host without the pids controller
// still has CPU and memory; a missing CPU or memory figure is an error.
func (d Dirs) Read() (Figures, error) {
	var f Figures
	var err error
	usage, inactive := "memory.current", "inactive_file"
	if d.V2 {
		var usec int64
		usec, err = StatField(filepath.Join(d.CPU, "cpu.stat"), "usage_usec")
		f.CPU = time.Duration(usec) * time.Microsecond
	} else {
		usage, inactive = "memory.usage_in_bytes", "total_inactive_file"
		var ns int64
		ns, err = ReadInt(filepath.Join(d.CPU, "cpuacct.usage"))
		f.CPU = time.Duration(ns)
	}
	if err == nil {
		f.MemoryBytes, err = ReadInt(filepath.Join(d.Memory, usage))
		if in, ierr := StatField(filepath.Join(d.Memory, "memory.stat"), inactive); err == nil && ierr == nil && in < f.MemoryBytes {
			f.MemoryBytes -= in
		}
	}
	f.Pids, _ = ReadInt(filepath.Join(d.Pids, "pids.current"))
	return f, err
}

// ReadInt reads a file holding one decimal number.
func ReadInt(path string) (int64, error) {
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

// StatField is the value of key in a flat keyed file ("key value" lines).
func StatField(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
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
	return 0, fmt.Errorf("read %s: no %s", path, key)
}
