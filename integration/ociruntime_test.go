//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// WithOCIRuntime picks the engine runtime (runsc, kata, ...). This engine
// has only runc, so the test names it explicitly, and checks that a name the
// engine does not know is refused and leaves nothing behind.
func TestOCIRuntime(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		runtime string
		ok      bool
	}{{"runc", true}, {"no-such-runtime", false}} {
		t.Run(tt.runtime, func(t *testing.T) {
			d, err := docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(runner.Image()),
				docker.WithOCIRuntime(tt.runtime))
			require.NoError(t, err)
			defer d.Close()
			spec := pySpec(t, `print("ran")`)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := d.Run(ctx, spec)
			requireNoContainer(t, d, spec.RunID)
			if !tt.ok {
				require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
				require.ErrorContains(t, err, tt.runtime)
				return
			}
			require.NoError(t, err)
			require.True(t, res.Success, res.Stderr)
			require.Equal(t, "ran\n", res.Stdout)
		})
	}
}
