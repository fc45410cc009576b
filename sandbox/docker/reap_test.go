package docker

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

func summary(id string, age time.Duration, labels map[string]string) container.Summary {
	now := time.Date(2026, 5, 7, 12, 0, 0, 0, time.UTC)
	l := map[string]string{
		sandbox.LabelManaged: "true",
		sandbox.LabelRunID:   "run-" + id,
		sandbox.LabelCreated: now.Add(-age).Format(time.RFC3339),
	}
	for k, v := range labels {
		if v == "" {
			delete(l, k)
			continue
		}
		l[k] = v
	}
	return container.Summary{ID: id, Names: []string{"/sandboxrun-" + id}, Labels: l, Created: now.Add(-age).Unix()}
}

func TestReapCandidate(t *testing.T) {
	now := time.Date(2026, 5, 7, 12, 0, 0, 0, time.UTC)
	alive := func(pid int, start uint64) bool { return pid == 100 && (start == 0 || start == 555) }
	owned := func(pid, start, host string) map[string]string {
		return map[string]string{sandbox.LabelOwnerPID: pid, sandbox.LabelOwnerStart: start, sandbox.LabelOwnerHost: host}
	}
	tests := []struct {
		name   string
		s      container.Summary
		opts   sandbox.ReapOptions
		want   bool
		reason string
	}{
		{"live owner", summary("a", time.Minute, owned("100", "555", "here")), sandbox.ReapOptions{Host: "here"}, false, ""},
		{"dead owner", summary("b", time.Minute, owned("200", "1", "here")), sandbox.ReapOptions{Host: "here"}, true, "owner process 200 on here is gone"},
		{"pid reused by another process", summary("c", time.Minute, owned("100", "999", "here")), sandbox.ReapOptions{Host: "here"}, true, "is gone"},
		{"live owner without start time", summary("d", time.Minute, owned("100", "", "here")), sandbox.ReapOptions{Host: "here"}, false, ""},
		{"other host, young", summary("e", time.Minute, owned("200", "1", "elsewhere")), sandbox.ReapOptions{Host: "here", Grace: time.Hour}, false, ""},
		{"other host, old", summary("f", 2*time.Hour, owned("200", "1", "elsewhere")), sandbox.ReapOptions{Host: "here", Grace: time.Hour}, true, "older than 1h0m0s"},
		{"old but live owner, by age", summary("g", 2*time.Hour, owned("100", "555", "here")), sandbox.ReapOptions{Host: "here", Grace: time.Hour}, true, "older than"},
		{"only dead owners ignores age", summary("h", 2*time.Hour, owned("100", "555", "here")), sandbox.ReapOptions{Host: "here", Grace: time.Hour, OnlyDeadOwners: true}, false, ""},
		{"only dead owners, other host", summary("i", 2*time.Hour, owned("200", "1", "elsewhere")), sandbox.ReapOptions{Host: "here", OnlyDeadOwners: true}, false, ""},
		{"no grace: never by age", summary("j", 48*time.Hour, owned("100", "555", "here")), sandbox.ReapOptions{Host: "here"}, false, ""},
		{"no owner label, old", summary("k", 2*time.Hour, nil), sandbox.ReapOptions{Host: "here", Grace: time.Hour}, true, "older than"},
		{"not managed", summary("l", 2*time.Hour, map[string]string{sandbox.LabelManaged: "false"}), sandbox.ReapOptions{Host: "here", Grace: time.Hour}, false, ""},
		{"created label missing: engine time", summary("m", 2*time.Hour, map[string]string{sandbox.LabelCreated: ""}), sandbox.ReapOptions{Host: "here", Grace: time.Hour}, true, "older than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := reapCandidate(tt.s, now, tt.opts, alive)
			require.Equal(t, tt.want, ok)
			if tt.want {
				require.Contains(t, r.Reason, tt.reason)
				require.Equal(t, tt.s.ID, r.ID)
				require.Equal(t, "sandboxrun-"+tt.s.ID, r.Name)
				require.Equal(t, tt.s.Labels[sandbox.LabelRunID], r.RunID)
			}
		})
	}
}

type reapFake struct {
	fakeClient
	list    []container.Summary
	opts    container.ListOptions
	vols    []*volume.Volume
	volOpts volume.ListOptions
	inUse   map[string]bool // volumes the engine refuses to remove (mounted)
}

