//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/volume"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestReapRemovesAKilledOwnersWorkspaceVolume: an owner killed after it
// removed a run's container but before it removed the run's workspace
// volume leaves a volume no container names; the reaper finds it by its
// owner labels. A live owner's volume stays.
func TestReapRemovesAKilledOwnersWorkspaceVolume(t *testing.T) {
	// Serial (see main_test.go): it reaps.
	ctx := context.Background()
	host, err := os.Hostname()
	require.NoError(t, err)
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	mkvol := func(runID string, pid int) string {
		name := "sandboxrun-ws-" + runID
		_, err := runner.Client().VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: map[string]string{
			sandbox.LabelManaged: "true", sandbox.LabelRunID: runID,
			sandbox.LabelOwnerPID: strconv.Itoa(pid), sandbox.LabelOwnerHost: host,
		}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = runner.Client().VolumeRemove(context.WithoutCancel(ctx), name, true) })
		return name
	}
	dead := mkvol("itreap"+strconv.Itoa(os.Getpid())+"d", gone.Process.Pid)
	live := mkvol("itreap"+strconv.Itoa(os.Getpid())+"l", os.Getpid())

	reaped, err := runner.Reap(ctx, sandbox.ReapOptions{OnlyDeadOwners: true})
	require.NoError(t, err)
	var names []string
	for _, r := range reaped {
		names = append(names, r.Name)
	}
	require.Contains(t, names, dead)
	require.NotContains(t, names, live)
	_, err = runner.Client().VolumeInspect(ctx, dead)
	require.True(t, cerrdefs.IsNotFound(err), "the dead owner's volume is removed: %v", err)
	_, err = runner.Client().VolumeInspect(ctx, live)
	require.NoError(t, err, "the live owner's volume stays")
}
