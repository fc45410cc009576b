package sandbox

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Labels on every container sandboxrun creates. The reserved prefix lets
// Reap find leaked containers without touching anyone else's.
const (
	LabelPrefix     = "io.sandboxrun."
	LabelManaged    = LabelPrefix + "managed"
	LabelRunID      = LabelPrefix + "run-id"
	LabelCreated    = LabelPrefix + "created"
	LabelOwnerPID   = LabelPrefix + "owner-pid"
	LabelOwnerStart = LabelPrefix + "owner-start"
	LabelOwnerHost  = LabelPrefix + "owner-host"
	LabelSkill      = LabelPrefix + "skill"
	LabelVersion    = LabelPrefix + "version"
)

// containerNamePrefix starts every container's name, so `docker ps` shows
// at a glance which containers are sandboxes.
const containerNamePrefix = "sandboxrun-"

// maxRunIDLen bounds a run id, which is part of a container's name.
const maxRunIDLen = 64

// validRunID keeps run ids valid inside a container name and a label: 1-64
// ASCII letters, digits, '_', '.' or '-', starting with a letter or digit.
func validRunID(id string) bool {
	if id == "" || len(id) > maxRunIDLen {
		return false
	}
	for i := range len(id) {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// newRunID returns 16 random hex digits: unique enough to name containers
// of concurrent runs and short enough to read in logs.
func newRunID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// owner identifies the process that created a container. The start time
// (clock ticks after boot, from /proc/<pid>/stat) tells a live owner from a
// later process that reused its pid.
type owner struct {
	pid   int
	start uint64
	host  string
}

func ownerOf(pid int, host string) owner {
	start, _ := procStartTime("/proc", pid) // unknown start: pid check only
	return owner{pid: pid, start: start, host: host}
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

// containerLabels are the labels of one execution's container.
func containerLabels(spec *Spec, o owner, version string, created time.Time) map[string]string {
	l := map[string]string{
		LabelManaged:   "true",
		LabelRunID:     spec.RunID,
		LabelCreated:   created.UTC().Format(time.RFC3339),
		LabelOwnerPID:  strconv.Itoa(o.pid),
		LabelOwnerHost: o.host,
		LabelSkill:     spec.Skill,
	}
	if o.start != 0 {
		l[LabelOwnerStart] = strconv.FormatUint(o.start, 10)
	}
	if version != "" {
		l[LabelVersion] = version
	}
	return l
}
