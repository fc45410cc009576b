package sandboxrun_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/testlog"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
)

// Each refusal a remote caller can meet before a sandbox starts is told
// from values: its message names the skill's files by their sandbox paths,
// the roots and the policy file by what they are, and the operator's own
// error (which names the host folders) is not rewritten to get there. The
// last-resort check never fires for them: were a message written with a
// host path as plain text, the caller would be told only that, and this
// test would fail.
func TestRemoteAnswersAreComposed(t *testing.T) {
	host := t.TempDir()
	root := filepath.Join(host, "skills")
	write := func(rel, body string, mode os.FileMode) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), mode))
	}
	manifest := func(name string) string {
		return "---\nname: " + name + "\ndescription: A skill for the test.\n---\nRun it.\n"
	}
	write("good/SKILL.md", manifest("good"), 0o644)
	write("good/scripts/run.py", "print(1)\n", 0o644)
	write("good/notes.py", "print(2)\n", 0o644)
	require.NoError(t, os.Symlink("../notes.py", filepath.Join(root, "good/scripts/link.py")))
	write("good/scripts/setid.py", "print(3)\n", 0o644)
	require.NoError(t, os.Chmod(filepath.Join(root, "good/scripts/setid.py"), 0o644|os.ModeSetuid))
	write("noscripts/SKILL.md", manifest("noscripts"), 0o644)
	write("withpipe/SKILL.md", manifest("withpipe"), 0o644)
	write("withpipe/scripts/run.py", "print(1)\n", 0o644)
	require.NoError(t, unix.Mkfifo(filepath.Join(root, "withpipe/scripts/f.py"), 0o600))
	write("broken/SKILL.md", "---\nname: [broken\n---\n", 0o644)
	write("unnamed/SKILL.md", "---\nname: unnamed\n---\nbody\n", 0o644)

	polPath := filepath.Join(host, "policy.yaml")
	require.NoError(t, os.WriteFile(polPath, []byte("limits:\n  timeout: {max: 20s}\n  memory: {max: 256m}\n"), 0o600))
	pol, err := policy.LoadPolicy(polPath)
	require.NoError(t, err)
	var logs testlog.Buffer
	svc, err := sandboxrun.New(sandboxrun.Config{
		SkillRoots: []string{root}, Policy: pol, SessionsRoot: filepath.Join(host, "sessions"),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Warn: func(string) {},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })

	script := func(s string) sandboxrun.Action { return sandboxrun.Action{Script: s} }
	tests := []struct {
		name   string
		skill  string
		action sandboxrun.Action
		req    sandboxrun.Request
		told   string // in the caller's answer
	}{
		{"no such skill", "nope", script("scripts/run.py"), sandboxrun.Request{}, `no skill "nope" in the skills folder`},
		{"invalid SKILL.md", "broken", script("scripts/run.py"), sandboxrun.Request{}, "the skills folder/broken/SKILL.md:2:"},
		{"invalid manifest", "unnamed", script("scripts/run.py"), sandboxrun.Request{}, "the skills folder/unnamed/SKILL.md: invalid skill manifest"},
		{"a broken skill's folder name", "broken", script("scripts/run.py"), sandboxrun.Request{}, "(the server's operator has to fix the skill)"},
		{"no such script", "good", script("scripts/nope.py"), sandboxrun.Request{}, "/skills/good/scripts/nope.py does not exist"},
		{"a link out of scripts", "good", script("scripts/link.py"), sandboxrun.Request{}, "it resolves to /skills/good/notes.py; only files under /skills/good/scripts can run"},
		{"a set-id script", "good", script("scripts/setid.py"), sandboxrun.Request{}, "chmod u-s,g-s /skills/good/scripts/setid.py"},
		{"no scripts folder", "noscripts", script("scripts/run.py"), sandboxrun.Request{}, "no scripts/ folder at /skills/noscripts/scripts"},
		{"a named pipe in the skill", "withpipe", script("scripts/run.py"), sandboxrun.Request{}, "skill withpipe: digest of the skills folder/withpipe: scripts/f.py is a named pipe, not a file, folder or link"},
		{"over a ceiling", "good", script("scripts/run.py"), sandboxrun.Request{Timeout: 100e9}, "(operator policy line 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, operr := svc.For(sandboxrun.Local).Execute(t.Context(), tt.skill, tt.action, tt.req).Answer()
			require.Error(t, operr)
			require.Contains(t, operr.Error(), host, "the operator's error names the host folder")
			_, remote := svc.For(sandboxrun.Caller{Remote: true}).Execute(t.Context(), tt.skill, tt.action, tt.req).Answer()
			require.ErrorIs(t, remote, sandboxrun.ErrRefused)
			require.Contains(t, remote.Error(), tt.told)
			require.NotContains(t, remote.Error(), host)
			for _, cli := range []string{"sandboxrun validate", "--skills", "SANDBOXRUN_SKILLS"} {
				require.NotContains(t, remote.Error(), cli, "the CLI's fix is the operator's, not the caller's")
			}
			require.NotContains(t, logs.String(), "host folder", "the last-resort check fired: a message holds a host path as text")

			e, err := svc.For(sandboxrun.Caller{Remote: true}).Explain(t.Context(), tt.skill, tt.action, tt.req)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.told, "explain tells it as the run does")
			if e != nil {
				for k, v := range e.Limits.Sources {
					require.NotContains(t, v.String(), host, k)
				}
			}
		})
	}

	t.Run("a path written as text is caught", func(t *testing.T) {
		_, remote := sandboxrun.RemoteOf(svc, "good", nil, errors.Join(sandboxrun.ErrRefused, errors.New("cannot read "+root+"/good/x")))
		require.NotContains(t, remote.Error(), host)
		require.ErrorIs(t, remote, sandboxrun.ErrRefused, "the error still classifies")
		require.Contains(t, logs.String(), root+"/good/x", "the operator's log has the message")
	})

	t.Run("the decided limits", func(t *testing.T) {
		e, err := svc.For(sandboxrun.Caller{Remote: true}).Explain(t.Context(), "good", script("scripts/run.py"), sandboxrun.Request{})
		require.NoError(t, err)
		require.Equal(t, where.Plain("policy limits.timeout.max (operator policy line 2)"), e.Limits.Sources["timeout"])
	})
}
