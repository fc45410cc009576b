package sandbox

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/size"
)

// ErrBeyondHost refuses a Spec the backend's host cannot honour: more
// memory or CPUs than it has, or an engine runtime it does not know. It
// matches ErrInvalidSpec too: nothing was started.
var ErrBeyondHost = errors.New("beyond what the engine's host offers")

// HostCapacity is what a backend's host offers a sandbox, as its engine
// reports it. A zero field is unknown and not checked.
type HostCapacity struct {
	// CPUs is the host's whole CPUs. MilliCPUs, when set, is the host's
	// CPUs in thousandths, and is what is checked: a share of a machine
	// (a Kubernetes node's allocatable, a cgroup's quota) need not be
	// whole.
	CPUs        int
	MilliCPUs   int64
	MemoryBytes int64
	// Runtimes are the engine runtimes registered; Runtime is the one the
	// backend asks for ("" for the engine's default, not checked).
	Runtimes []string
	Runtime  string
}

// CheckHost refuses limits above the host's memory or CPUs and an engine
// runtime the engine does not have, naming each field, the host's figure
// and the fix. A backend calls it before anything starts, in Run and in
// its SpecChecker, so that an explanation refuses what the run refuses.
func CheckHost(spec *Spec, h HostCapacity) error {
	var msgs []string
	if h.MemoryBytes > 0 && spec.Limits.MemoryBytes > h.MemoryBytes {
		msgs = append(msgs, fmt.Sprintf("memory %s (max_memory / --memory) is above the engine host's %s; ask for less",
			size.Format(spec.Limits.MemoryBytes), size.Format(h.MemoryBytes)))
	}
	if m := h.milliCPUs(); m > 0 && int64(math.Ceil(spec.Limits.CPUs*1000)) > m {
		cpus := float64(m) / 1000
		msgs = append(msgs, fmt.Sprintf("cpus %g (max_cpus / --cpus) is above the engine host's %g CPUs; ask for at most %g",
			spec.Limits.CPUs, cpus, cpus))
	}
	if h.Runtime != "" && !slices.Contains(h.Runtimes, h.Runtime) {
		msgs = append(msgs, fmt.Sprintf("the engine has no runtime %q (it has: %s); register it in the engine's daemon.json, or choose one of those",
			h.Runtime, strings.Join(h.Runtimes, ", ")))
	}
	if len(msgs) > 0 {
		return &beyondHostError{msg: ErrBeyondHost.Error() + ": " + strings.Join(msgs, "; ")}
	}
	return nil
}

// milliCPUs is the host's CPUs in thousandths, 0 when unknown.
func (h HostCapacity) milliCPUs() int64 {
	if h.MilliCPUs > 0 {
		return h.MilliCPUs
	}
	return int64(h.CPUs) * 1000
}

// beyondHostError is a refusal naming the field and the host's figure.
type beyondHostError struct{ msg string }

func (e *beyondHostError) Error() string { return e.msg }
func (e *beyondHostError) Is(target error) bool {
	return target == ErrBeyondHost || target == ErrInvalidSpec
}
