package plan_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
)

func hello(t *testing.T) *skill.Skill {
	t.Helper()
	sk, err := skill.Load(filepath.Join("..", "..", "skills", "hello"))
	require.NoError(t, err)
	return sk
}

// A refused plan still says what was decided before the refusal, so an
// explanation can show the command as judged and the runner.
func TestRefusedPlanKeepsWhatWasDecided(t *testing.T) {
	p, err := plan.Make(plan.Input{Skill: hello(t), Policy: policy.BuiltinPolicy(), RunnerImage: "r:1",
		Action: plan.Action{Command: "cat {baseDir}/SKILL.md"}})
	var denied *policy.DeniedError
	require.ErrorAs(t, err, &denied)
	require.Equal(t, "cat /skills/hello/SKILL.md", p.Command)
	require.Equal(t, "r:1", p.Runner)
	require.Empty(t, p.Spec.Argv, "nothing to run")
}

// With no action the plan is that of any run of the skill: limits and
// image decided, no program judged.
func TestPlanWithoutAction(t *testing.T) {
	p, err := plan.Make(plan.Input{Skill: hello(t), Policy: policy.BuiltinPolicy(), RunnerImage: "r:1"})
	require.NoError(t, err)
	require.Empty(t, p.Spec.Argv)
	require.Equal(t, int64(128<<20), p.Spec.Limits.MemoryBytes, "the skill's max_memory")
	require.Equal(t, "r:1", p.Spec.Image)
	require.Nil(t, p.SkillImage)
}

// A session's folder is the workspace; its quota caps the run's writes,
// and the policy's sessions.write, not the skill's Write grant, decides
// whether it is writable.
func TestPlanInASession(t *testing.T) {
	dir := t.TempDir()
	for _, write := range []bool{true, false} {
		pol, err := policy.ParsePolicy("p.yaml", []byte("sessions:\n  write: "+map[bool]string{true: "true", false: "false"}[write]+"\n"))
		require.NoError(t, err)
		p, err := plan.Make(plan.Input{Skill: hello(t), Policy: pol, RunnerImage: "r:1",
			Action: plan.Action{Script: "scripts/echo.py"}, Session: &plan.Session{Dir: dir, Quota: 5 << 20}})
		require.NoError(t, err)
		require.Equal(t, dir, p.Spec.Workspace)
		require.Equal(t, write, p.Spec.WorkspaceWritable)
		require.Equal(t, int64(5<<20), p.Spec.Limits.WorkspaceWriteBytes)
	}
}
