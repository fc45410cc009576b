package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// rootCaller is sandboxrun run by root: scripts run as SandboxUID.
var rootCaller = IdentityFor(0, 0)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: files owned by the sandbox uid can only be made by root")
	}
}

func TestCheckHostPaths(t *testing.T) {
	requireRoot(t)
	skill := t.TempDir()
	require.NoError(t, os.Chmod(skill, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(skill, "scripts"), 0o755))
	script := filepath.Join(skill, "scripts", "x.py")
	require.NoError(t, os.WriteFile(script, []byte("print(1)"), 0o644))
	ws := t.TempDir()
	require.NoError(t, os.Chmod(ws, 0o755))

	require.NoError(t, checkHostPaths(&Spec{SkillDir: skill, Workspace: ws}, rootCaller))

	require.NoError(t, os.Chmod(script, 0o600))
	err := checkHostPaths(&Spec{SkillDir: skill}, rootCaller)
	require.ErrorIs(t, err, ErrSkillUnreadable)
	require.ErrorContains(t, err, "chmod -R o+rX")
	require.NoError(t, checkHostPaths(&Spec{SkillDir: skill}, IdentityFor(1000, 1000)),
		"a caller running as itself reads what it can read")
	require.NoError(t, os.Chmod(script, 0o644))

	require.NoError(t, os.Chmod(ws, 0o700))
	err = checkHostPaths(&Spec{SkillDir: skill, Workspace: ws}, rootCaller)
	require.ErrorIs(t, err, ErrWorkspace)
	require.ErrorContains(t, err, "chmod o+rx")
	require.NoError(t, checkHostPaths(&Spec{SkillDir: skill, Workspace: ws, WorkspaceWritable: true}, rootCaller),
		"a writable workspace is copied in by the host instead")
}
