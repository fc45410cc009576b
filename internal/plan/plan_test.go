package plan_test

import (
	"os"
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

// A caller cannot set the variable a granted secret's placeholder goes in:
// the plan refuses it, so Explain says what the run would meet.
func TestPlanRefusesASecretsVariable(t *testing.T) {
	t.Setenv("SANDBOXRUN_TEST_PLAN_SECRET", "plan-secret-value")
	dir := filepath.Join(t.TempDir(), "gh")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: gh\ndescription: Test skill gh.\n"+
		"metadata:\n  network_access: \"true\"\n  allowed_domains: \"api.github.com\"\n  secrets: \"GH_TOKEN\"\n---\nbody\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "x.py"), []byte("print(1)\n"), 0o644))
	sk, err := skill.Load(dir)
	require.NoError(t, err)
	pol, err := policy.ParsePolicy("p.yaml", []byte("network: allowlist\nsecrets:\n  GH_TOKEN:\n    from_env: SANDBOXRUN_TEST_PLAN_SECRET\n"+
		"    hosts: [api.github.com]\n    header: \"Authorization: Bearer {value}\"\nskills:\n  gh:\n    secrets: [GH_TOKEN]\n    allowed_domains: [api.github.com]\n"))
	require.NoError(t, err)
	in := plan.Input{Skill: sk, Policy: pol, RunnerImage: "r:1", Action: plan.Action{Script: "scripts/x.py"}}
	p, err := plan.Make(in)
	require.NoError(t, err)
	require.Len(t, p.Spec.Limits.Egress.Secrets, 1, "the secret is granted")

	in.Env = map[string]string{"GH_TOKEN": "mine"}
	_, err = plan.Make(in)
	require.ErrorContains(t, err, "env sets GH_TOKEN, which is a secret")
}
