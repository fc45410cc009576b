//go:build integration

package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestWarmWritableWorkspace: runs with a writable workspace (a session's)
// take warm containers too, each with a fresh volume of its own: the
// second run sees the first run's files through the folder, not through a
// volume left over, and no volume outlives its container.
func TestWarmWritableWorkspace(t *testing.T) {
	d := newWarmRunner(t)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "in.txt"), []byte("from the host\n"), 0o644))
	spec := pySpec(t, `
import json, os, sys
step = sys.argv[1]
seen = sorted(os.listdir("."))
if step == "one":
    open("made.txt", "w").write("run one\n")
else:
    open("made.txt", "a").write("run two\n")
    os.remove("in.txt")
print(json.dumps({"seen": seen, "container": [l.split()[3] for l in open("/proc/self/mountinfo") if l.split()[4] == "/etc/hostname"]}))
`)
	writable(t, &spec, ws)
	spec.Limits.WorkspaceWriteBytes = 64 << 20
	run := func(step string) (*sandbox.Result, map[string]any) {
		s := spec
		s.Argv = append(append([]string(nil), spec.Argv...), step)
		res := runWarm(t, d, s)
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		var out map[string]any
		require.NoError(t, json.Unmarshal(res.Output, &out), res.Stdout)
		return res, out
	}
	before := d.PoolStats()
	res1, out1 := run("one")
	require.Equal(t, []any{"in.txt"}, out1["seen"])
	sum := sha256.Sum256([]byte("run one\n"))
	require.Equal(t, []sandbox.FileChange{{Path: "made.txt", Change: sandbox.FileCreated, Size: 8, SHA256: hex.EncodeToString(sum[:])}}, res1.Files)

	res2, out2 := run("two")
	after := d.PoolStats()
	require.Greater(t, after.Hits, before.Hits, "the second run took a warm container")
	require.Equal(t, []any{"in.txt", "made.txt"}, out2["seen"], "the folder, not a leftover volume")
	require.NotEqual(t, out1["container"], out2["container"])
	changes := map[string]string{}
	for _, f := range res2.Files {
		changes[f.Path] = f.Change
	}
	require.Equal(t, map[string]string{"made.txt": sandbox.FileModified, "in.txt": sandbox.FileDeleted}, changes)
	b, err := os.ReadFile(filepath.Join(ws, "made.txt"))
	require.NoError(t, err)
	require.Equal(t, "run one\nrun two\n", string(b))
	require.NoFileExists(t, filepath.Join(ws, "in.txt"))

	// Each run's volume went with its container; only the idle warm
	// container's own is left, and Close removes it.
	vols := func() []string {
		list, err := d.Client().VolumeList(context.Background(), volume.ListOptions{Filters: filters.NewArgs(filters.Arg("name", "sandboxrun-ws-"))})
		require.NoError(t, err)
		var names []string
		for _, v := range list.Volumes {
			if strings.Contains(v.Name, res1.ID) || strings.Contains(v.Name, res2.ID) {
				names = append(names, v.Name)
			}
		}
		return names
	}
	require.Eventually(t, func() bool { return len(vols()) == 0 }, 30*time.Second, 50*time.Millisecond, "the runs' volumes are removed")
}
