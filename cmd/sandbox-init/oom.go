package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// cgroupView is where init reads its cgroups: the cgroup file system and
// the file saying where in it init is.
type cgroupView struct{ root, self string }

// sandboxCgroups is what the sandbox sees: the container has a private
// cgroup namespace, so the root of the mount is the container's cgroup and
// its counters are the sandbox's alone.
var sandboxCgroups = cgroupView{root: "/sys/fs/cgroup", self: "/proc/self/cgroup"}

// oomCounters are the files holding the memory cgroup's OOM-kill count,
// relative to cgroupRoot, with the hierarchy each belongs to: cgroup v2
// first, then v1 (its oom_kill line came with Linux 4.13).
var oomCounters = []struct{ file, controller string }{
	{"memory.events", ""},
	{"memory/memory.oom_control", "memory"},
}

// oomKills reads how many processes the OOM killer has killed in the
// sandbox's memory cgroup. The counter only grows and the script cannot
// write it (the cgroup mount is read-only). It reports nil when no counter
// is readable, or when init is not at the root of its own cgroups (another
// runtime's layout, where the file could count more than the sandbox): the
// host then asks the engine.
func (v cgroupView) oomKills() *int64 {
	self, err := os.ReadFile(v.self)
	if err != nil {
		return nil
	}
	for _, c := range oomCounters {
		if !atCgroupRoot(self, c.controller) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(v.root, c.file))
		if err != nil {
			continue
		}
		if n, ok := counter(b, "oom_kill"); ok {
			return &n
		}
	}
	return nil
}

// oomKillsSince is how many OOM kills happened since base was read (all of
// them when base is nil), or nil when the count cannot be read.
func (v cgroupView) oomKillsSince(base *int64) *int64 {
	now := v.oomKills()
	if now == nil || base == nil {
		return now
	}
	n := max(*now-*base, 0)
	return &n
}

// atCgroupRoot reports whether /proc/self/cgroup puts init at the root of
// the hierarchy holding controller ("" for the cgroup v2 one).
func atCgroupRoot(procSelfCgroup []byte, controller string) bool {
	return cgroupPath(procSelfCgroup, controller) == "/"
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
