package sandboxrun_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// A remote answer's error hides every host folder a remote caller could be
// told of, and leaves the error's classification as it was, a denial's
// fields included.
func TestRemoteError(t *testing.T) {
	dir := t.TempDir()
	polPath := filepath.Join(dir, "operator-policy.yaml")
	require.NoError(t, os.WriteFile(polPath, []byte("limits:\n  timeout: {max: 20s}\n"), 0o600))
	pol, err := policy.LoadPolicy(polPath)
	require.NoError(t, err)
	sessions := filepath.Join(dir, "sessions")
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, Policy: pol, SessionsRoot: sessions})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	skills, err := filepath.Abs("skills")
	require.NoError(t, err)
	hello := filepath.Join(skills, "hello")

	t.Run("a refusal from the policy", func(t *testing.T) {
		a := sandboxrun.Action{Code: []byte("print(1)"), Python: true}
		_, operr := svc.For(sandboxrun.Local).Execute(t.Context(), "hello", a, sandboxrun.Request{Timeout: 100e9}).Answer()
		require.ErrorContains(t, operr, polPath, "the operator's own error names the file")
		_, remote := svc.For(sandboxrun.Caller{Remote: true}).Execute(t.Context(), "hello", a, sandboxrun.Request{Timeout: 100e9}).Answer()
		require.NotContains(t, remote.Error(), dir)
		require.Contains(t, remote.Error(), "operator policy line 2")
		require.ErrorIs(t, remote, sandboxrun.ErrRefused)
		require.ErrorIs(t, remote, policy.ErrLimit)
	})

	t.Run("every folder", func(t *testing.T) {
		err := where.Errorf("%w: %s, %s, %s, %s line 3, %s", sandboxrun.ErrRefused, where.Path(hello+"/scripts/x.py"),
			where.Path(skills+"/other"), where.Path(sessions+"/ws/abc"), where.Path(polPath), where.Path("/etc/shadow"))
		_, remote := sandboxrun.RemoteOf(svc, "hello", nil, err)
		require.Equal(t, "refused: /skills/hello/scripts/x.py, the skills folder/other, the sessions folder/ws/abc, operator policy line 3, a file of the server", remote.Error())
		require.ErrorIs(t, remote, sandboxrun.ErrRefused)
	})

	t.Run("a denial quotes the caller", func(t *testing.T) {
		denied := &policy.DeniedError{Command: "cat /skills/hello/x", Part: "cat /skills/hello/x", Reason: "cat is not allowed", Suggest: "Bash(cat:*)"}
		_, remote := sandboxrun.RemoteOf(svc, "hello", nil, fmt.Errorf("%w: %w", sandboxrun.ErrRefused, denied))
		var d *policy.DeniedError
		require.ErrorAs(t, remote, &d)
		require.Equal(t, *denied, *d)
	})

	t.Run("a skill's load errors' fields", func(t *testing.T) {
		md := filepath.Join(skills, "broken", "SKILL.md")
		parse := &skill.ParseError{Path: md, Line: 2, Msg: "invalid YAML"}
		manifest := &skill.ManifestError{Path: md, Problems: []string{"name is missing"}}
		for _, err := range []error{parse, manifest} {
			_, remote := sandboxrun.RemoteOf(svc, "broken", nil, fmt.Errorf("%w: %w", sandboxrun.ErrRefused, err))
			require.NotContains(t, remote.Error(), skills)
			require.Contains(t, remote.Error(), "the skills folder/broken/SKILL.md")
			var pe *skill.ParseError
			var me *skill.ManifestError
			switch {
			case errors.As(remote, &pe):
				require.Equal(t, "the skills folder/broken/SKILL.md", pe.Path)
				require.Equal(t, "invalid YAML", pe.Msg)
				require.Equal(t, 2, pe.Line)
			case errors.As(remote, &me):
				require.Equal(t, "the skills folder/broken/SKILL.md", me.Path)
				require.Equal(t, []string{"name is missing"}, me.Problems)
			default:
				t.Fatalf("%T is not found in the remote error", err)
			}
		}
		require.Equal(t, md, parse.Path, "the Service's own error is left as it was")
	})

	t.Run("a bare word is not a path", func(t *testing.T) {
		// The skill root was given as "skills": the word stays a word.
		err := errors.New("the folder holds no skills")
		_, remote := sandboxrun.RemoteOf(svc, "hello", nil, err)
		require.Equal(t, err.Error(), remote.Error())
	})

	_, remote := sandboxrun.RemoteOf(svc, "hello", nil, nil)
	require.NoError(t, remote)
}

