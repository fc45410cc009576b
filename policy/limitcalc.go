package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/size"
)

// ErrLimit is wrapped by every refusal of a skill's or a request's limits.
var ErrLimit = errors.New("limit out of bounds")

// Built-in defaults and absolute bounds (docs/policy.md, "Limits and where they come from").
const (
	DefaultTimeout     = 30 * time.Second
	MinTimeout         = 1 * time.Second
	MaxTimeout         = 600 * time.Second
	DefaultMemoryMiB   = 512
	MinMemoryMiB       = 16
	DefaultCPUs        = 1.0
	DefaultPids        = 256
	DefaultOutputBytes = 10 << 20
	DefaultTmpBytes    = 64 << 20
	// DefaultWorkspaceWriteBytes caps what one run may write to a
	// writable workspace.
	DefaultWorkspaceWriteBytes = 1 << 30
)

// maxMemoryMiB keeps MiB-to-bytes conversion inside int64.
const maxMemoryMiB = math.MaxInt64 >> 20

// SkillLimits are the limits a skill declares in SKILL.md; a zero field means
// "not declared".
type SkillLimits struct {
	Timeout   time.Duration
	MemoryMiB int64
	CPUs      float64
	Network   bool
	// AllowedDomains are the hosts the skill says it needs (allowlist
	// entries); with Network, they are the most it may reach.
	AllowedDomains []string
	// Secrets are the names of the secrets the skill declares it needs;
	// the operator's grants decide which it gets.
	Secrets []string
}

// Request is what a caller asks for on one execution; a zero field means
// "not requested".
type Request struct {
	Timeout   time.Duration
	MemoryMiB int64
	CPUs      float64
	// AllowDomains, when not nil, narrows the run's network to these
	// allowlist entries: never past what the skill and the policy allow.
	AllowDomains []string
}

// DefaultLimits are the limits of a skill that declares none.
func DefaultLimits() Limits {
	return Limits{
		Timeout:     DefaultTimeout,
		TimeoutSec:  DefaultTimeout.Seconds(),
		MemoryBytes: DefaultMemoryMiB << 20,
		CPUs:        DefaultCPUs,
		Pids:        DefaultPids,
		OutputBytes: DefaultOutputBytes,
		TmpBytes:    DefaultTmpBytes,

		WorkspaceWriteBytes: DefaultWorkspaceWriteBytes,
	}
}

// Validate checks declared values against the bounds: timeout 1–600 s,
// memory at least 16 MiB, cpus above 0. Zero fields pass (not declared).
func (s SkillLimits) Validate() error {
	return errors.Join(
		skillTimeout.timeout(s.Timeout, MaxTimeout),
		skillMemory.memory(s.MemoryMiB, maxMemoryMiB),
		skillCPUs.cpus(s.CPUs, math.Inf(1)),
	)
}

// limitCheck names one limit in errors: what it is and the SKILL.md key that
// sets its ceiling.
type limitCheck struct {
	what    string
	key     string
	request bool
}

var (
	skillTimeout = limitCheck{what: "the skill's max_execution_time", key: "max_execution_time"}
	skillMemory  = limitCheck{what: "the skill's max_memory", key: "max_memory"}
	skillCPUs    = limitCheck{what: "the skill's max_cpus", key: "max_cpus"}
	reqTimeout   = limitCheck{what: "the requested timeout", key: "max_execution_time", request: true}
	reqMemory    = limitCheck{what: "the requested memory", key: "max_memory", request: true}
	reqCPUs      = limitCheck{what: "the requested cpus", key: "max_cpus", request: true}
)

func (c limitCheck) outOfBounds(value, bounds string) error {
	fix := "set " + c.key + " within those bounds in SKILL.md"
	if c.request {
		fix = "request a value within those bounds"
	}
	return fmt.Errorf("%w: %s is %s, outside %s; %s", ErrLimit, c.what, value, bounds, fix)
}

func (c limitCheck) overCeiling(value, ceiling string) error {
	return fmt.Errorf("%w: %s is %s, above the ceiling of %s set by the skill or the defaults; request at most %s, or raise %s in SKILL.md", ErrLimit, c.what, value, ceiling, ceiling, c.key)
}

// timeout accepts 0 (unset) or a value in [MinTimeout, MaxTimeout] and at
// most ceiling.
func (c limitCheck) timeout(v, ceiling time.Duration) error {
	switch {
	case v == 0:
		return nil
	case v < MinTimeout || v > MaxTimeout:
		return c.outOfBounds(seconds(v), seconds(MinTimeout)+"–"+seconds(MaxTimeout))
	case v > ceiling:
		return c.overCeiling(seconds(v), seconds(ceiling))
	}
	return nil
}

// memory accepts 0 (unset) or at least MinMemoryMiB and at most ceiling MiB.
func (c limitCheck) memory(v, ceiling int64) error {
	switch {
	case v == 0:
		return nil
	case v < MinMemoryMiB || v > maxMemoryMiB:
		return c.outOfBounds(size.FormatMiB(v), size.FormatMiB(MinMemoryMiB)+" or more")
	case v > ceiling:
		return c.overCeiling(size.FormatMiB(v), size.FormatMiB(ceiling))
	}
	return nil
}

// cpus accepts 0 (unset) or a finite value above 0 and at most ceiling.
func (c limitCheck) cpus(v, ceiling float64) error {
	switch {
	case v == 0:
		return nil
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return c.outOfBounds(fmt.Sprint(v), "a number above 0, e.g. 0.5 or 2")
	case v > ceiling:
		return c.overCeiling(fmt.Sprint(v), fmt.Sprint(ceiling))
	}
	return nil
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}