func (f *reapFake) VolumeList(_ context.Context, opts volume.ListOptions) (volume.ListResponse, error) {
	f.volOpts = opts
	return volume.ListResponse{Volumes: f.vols}, nil
}

func (f *reapFake) VolumeRemove(ctx context.Context, name string, force bool) error {
	if f.inUse[name] {
		return cerrdefs.ErrConflict
	}
	return f.fakeClient.VolumeRemove(ctx, name, force)
}

func (f *reapFake) ContainerList(_ context.Context, opts container.ListOptions) ([]container.Summary, error) {
	f.opts = opts
	return f.list, nil
}

func TestReap(t *testing.T) {
	dead := map[string]string{sandbox.LabelOwnerPID: strconv.Itoa(1 << 30), sandbox.LabelOwnerHost: "here"}
	me := map[string]string{sandbox.LabelOwnerPID: strconv.Itoa(os.Getpid()), sandbox.LabelOwnerHost: "here"}
	newFake := func() *reapFake {
		return &reapFake{list: []container.Summary{
			summary("dead1", time.Minute, dead),
			summary("mine", time.Minute, me),
			summary("dead2", time.Minute, dead),
		}}
	}

	t.Run("removes dead owners' containers", func(t *testing.T) {
		f := newFake()
		f.removeErr = errNotFound // one vanished meanwhile: still fine
		got, err := Reap(context.Background(), f, sandbox.ReapOptions{Host: "here", OnlyDeadOwners: true})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, []string{"dead1", "dead2"}, f.Removed())
		require.Equal(t, []string{"sandboxrun-ws-run-dead1", "sandboxrun-ws-run-dead2"}, f.volumesRm,
			"a killed owner's workspace volumes go with its containers")
		require.True(t, got[0].Removed)
		require.Equal(t, []string{sandbox.LabelManaged + "=true"}, f.opts.Filters.Get("label"))
		require.True(t, f.opts.All, "stopped containers are listed too")
	})
	t.Run("dry run removes nothing", func(t *testing.T) {
		f := newFake()
		got, err := Reap(context.Background(), f, sandbox.ReapOptions{Host: "here", DryRun: true})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.False(t, got[0].Removed)
		require.Empty(t, f.Calls())
	})
	t.Run("removes a dead owner's workspace volume its container left", func(t *testing.T) {
		vol := func(name, runID string, owner map[string]string) *volume.Volume {
			l := map[string]string{sandbox.LabelManaged: "true", sandbox.LabelRunID: runID}
			for k, v := range owner {
				l[k] = v
			}
			return &volume.Volume{Name: name, Labels: l}
		}
		f := &reapFake{vols: []*volume.Volume{
			vol("sandboxrun-ws-r1", "r1", dead),       // its owner was killed after removing the container
			vol("sandboxrun-ws-r2", "r2", me),         // a live owner's
			vol("sandboxrun-ws-r3", "r3", dead),       // still mounted
			vol("sandboxrun-usrdata-abc", "r4", dead), // not a workspace volume
			vol("sandboxrun-ws-r5", "r5", nil),        // names no owner: cannot be judged
			vol("sandboxrun-ws-other", "r6", dead),    // name and run id disagree
		}, inUse: map[string]bool{"sandboxrun-ws-r3": true}}
		got, err := Reap(context.Background(), f, sandbox.ReapOptions{Host: "here", OnlyDeadOwners: true})
		require.NoError(t, err)
		require.Equal(t, []string{"sandboxrun-ws-r1"}, f.volumesRm)
		require.Len(t, got, 1)
		require.Equal(t, "r1", got[0].RunID)
		require.True(t, got[0].Removed)
		require.Equal(t, []string{sandbox.LabelManaged + "=true"}, f.volOpts.Filters.Get("label"))

		f.volumesRm = nil
		got, err = Reap(context.Background(), f, sandbox.ReapOptions{Host: "here", DryRun: true})
		require.NoError(t, err)
		require.Empty(t, f.volumesRm, "a dry run removes nothing")
		require.Len(t, got, 2, "a dry run lists the mounted one too: it cannot ask the engine")
	})
	t.Run("failures are joined", func(t *testing.T) {
		f := newFake()
		f.removeErr = errTest
		got, err := Reap(context.Background(), f, sandbox.ReapOptions{Host: "here"})
		require.ErrorIs(t, err, errTest)
		require.Len(t, got, 2)
		require.False(t, got[1].Removed)
	})
}
