package docker

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

func reportOK(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) { report(out, frame.Report{}) }

// A container whose removal failed while the engine was unreachable is
// removed once it answers again, without another run asking.
func TestTeardownRetriedWhenTheEngineReturns(t *testing.T) {
	f := &fakeClient{removeAway: 4, init: reportOK} // two teardowns of two tries each
	d := newTestDocker(t, f)
	res, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.True(t, res.Success)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, d.WaitIdle(ctx), "the retries end once the removal succeeds")
	require.Zero(t, f.Live(), "the container is removed")
	require.Equal(t, 5, countCalls(f.Calls(), "remove"), "four failed tries, then the removal")
}

// Close stops the retries: what is left is a dead owner's for Reap.
func TestCloseStopsTheRetries(t *testing.T) {
	f := &fakeClient{removeAway: 1 << 30, init: reportOK}
	d := newTestDocker(t, f)
	_, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(2 * time.Minute):
		t.Fatal("Close did not return while the engine stayed away")
	}
	require.Equal(t, 1, f.Live(), "left for Reap")
}
