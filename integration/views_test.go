//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// viewProbe prints /workspace's file system type, the size of big, and
// appends to it; then it adds a file.
const viewProbe = `
import os
print(os.popen("stat -f -c %T /workspace").read().strip())
print(os.path.getsize("big"))
print(os.popen("./hello.sh").read().strip())
with open("big", "r+b") as f:
    f.seek(0)
    f.write(b"changed")
open("new.txt", "w").write("new")
`

// viewWorkspace is a workspace with a large sparse file (as the store
// leaves files: the caller's, one owner) and a hard link to it, as a
// snapshot holds one.
func viewWorkspace(t *testing.T) (ws, snapshotLink string) {
	t.Helper()
	ws = t.TempDir()
	big := filepath.Join(ws, "big")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(512<<20))
	require.NoError(t, f.Close())
	require.NoError(t, os.WriteFile(filepath.Join(ws, "hello.sh"), []byte("#!/bin/sh\necho hello\n"), 0o755))
	snapshotLink = filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.Link(big, snapshotLink))
	return ws, snapshotLink
}

// TestWorkspaceIsAView: a writable workspace the caller's user holds
// entirely is the host's copy-on-write view, not a copy: the script sees a
// 512 MiB file at once and may update it in place; the session gets the
// change, and the file a snapshot shares with it is never written.
func TestWorkspaceIsAView(t *testing.T) {
	t.Parallel()
	ws, link := viewWorkspace(t)
	spec := pySpec(t, viewProbe)
	spec.Limits.WorkspaceWriteBytes = 1 << 30
	writable(t, &spec, ws)
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, "overlayfs\n536870912\nhello\n", res.Stdout, "the view shows the files as they are, programs runnable")

	b := make([]byte, 7)
	f, err := os.Open(filepath.Join(ws, "big"))
	require.NoError(t, err)
	_, err = f.Read(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, "changed", string(b), "the change reached the workspace")
	got, err := os.ReadFile(filepath.Join(ws, "new.txt"))
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	lf, err := os.Open(link)
	require.NoError(t, err)
	_, err = lf.Read(b)
	require.NoError(t, err)
	require.NoError(t, lf.Close())
	require.Equal(t, make([]byte, 7), b, "a file linked to the workspace's was not written in place")
	require.GreaterOrEqual(t, res.WorkspaceUsedBytes, int64(512<<20), "the workspace's files count as used")
}

// TestFullViewStillRuns: a workspace whose files fill its write cap still
// runs: reads work, writes fail with ENOSPC and the Result says so.
func TestFullViewStillRuns(t *testing.T) {
	t.Parallel()
	ws, _ := viewWorkspace(t)
	spec := pySpec(t, `
import os
print(os.popen("stat -f -c %T /workspace").read().strip())
print(os.path.getsize("big"))
try:
    open("more", "wb").write(b"x" * (1 << 20))
except OSError as e:
    print(e.strerror)
`)
	spec.Limits.WorkspaceWriteBytes = 256 << 20 // less than the files
	writable(t, &spec, ws)
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, "overlayfs\n536870912\nNo space left on device\n", res.Stdout)
	require.True(t, res.WorkspaceFull)
}

// TestMixedOwnersAreCopied: a workspace with entries of another owner is
// copied, as a view would show that owner's permissions instead of the
// sandbox user's.
func TestMixedOwnersAreCopied(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	p := filepath.Join(ws, "theirs.txt")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
	require.NoError(t, os.Chown(p, 1234, 1234))
	spec := shSpec(t, `stat -f -c %T /workspace; echo more >> theirs.txt && cat theirs.txt`)
	writable(t, &spec, ws)
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, "tmpfs\nxmore\n", res.Stdout)
}

// astray binds another, empty folder where a run's view slot should be
// bound, as an engine in another mount namespace would see the slot: the
// view mounted on the host does not reach the container.
type astray struct {
	*client.Client
	elsewhere string
}

func (a astray) ContainerCreate(ctx context.Context, cfg *container.Config, hc *container.HostConfig,
	nc *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error) {
	for i, m := range hc.Mounts {
		if m.Target == sandbox.WorkspaceDir && m.Type == mount.TypeBind && m.BindOptions != nil &&
			m.BindOptions.Propagation == mount.PropagationRSlave {
			hc.Mounts[i].Source = a.elsewhere
			hc.Mounts[i].BindOptions.Propagation = mount.PropagationRPrivate
		}
	}
	return a.Client.ContainerCreate(ctx, cfg, hc, nc, p, name)
}

// TestViewThatDoesNotArriveIsCopied: when the view mounted on the host does
// not reach the container, sandbox-init refuses the job before the script
// starts, and the runner turns views off and runs it again with a copy:
// the script sees its files, and the next runs are copied.
func TestViewThatDoesNotArriveIsCopied(t *testing.T) {
	t.Parallel()
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	dir := t.TempDir()
	d, err := docker.New(docker.WithClient(astray{c, t.TempDir()}), docker.WithVersion(sandboxrun.Version),
		docker.WithDefaultImage(runner.Image()), docker.WithViewDir(dir), warnings())
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		left, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, left, "Close removed the runner's views")
	})
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "f.txt"), []byte("files\n"), 0o644))
	for range 2 {
		spec := shSpec(t, `stat -f -c %T /workspace; cat f.txt; echo out > out.txt`)
		writable(t, &spec, ws)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := d.Run(ctx, spec)
		cancel()
		require.NoError(t, err)
		require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
		require.Equal(t, "tmpfs\nfiles\n", res.Stdout, "copied, not an empty folder")
		requireNoContainer(t, d, res.ID)
	}
	got, err := os.ReadFile(filepath.Join(ws, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "out\n", string(got))
}
