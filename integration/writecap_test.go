//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestCLIWorkspaceWriteCap: a run granted Write cannot write more than the
// policy's workspace_write cap: past it the script gets ENOSPC, the Result
// says so, and what it did write is handed back whole.
func TestCLIWorkspaceWriteCap(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "tb-cap", "allowed-tools: Write\n", map[string]string{"scripts/fill.py": `import errno, os
with open("/workspace/small.txt", "w") as f:
    f.write("kept\n")
try:
    with open("/workspace/big.bin", "wb") as f:
        for _ in range(64):
            f.write(b"x" * (1 << 20))
    print("no limit")
except OSError as e:
    print(errno.errorcode[e.errno])
os.remove("/workspace/big.bin")
os.remove("/workspace/gone.txt")
`})
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "gone.txt"), []byte("delete me"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "stays.txt"), []byte("untouched"), 0o644))
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("limits:\n  workspace_write: {max: 4Mi}\n"), 0o644))

	r := cli(t, ws, nil, "", "--skills", root, "--policy", pol, "run", "--json", "--workspace", ws, "tb-cap", "scripts/fill.py")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	var res sandbox.Result
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, "ENOSPC\n", res.Stdout)
	require.Equal(t, int64(4<<20), res.Limits.WorkspaceWriteBytes)
	b, err := os.ReadFile(filepath.Join(ws, "small.txt"))
	require.NoError(t, err)
	require.Equal(t, "kept\n", string(b))
	require.NoFileExists(t, filepath.Join(ws, "big.bin"))
	require.NoFileExists(t, filepath.Join(ws, "gone.txt"), "a deletion by the script is mirrored")
	require.FileExists(t, filepath.Join(ws, "stays.txt"))
	requireNoSkillContainers(t, "tb-cap")
	requireNoWorkspaceVolumes(t, res.ID)

	// Full at the end: the Result says so.
	full := cliSkill(t, "tb-full", "allowed-tools: Write\n", map[string]string{"scripts/fill.sh": "head -c 8M /dev/zero > /workspace/big.bin; echo status $?\n"})
	r = cli(t, ws, nil, "", "--skills", full, "--policy", pol, "run", "--json", "--workspace", ws, "tb-full", "scripts/fill.sh")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	res = sandbox.Result{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.True(t, res.WorkspaceFull, "workspace_full")
	require.Contains(t, res.Stderr, "No space left on device")
	requireNoWorkspaceVolumes(t, res.ID)
}

// TestCLIWorkspaceNothingLandsWhenKilled: files a script wrote before its
// sandbox was killed from outside never reach the caller's folder.
func TestCLIWorkspaceNothingLandsWhenKilled(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "tb-half", "allowed-tools: Write\n", map[string]string{"scripts/half.py": `import time
with open("/workspace/half.txt", "w") as f:
    f.write("half")
print("wrote", flush=True)
time.sleep(60)
`})
	ws := t.TempDir()
	cmd := exec.Command(sandboxrunBin(t), "--skills", root, "run", "--json", "--workspace", ws, "tb-half", "scripts/half.py")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	trackOwner(t, cmd.Process.Pid)
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var id string
	require.Eventually(t, func() bool {
		list, err := runner.Client().ContainerList(context.Background(), container.ListOptions{
			Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelSkill+"=tb-half")),
		})
		if err != nil || len(list) == 0 {
			return false
		}
		id = list[0].ID
		return true
	}, 30*time.Second, 50*time.Millisecond)
	time.Sleep(time.Second)
	require.NoError(t, runner.Client().ContainerKill(context.Background(), id, "KILL"))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, errb.String())
	require.Equal(t, 125, ee.ExitCode(), errb.String())
	require.NoFileExists(t, filepath.Join(ws, "half.txt"))
	entries, err := os.ReadDir(ws)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing half-written lands")
	requireNoSkillContainers(t, "tb-half")
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	requireNoWorkspaceVolumes(t, res.ID)
}

func requireNoWorkspaceVolumes(t *testing.T, runID string) {
	t.Helper()
	out, err := exec.Command("docker", "volume", "ls", "--quiet", "--filter", "label="+sandbox.LabelRunID+"="+runID).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Empty(t, bytes.TrimSpace(out), "workspace volume of run %s left behind", runID)
}
