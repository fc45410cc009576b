package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Owner identifies the process that created a sandbox. The start time
// (clock ticks after boot, from /proc/<pid>/stat) tells a live owner from a
// later process that reused its pid; 0 when unknown.
type Owner struct {
	PID   int
	Start uint64
	Host  string
}

// OwnerOf names process pid on host as an owner.
func OwnerOf(pid int, host string) Owner {
	start, _ := procStartTime("/proc", pid) // unknown start: pid check only
	return Owner{PID: pid, Start: start, Host: host}
}

// OwnerLabels are the labels that name this process as the owner of a
// sandbox, for a reaper: pid, its start time, host. Keys are the Label*
// constants.
func OwnerLabels() map[string]string {
	host, _ := os.Hostname()
	o := OwnerOf(os.Getpid(), host)
	l := map[string]string{LabelOwnerPID: strconv.Itoa(o.PID), LabelOwnerHost: o.Host}
	if o.Start != 0 {
		l[LabelOwnerStart] = strconv.FormatUint(o.Start, 10)
	}
	return l
}

// OwnerGone reports whether the owner named by labels (OwnerLabels) is
// known to have ended: it was on host and alive says its process is gone.
// An owner on another host, or labels that name none, cannot be checked.
// alive is ProcessAlive under /proc outside tests.
func OwnerGone(labels map[string]string, host string, alive func(pid int, start uint64) bool) (pid int, gone bool) {
	pid, err := strconv.Atoi(labels[LabelOwnerPID])
	if err != nil || pid <= 0 || labels[LabelOwnerHost] != host {
		return 0, false
	}
	start, _ := strconv.ParseUint(labels[LabelOwnerStart], 10, 64)
	return pid, !alive(pid, start)
}

// ProcessAlive reports whether pid exists on this host and, when start is
// known, is the same process (not a later one that reused the pid).
func ProcessAlive(pid int, start uint64) bool { return processAlive("/proc", pid, start) }

func processAlive(procRoot string, pid int, start uint64) bool {
	got, err := procStartTime(procRoot, pid)
	if err != nil {
		// Unreadable but present still counts as alive: never remove a
		// sandbox whose owner might be running.
		_, serr := os.Stat(procRoot + "/" + strconv.Itoa(pid))
		return serr == nil
	}
	return start == 0 || got == start
}

// procStartTime reads field 22 (starttime) of <procRoot>/<pid>/stat.
func procStartTime(procRoot string, pid int) (uint64, error) {
	b, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read process %d stat: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may contain spaces
	// or parentheses itself: fields are counted after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("process %d stat: no command field", pid)
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("process %d stat: %d fields after the command", pid, len(fields))
	}
	v, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("process %d stat: start time: %w", pid, err)
	}
	return v, nil
}
