package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// cgroupRoot is where the sandbox sees its own cgroups: the container has a
// private cgroup namespace, so the root of the mount is the container's
// cgroup and its counters are the sandbox's alone.
const cgroupRoot = "/sys/fs/cgroup"

// oomCounters are the files holding the memory cgroup's OOM-kill count,
// relative to cgroupRoot: cgroup v2 first, then v1 (its oom_kill line came
// with Linux 4.13).
var oomCounters = []string{"memory.events", "memory/memory.oom_control"}

// oomKills reads how many processes the OOM killer has killed in the
// sandbox's memory cgroup. The counter only grows and the script cannot
// write it (the cgroup mount is read-only), so a count above zero after the
// child ended means the memory limit killed something of the job. It
// reports nil when no counter is readable; the host then asks the engine.
func oomKills(root string) *int64 {
	for _, name := range oomCounters {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue
		}
		if n, ok := counter(b, "oom_kill"); ok {
			return &n
		}
	}
	return nil
}

// counter returns the value of the "key value" line for key.
func counter(b []byte, key string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte{' '})
		if !ok || string(k) != key {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil || n < 0 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
