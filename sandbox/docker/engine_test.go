package docker

import (
	"context"
	"io"
	"testing"

	"github.com/docker/docker/api/types/system"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestRunRefusesWhatTheHostCannotHonour(t *testing.T) {
	host := system.Info{NCPU: 2, MemTotal: 4 << 30, Runtimes: map[string]system.RuntimeWithStatus{"runc": {}, "io.containerd.runc.v2": {}}}
	tests := []struct {
		name  string
		edit  func(*sandbox.Spec)
		opts  []Option
		wants []string
	}{
		{"memory", func(s *sandbox.Spec) { s.Limits.MemoryBytes = 20 << 30 }, nil, []string{"memory 20GiB (max_memory / --memory)", "host's 4GiB"}},
		{"cpus", func(s *sandbox.Spec) { s.Limits.CPUs = 3 }, nil, []string{"cpus 3 (max_cpus / --cpus)", "host's 2 CPUs", "at most 2"}},
		{"runtime", func(*sandbox.Spec) {}, []Option{WithOCIRuntime("runsc")}, []string{`no runtime "runsc"`, "io.containerd.runc.v2, runc"}},
		{"all at once", func(s *sandbox.Spec) { s.Limits.MemoryBytes, s.Limits.CPUs = 8<<30, 2.5 }, []Option{WithOCIRuntime("kata")}, []string{"memory", "cpus", "kata"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{info: host}
			d := newTestDocker(t, f, tt.opts...)
			spec := testSpec(t)
			tt.edit(&spec)
			checked := d.CheckSpec(context.Background(), spec)
			res, err := d.Run(context.Background(), spec)
			require.Equal(t, checked, err, "an explanation's check is the run's")
			require.Nil(t, res)
			require.ErrorIs(t, err, ErrBeyondHost)
			require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
			for _, w := range tt.wants {
				require.ErrorContains(t, err, w)
			}
			require.Empty(t, f.Calls(), "nothing is created")
		})
	}
	// At the host's size exactly, it runs.
	f := &fakeClient{info: host, init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) { report(out, frame.Report{}) }}
	d := newTestDocker(t, f)
	spec := testSpec(t)
	spec.Limits.MemoryBytes, spec.Limits.CPUs = 4<<30, 2
	require.NoError(t, d.CheckSpec(context.Background(), spec))
	_, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
}
