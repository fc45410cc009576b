package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/layout"
)

// Labels on every sandbox sandboxrun creates (a container, a pod). The
// reserved prefix lets a reaper find leaked sandboxes without touching
// anyone else's.
const (
	LabelPrefix     = layout.LabelPrefix
	LabelManaged    = layout.LabelManaged
	LabelRunID      = layout.LabelRunID
	LabelCreated    = layout.LabelCreated
	LabelOwnerPID   = layout.LabelOwnerPID
	LabelOwnerStart = layout.LabelOwnerStart
	LabelOwnerHost  = layout.LabelOwnerHost
	LabelSkill      = layout.LabelSkill
	LabelVersion    = layout.LabelVersion
)

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

// NewRunID returns 16 random hex digits: unique enough to name containers
// of concurrent runs and short enough to read in logs.
func NewRunID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// RunLabels are the labels of one execution's sandbox, created at created
// by owner o.
func RunLabels(spec *Spec, o Owner, version string, created time.Time) map[string]string {
	l := map[string]string{
		LabelManaged:   "true",
		LabelRunID:     spec.RunID,
		LabelCreated:   created.UTC().Format(time.RFC3339),
		LabelOwnerPID:  strconv.Itoa(o.PID),
		LabelOwnerHost: o.Host,
		LabelSkill:     spec.Skill,
	}
	if o.Start != 0 {
		l[LabelOwnerStart] = strconv.FormatUint(o.Start, 10)
	}
	if version != "" {
		l[LabelVersion] = version
	}
	return l
}
