package sandbox

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/policy"
)

// Bounds a Runner enforces on every Spec, whatever policy decided. They are
// a second line of defence: policy applies the product's (tighter) limits.
const (
	// MaxTimeout is the product's one bound on a run's time, which no
	// policy can raise: the Runner checks the same number.
	MaxTimeout     = policy.MaxTimeout
	MinMemoryBytes = 6 << 20 // Docker refuses less
	MinCPUs        = 0.01
	// MinPids leaves room for sandbox-init, its runtime threads and the
	// script itself.
	MinPids        = 8
	MaxOutputBytes = 1 << 30
	MinTmpBytes    = 1 << 20
	// MaxStdinBytes bounds the arguments carried in the job; policy's own
	// cap is lower.
	MaxStdinBytes = 64 << 20
)

// maxSkillNameRunes bounds a skill's name, which becomes /skills/<name>.
const maxSkillNameRunes = 128

// validSkillName reports whether name is 1-128 letters or digits (any
// script), '.', '_' or '-', starting with a letter or digit. It is a loop,
// not a regular expression: the equivalent pattern, with its Unicode
// classes repeated up to 127 times, took milliseconds and megabytes to
// compile at the start of every process that imports this package.
func validSkillName(name string) bool {
	n := 0
	for _, r := range name { // invalid UTF-8 reads as U+FFFD, not a letter
		n++
		if n > maxSkillNameRunes || !skillNameRune(r, n == 1) {
			return false
		}
	}
	return n > 0
}

// skillNameRune reports whether r may appear in a skill's name, first or
// later.
func skillNameRune(r rune, first bool) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || (!first && (r == '.' || r == '_' || r == '-'))
}

// Validate checks the Spec without touching the file system or Docker. The
// error lists every problem and matches ErrInvalidSpec.
func (s *Spec) Validate() error {
	var p []string
	add := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }

	if s.RunID != "" && !validRunID(s.RunID) {
		add("RunID %q: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", s.RunID)
	}
	switch {
	case s.Skill == "":
		add("Skill is empty: set the skill's name")
	case !validSkillName(s.Skill):
		add("Skill %q: use letters (Unicode allowed), digits, '_', '.' or '-', starting with a letter or digit (it becomes /skills/<name>)", s.Skill)
	}
	checkAbs := func(field, path string) {
		if !filepath.IsAbs(path) {
			add("%s %q is not an absolute path: resolve it first", field, path)
		}
	}
	if s.SkillDir == "" {
		add("SkillDir is empty: set the host path of the skill folder")
	} else {
		checkAbs("SkillDir", s.SkillDir)
	}
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		add("Argv is empty: set the command to run, e.g. [\"python3\", \"/skills/<name>/scripts/x.py\"]")
	}
	for i, a := range s.Argv {
		if strings.ContainsRune(a, 0) {
			add("Argv[%d] contains a NUL byte", i)
		}
	}
	// The caller-environment rule is policy's: one list of reserved names
	// for the whole product.
	if err := policy.CheckEnv(s.Env); err != nil {
		add("Env: %v", err)
	}
	if len(s.Stdin) > MaxStdinBytes {
		add("Stdin is %d bytes: at most %d", len(s.Stdin), MaxStdinBytes)
	}
	switch {
	case s.Workspace == "" && s.WorkspaceWritable:
		add("WorkspaceWritable without a Workspace: set Workspace")
	case s.Workspace != "":
		checkAbs("Workspace", s.Workspace)
		if filepath.Clean(s.Workspace) == "/" {
			add("Workspace is the root directory: choose a project directory")
		}
	}
	p = append(p, egressProblems(s)...)
	if s.Dir != "" && s.Dir != WorkspaceDir && s.Dir != SkillMount(s.Skill) {
		add("Dir %q: use %s or the skill's folder %s", s.Dir, WorkspaceDir, SkillMount(s.Skill))
	}
	if u := s.checkUsage(); u != "" {
		p = append(p, u)
	}
	p = append(p, limitProblems(s.Limits)...)
	if len(p) > 0 {
		return &SpecError{Problems: p}
	}
	return nil
}

func limitProblems(l policy.Limits) []string {
	var p []string
	add := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }
	t := EffectiveTimeout(l)
	if t <= 0 || t > MaxTimeout {
		add("Limits.Timeout %s: use more than 0 and at most %s", t, MaxTimeout)
	}
	if l.MemoryBytes < MinMemoryBytes {
		add("Limits.MemoryBytes %d: use at least %d (%s)", l.MemoryBytes, MinMemoryBytes, size.Format(MinMemoryBytes))
	}
	if math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) || l.CPUs < MinCPUs {
		add("Limits.CPUs %g: use at least %g", l.CPUs, MinCPUs)
	}
	if l.Pids < MinPids {
		add("Limits.Pids %d: use at least %d", l.Pids, MinPids)
	}
	if l.OutputBytes < 1 || l.OutputBytes > MaxOutputBytes {
		add("Limits.OutputBytes %d: use 1 to %d", l.OutputBytes, MaxOutputBytes)
	}
	if l.TmpBytes < MinTmpBytes {
		add("Limits.TmpBytes %d: use at least %d (%s)", l.TmpBytes, MinTmpBytes, size.Format(MinTmpBytes))
	}
	return p
}

// EffectiveTimeout reads the timeout from Timeout, or from TimeoutSec when
// only the JSON form was filled.
func EffectiveTimeout(l policy.Limits) time.Duration {
	if l.Timeout != 0 {
		return l.Timeout
	}
	return time.Duration(l.TimeoutSec * float64(time.Second))
}
