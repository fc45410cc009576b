package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/cgroupfs"
	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// Live usage over the side channel (frame.StreamUsage): init opens the
// stream before the child starts and answers each of the host's asks with
// what its cgroup (the container's) and its writable workspace hold then.
// Init keeps no timer: the host asks as often as the run wants samples.

// serveUsage opens the usage stream on ch and answers on it until it
// closes (the host is done, or does not know the stream and closed it at
// once). ws is the writable workspace fetched over ch, nil for none.
func serveUsage(ch *channel, ws *workspaceTree, log *slog.Logger) {
	if ch == nil {
		return
	}
	s, err := ch.open(frame.StreamUsage)
	if err != nil {
		log.Debug("usage stream", "err", err)
		return
	}
	var base int64
	if ws != nil {
		base, _ = usage(ws.dir)
	}
	go func() {
		defer func() { _ = s.Close() }()
		var ask [1]byte
		for {
			if _, err := io.ReadFull(s, ask[:]); err != nil || ask[0] != frame.UsageAsk {
				return
			}
			smp := sandboxCgroups.sample()
			if ws != nil {
				used, _ := usage(ws.dir)
				n := max(used-base, 0)
				smp.WorkspaceBytes = &n
			}
			line, err := json.Marshal(smp)
			if err != nil {
				return
			}
			if _, err := s.Write(append(line, '\n')); err != nil {
				return
			}
		}
	}()
}

// sample reads the sandbox's cgroup: version 2's cpu.stat, memory.current
// and pids.current, or version 1's cpuacct.usage, memory.usage_in_bytes
// and pids.current. Memory leaves out inactive file pages, as `docker
// stats` does.
func (v cgroupView) sample() frame.UsageSample {
	self, err := os.ReadFile(v.self)
	if err != nil {
		return frame.UsageSample{Error: "read " + v.self + ": " + err.Error()}
	}
	var d cgroupfs.Dirs
	if _, err := os.Stat(filepath.Join(v.root, "cgroup.controllers")); err == nil {
		dir := v.dir(self, "", "")
		d = cgroupfs.Dirs{V2: true, CPU: dir, Memory: dir, Pids: dir}
	} else {
		d = cgroupfs.Dirs{CPU: v.dir(self, "cpuacct", "cpuacct"), Memory: v.dir(self, "memory", "memory"), Pids: v.dir(self, "pids", "pids")}
	}
	f, err := d.Read()
	s := frame.UsageSample{CPUNS: int64(f.CPU), MemoryBytes: f.MemoryBytes, Pids: f.Pids}
	if err != nil {
		s.Error = err.Error()
	}
	return s
}

// dir is init's cgroup folder in the hierarchy of controller ("" for
// version 2's) mounted at mount below the root: the path /proc/self/cgroup
// gives, when that exists under the mount (a mount of the whole
// hierarchy), else the mount itself (a private cgroup namespace, or a
// runtime that mounts the container's own cgroup there).
func (v cgroupView) dir(self []byte, controller, mount string) string {
	root := filepath.Join(v.root, mount)
	if p := cgroupPath(self, controller); p != "" && p != "/" {
		full := filepath.Join(root, filepath.Clean("/"+p))
		if fi, err := os.Stat(full); err == nil && fi.IsDir() { //nolint:gosec // a rooted, cleaned path joined under the mount cannot leave it
			return full
		}
	}
	return root
}

// cgroupPath is the path (hierarchy-id:controller-list:path lines) /proc/self/cgroup gives for controller's
// hierarchy ("" for version 2's), "" when none.
func cgroupPath(procSelfCgroup []byte, controller string) string {
	sc := bufio.NewScanner(bytes.NewReader(procSelfCgroup))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" ||
			controller != "" && slices.Contains(strings.Split(parts[1], ","), controller) {
			return parts[2]
		}
	}
	return ""
}
