//go:build kube

package kube

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/client"
	"github.com/sandboxrun/sandboxrun/internal/testserve"
)

// A session on a serve whose policy says backend: kubernetes works as on
// Docker, with the sessions root on the server's own disk (no claim, no
// hostPath for it): uploads reach the run's Pod, what the run writes comes
// back to the session and is listed in the Result, writes past the
// session's quota fail inside, and a session at its quota still runs.
func TestSessionsOnKubernetes(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	skills, err := filepath.Abs("../../skills")
	require.NoError(t, err)
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(fmt.Sprintf(`backend: kubernetes
kubernetes:
  kubeconfig: %s
  namespace: %s
network: none
sessions:
  root: %s
  quota: 8Mi
`, os.Getenv("SANDBOXRUN_KUBECONFIG"), runner.Namespace(), filepath.Join(dir, "sessions"))), 0o600))
	bin := filepath.Join(t.TempDir(), "sandboxrun")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/sandboxrun").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	srv, err := testserve.Start(testserve.Options{Bin: bin,
		Args: []string{"--policy", pol, "--skills", skills, "serve", "--warm-pool", "0"}, Probe: "/healthz", Wait: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() {
		srv.Stop()
		if t.Failed() {
			t.Logf("serve's log:\n%s", srv.Log)
		}
	})
	c, err := client.New(srv.URL)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	s, err := c.CreateSession(ctx, 0)
	require.NoError(t, err)
	_, err = c.PutFile(ctx, s.ID, "in/data.csv", strings.NewReader("a,b\n1,2\n"))
	require.NoError(t, err)
	_, err = c.PutFile(ctx, s.ID, "old.txt", strings.NewReader("remove me"))
	require.NoError(t, err)

	res, err := c.Python(ctx, "hello", client.PythonRequest{Params: client.Params{Session: s.ID}, Code: `import os
rows = open("in/data.csv").read().splitlines()
os.makedirs("out", exist_ok=True)
open("out/count.txt", "w").write(str(len(rows)))
os.remove("old.txt")
print(len(rows))
`})
	require.NoError(t, err)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.Equal(t, "2\n", res.Stdout)
	changes := map[string]string{}
	for _, f := range res.Files {
		changes[f.Path] = f.Change
	}
	require.Equal(t, map[string]string{"out/count.txt": "created", "old.txt": "deleted"}, changes)
	rc, err := c.GetFile(ctx, s.ID, "out/count.txt")
	require.NoError(t, err)
	b, err := io.ReadAll(rc)
	rc.Close()
	require.NoError(t, err)
	require.Equal(t, "2", string(b))

	// Past the quota (files and writes together): ENOSPC inside, the
	// Result says so, and what the run wrote within it is kept.
	res, err = c.Python(ctx, "hello", client.PythonRequest{Params: client.Params{Session: s.ID}, Code: `import errno
try:
    with open("big.bin", "wb") as f:
        for _ in range(16):
            f.write(b"\0" * (1 << 20))
    print("written")
except OSError as e:
    print(errno.errorcode[e.errno])
`})
	require.NoError(t, err)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.Equal(t, "ENOSPC\n", res.Stdout)
	require.True(t, res.WorkspaceFull)

	// The session is near its quota: a run that only reads still runs.
	res, err = c.Python(ctx, "hello", client.PythonRequest{Params: client.Params{Session: s.ID}, Code: `print(open("out/count.txt").read())`})
	require.NoError(t, err)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.Equal(t, "2\n", res.Stdout)
	requirePodGone(t, res.ID)
}
