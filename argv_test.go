package sandboxrun_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
)

func TestPrepareCallerArgvAndWorkDir(t *testing.T) {
	hello := loadExample(t, "hello")
	argv := []string{"--input", "data file.csv", "$(id)", ""}

	p, err := sandboxrun.PrepareScript(hello, "scripts/echo.py", sandboxrun.Request{Argv: argv, Args: []byte(`{"a": 1}`)})
	require.NoError(t, err)
	require.Equal(t, append([]string{"python3", "/skills/hello/scripts/echo.py"}, argv...), p.Spec.Argv, "passed as argv entries, exactly")
	require.Equal(t, `{"a":1}`, string(p.Spec.Stdin), "JSON on stdin as well")
	require.Equal(t, "/workspace", p.Spec.Dir)
	require.Equal(t, argv, p.CallerArgv)

	p, err = sandboxrun.PreparePython(hello, []byte("print(1)"), sandboxrun.Request{Argv: []string{"x"}, WorkDir: policy.WorkDirSkill})
	require.NoError(t, err)
	require.Equal(t, []string{"python3", "-", "x"}, p.Spec.Argv)
	require.Equal(t, "/skills/hello", p.Spec.Dir)
	require.NoError(t, p.Spec.Validate())

	// A command carries its own arguments.
	_, err = sandboxrun.PrepareCommand(hello, "echo hi", sandboxrun.Request{Argv: []string{"x"}})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.ErrorIs(t, err, policy.ErrBadArgv)

	for _, bad := range [][]string{{"a\x00b"}, {strings.Repeat("x", policy.MaxArgBytes+1)}, {"\xff"}} {
		_, err = sandboxrun.PrepareScript(hello, "scripts/echo.py", sandboxrun.Request{Argv: bad})
		require.ErrorIs(t, err, sandboxrun.ErrRefused)
		require.ErrorIs(t, err, policy.ErrBadArgv)
	}
}

func TestAuditRecordKeepsCallerArgvOut(t *testing.T) {
	hello := loadExample(t, "hello")
	p, err := sandboxrun.PrepareScript(hello, "scripts/echo.py", sandboxrun.Request{Argv: []string{"--token", "s3cret"}})
	require.NoError(t, err)
	rec := sandboxrun.AuditRecord(p, nil, nil)
	require.Equal(t, []string{"python3", "/skills/hello/scripts/echo.py"}, rec.Argv)
	require.Equal(t, 2, rec.ScriptArgs)
	require.Len(t, rec.ScriptArgsSHA256, 64)
	require.Equal(t, []string{"python3", "/skills/hello/scripts/echo.py", "--token", "s3cret"}, p.Spec.Argv, "the record is a copy")

	other, err := sandboxrun.PrepareScript(hello, "scripts/echo.py", sandboxrun.Request{Argv: []string{"--token s3cret"}})
	require.NoError(t, err)
	require.NotEqual(t, rec.ScriptArgsSHA256, sandboxrun.AuditRecord(other, nil, nil).ScriptArgsSHA256, "argument boundaries count")

	none, err := sandboxrun.PrepareScript(hello, "scripts/echo.py", sandboxrun.Request{})
	require.NoError(t, err)
	rec = sandboxrun.AuditRecord(none, nil, nil)
	require.Zero(t, rec.ScriptArgs)
	require.Empty(t, rec.ScriptArgsSHA256)
}

func TestRunnerFor(t *testing.T) {
	pol, err := policy.ParsePolicy("p.yaml", []byte("profile: documents\nskills:\n  plain:\n    profile: \"\"\n  office-skill:\n    profile: office\n"))
	require.NoError(t, err)
	for skillName, want := range map[string]string{
		"any":          sandboxrun.RunnerImage() + "-documents",
		"office-skill": sandboxrun.RunnerImage() + "-office",
		"plain":        sandboxrun.RunnerImage(),
	} {
		got, err := sandboxrun.RunnerFor(pol, skillName)
		require.NoError(t, err)
		require.Equal(t, want, got, skillName)
	}
	got, err := sandboxrun.RunnerFor(nil, "any")
	require.NoError(t, err)
	require.Equal(t, sandboxrun.RunnerImage(), got)

	hello := loadExample(t, "hello")
	p, err := sandboxrun.PrepareScript(hello, "scripts/echo.py", sandboxrun.Request{Policy: pol})
	require.NoError(t, err)
	require.Equal(t, sandboxrun.RunnerImage()+"-documents", p.Spec.Image)
}
