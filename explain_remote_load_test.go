package sandboxrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
)

// TestRemoteExplainLoadsTheSkillOnce counts loads of SKILL.md by the
// warnings each load reports (the skill's name is unlike its folder): a
// remote explanation puts its answer in sandbox terms with the skill it
// loaded to decide, not a second one.
func TestRemoteExplainLoadsTheSkillOnce(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "folder-name")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"),
		[]byte("---\nname: other-name\ndescription: a skill whose folder has another name\n---\nbody\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "x.py"), []byte("print(1)\n"), 0o644))

	var mu sync.Mutex
	var warnings []string
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{root}, Warn: func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, msg)
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := len(warnings)
		warnings = nil
		return n
	}

	_, err = svc.Skill("other-name")
	require.NoError(t, err)
	perLoad := count()
	require.Positive(t, perLoad, "the fixture must warn on every load, or nothing is counted")

	for _, a := range []sandboxrun.Action{{Script: "scripts/x.py"}, {Script: "scripts/missing.py"}} {
		_, _ = svc.For(sandboxrun.Caller{Remote: true}).Explain(context.Background(), "other-name", a, sandboxrun.Request{})
		require.Equal(t, perLoad, count(), "one load for %s: %s", a.Script, strings.Join(warnings, "; "))
	}
}

// A remote explanation's argv and command are composed from the plan's
// sandbox paths: no host folder, however the skill root was named (here
// through a link the host path rewrite would not know).
func TestRemoteExplainComposesSandboxPaths(t *testing.T) {
	skills, err := filepath.Abs("skills")
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "linked-skills")
	require.NoError(t, os.Symlink(skills, link))
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{link}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })

	e, err := svc.For(sandboxrun.Caller{Remote: true}).Explain(context.Background(), "hello", sandboxrun.Action{Command: "python3 {baseDir}/scripts/echo.py"}, sandboxrun.Request{})
	require.NoError(t, err)
	require.Equal(t, "python3 /skills/hello/scripts/echo.py", e.Command)
	e, err = svc.For(sandboxrun.Caller{Remote: true}).Explain(context.Background(), "hello", sandboxrun.Action{Script: "scripts/echo.py"}, sandboxrun.Request{})
	require.NoError(t, err)
	require.Contains(t, e.Argv, "/skills/hello/scripts/echo.py")
	for _, arg := range append(e.Argv, e.Command) {
		require.NotContains(t, arg, link)
		require.NotContains(t, arg, skills)
	}
}