// A policy file named relative to the server's folder is hidden by that
// name too.
func TestRemoteErrorRelativePolicy(t *testing.T) {
	skills, err := filepath.Abs("skills")
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	require.NoError(t, os.WriteFile("strict.yaml", []byte("limits:\n  timeout: {max: 20s}\n"), 0o600))
	pol, err := policy.LoadPolicy("strict.yaml")
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{skills}, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	a := sandboxrun.Action{Code: []byte("print(1)"), Python: true}
	_, operr := svc.RunPython(t.Context(), "hello", a.Code, sandboxrun.Request{Timeout: 100e9})
	require.ErrorContains(t, operr, "strict.yaml")
	_, remote := svc.For(sandboxrun.Caller{Remote: true}).Execute(t.Context(), "hello", a, sandboxrun.Request{Timeout: 100e9}).Answer()
	require.NotContains(t, remote.Error(), "strict.yaml")
	require.Contains(t, remote.Error(), "operator policy line 2")
}

// A remote answer shows a run's limits as a remote caller may see them: a
// source naming the policy file in sandbox terms, the operator's CA file
// by what it is. The Service's own Result keeps the paths.
func TestRemoteResult(t *testing.T) {
	dir := t.TempDir()
	polPath := filepath.Join(dir, "operator-policy.yaml")
	require.NoError(t, os.WriteFile(polPath, []byte("limits:\n  timeout: {default: 20s}\n"), 0o600))
	pol, err := policy.LoadPolicy(polPath)
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })

	ca := filepath.Join(dir, "internal-ca.pem")
	res := &sandbox.Result{Limits: policy.Limits{
		Sources: map[string]where.Text{"timeout": where.Sprintf("policy limits.timeout.default (%s line 2)", where.Path(polPath))},
		Egress:  &policy.Egress{UpstreamCA: ca},
	}}
	remote, err := sandboxrun.RemoteOf(svc, "hello", res, nil)
	require.NoError(t, err)
	require.Equal(t, "policy limits.timeout.default (operator policy line 2)", remote.Limits.Sources["timeout"].String())
	require.Equal(t, "operator CA", remote.Limits.Egress.UpstreamCA)
	require.Contains(t, res.Limits.Sources["timeout"].String(), polPath, "the operator's Result is untouched")
	require.Equal(t, ca, res.Limits.Egress.UpstreamCA)
	remote, err = sandboxrun.RemoteOf(svc, "hello", nil, nil)
	require.NoError(t, err)
	require.Nil(t, remote)

	// A backend's failure mid-run is written into the Result from its
	// error, which is told again for the caller.
	cause := where.Errorf("copy %s back: %w", where.Path(filepath.Join(dir, "ws")), errors.New("disk full"))
	res = &sandbox.Result{Error: cause.Error(), Cause: cause}
	remote, _ = sandboxrun.RemoteOf(svc, "hello", res, nil)
	require.Equal(t, "copy a file of the server back: disk full", remote.Error)
	require.Equal(t, cause.Error(), res.Error, "the operator's Result is untouched")
	res = &sandbox.Result{Error: "killed by sandbox-init: the script ignored SIGTERM"}
	remote, _ = sandboxrun.RemoteOf(svc, "hello", res, nil)
	require.Equal(t, res.Error, remote.Error, "an error from inside the sandbox is the caller's to read")
}
