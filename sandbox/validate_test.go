package sandbox

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Spec)
		want   string // substring of the error; empty: valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"valid timeout from seconds", func(s *Spec) { s.Limits.Timeout, s.Limits.TimeoutSec = 0, 2.5 }, ""},
		{"bad run id", func(s *Spec) { s.RunID = "../x" }, "RunID"},
		{"long run id", func(s *Spec) { s.RunID = strings.Repeat("a", 65) }, "RunID"},
		{"no skill", func(s *Spec) { s.Skill = "" }, "Skill is empty"},
		{"skill with slash", func(s *Spec) { s.Skill = "a/b" }, `Skill "a/b"`},
		{"skill dot dot", func(s *Spec) { s.Skill = ".." }, `Skill ".."`},
		{"unicode skill name", func(s *Spec) { s.Skill = "café-données" }, ""},
		{"skill with space", func(s *Spec) { s.Skill = "a b" }, `Skill "a b"`},
		{"skill with leading hyphen", func(s *Spec) { s.Skill = "-x" }, `Skill "-x"`},
		{"no skill dir", func(s *Spec) { s.SkillDir = "" }, "SkillDir is empty"},
		{"relative skill dir", func(s *Spec) { s.SkillDir = "skills/hello" }, "not an absolute path"},
		{"no argv", func(s *Spec) { s.Argv = nil }, "Argv is empty"},
		{"empty argv0", func(s *Spec) { s.Argv = []string{""} }, "Argv is empty"},
		{"nul in argv", func(s *Spec) { s.Argv = []string{"python3", "a\x00b"} }, "Argv[1] contains a NUL"},
		{"reserved env", func(s *Spec) { s.Env = map[string]string{"PATH": "/evil"} }, "PATH is set by sandboxrun"},
		{"reserved env home", func(s *Spec) { s.Env = map[string]string{"SANDBOXRUN_RUN_ID": "x"} }, "reserved"},
		{"bad env name", func(s *Spec) { s.Env = map[string]string{"1X": "a"} }, `name "1X" must be`},
		{"env name with =", func(s *Spec) { s.Env = map[string]string{"A=B": "a"} }, `name "A=B" must be`},
		{"nul in env", func(s *Spec) { s.Env = map[string]string{"A": "x\x00"} }, "NUL"},
		{"huge stdin", func(s *Spec) { s.Stdin = make([]byte, MaxStdinBytes+1) }, "Stdin is"},
		{"writable without workspace", func(s *Spec) { s.WorkspaceWritable = true }, "WorkspaceWritable without a Workspace"},
		{"relative workspace", func(s *Spec) { s.Workspace = "." }, "Workspace \".\" is not an absolute path"},
		{"root workspace", func(s *Spec) { s.Workspace = "/./" }, "root directory"},
		{"no timeout", func(s *Spec) { s.Limits.Timeout = 0 }, "Limits.Timeout"},
		{"huge timeout", func(s *Spec) { s.Limits.Timeout = time.Hour }, "Limits.Timeout"},
		{"negative timeout", func(s *Spec) { s.Limits.Timeout = -time.Second }, "Limits.Timeout"},
		{"tiny memory", func(s *Spec) { s.Limits.MemoryBytes = 1 << 20 }, "Limits.MemoryBytes"},
		{"no cpus", func(s *Spec) { s.Limits.CPUs = 0 }, "Limits.CPUs"},
		{"nan cpus", func(s *Spec) { s.Limits.CPUs = math.NaN() }, "Limits.CPUs"},
		{"few pids", func(s *Spec) { s.Limits.Pids = 1 }, "Limits.Pids"},
		{"no output cap", func(s *Spec) { s.Limits.OutputBytes = 0 }, "Limits.OutputBytes"},
		{"tiny tmp", func(s *Spec) { s.Limits.TmpBytes = 1024 }, "Limits.TmpBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := goldenSpec()
			tt.mutate(&spec)
			err := spec.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidSpec)
			require.ErrorContains(t, err, tt.want)
			var se *SpecError
			require.True(t, errors.As(err, &se))
		})
	}
}

func TestSpecValidateListsEveryProblem(t *testing.T) {
	spec := Spec{}
	err := spec.Validate()
	var se *SpecError
	require.ErrorAs(t, err, &se)
	require.GreaterOrEqual(t, len(se.Problems), 8, "each missing field is its own problem: %v", se.Problems)
}

// Spec.Validate applies policy's caller-environment rule, so the two can
// never disagree on which names are reserved.
func TestSpecValidateReservesWhatPolicyReserves(t *testing.T) {
	for _, name := range append(policy.ReservedEnv, "SANDBOXRUN_FUTURE") {
		spec := goldenSpec()
		spec.Env = map[string]string{name: "x"}
		err := spec.Validate()
		require.ErrorIs(t, err, ErrInvalidSpec, name)
		require.ErrorContains(t, err, name)
	}
}
