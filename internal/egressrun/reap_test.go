package egressrun

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestReapEgressFoldersRemovesOnlyDeadOwners(t *testing.T) {
	dir := t.TempDir()
	host, err := os.Hostname()
	require.NoError(t, err)
	ended := exec.Command("true")
	require.NoError(t, ended.Run())
	dead := map[string]string{sandbox.LabelOwnerPID: strconv.Itoa(ended.ProcessState.Pid()), sandbox.LabelOwnerHost: host, sandbox.LabelOwnerStart: "1"}
	elsewhere := map[string]string{sandbox.LabelOwnerPID: dead[sandbox.LabelOwnerPID], sandbox.LabelOwnerHost: host + "-other"}
	folder := func(name string, owner map[string]string) string {
		p := filepath.Join(dir, "sandboxrun-egress-"+name)
		require.NoError(t, os.Mkdir(p, 0o700))
		if owner != nil {
			b, err := json.Marshal(owner)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(p, "owner.json"), b, 0o600))
		}
		return p
	}
	deadDir := folder("dead", dead)
	kept := []string{folder("live", sandbox.OwnerLabels()), folder("elsewhere", elsewhere), folder("unknown", nil)}

	got, err := ReapFolders(dir, true)
	require.NoError(t, err)
	require.Equal(t, []string{deadDir}, got)
	require.DirExists(t, deadDir, "a dry run removes nothing")

	got, err = ReapFolders(dir, false)
	require.NoError(t, err)
	require.Equal(t, []string{deadDir}, got)
	require.NoDirExists(t, deadDir)
	for _, k := range kept {
		require.DirExists(t, k)
	}
}
