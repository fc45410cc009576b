package backends_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/oci"
)

func TestNewOCI(t *testing.T) {
	state := t.TempDir()
	pol, err := policy.ParsePolicy("p.yaml", []byte("backend: oci\noci:\n  runtime: runc\n  warm: 2\n  state: "+state+"\n"))
	require.NoError(t, err)
	e, err := backends.New(sandboxrun.Config{Policy: pol, MaxConcurrent: 2})
	if err != nil {
		// Only root can run the backend; anyone else is told so.
		require.ErrorIs(t, err, oci.ErrNotRoot)
		return
	}
	r, ok := e.(*oci.Runner)
	require.True(t, ok, "got %T", e)
	require.Equal(t, sandboxrun.RunnerImage(), r.Image())
	require.DirExists(t, state+"/bundles")
	require.Equal(t, 2, r.PoolStats().Size, "the policy's warm pool")
	require.NoError(t, r.Close())

	t.Run("the runtime asked for agrees with oci.runtime", func(t *testing.T) {
		_, err := backends.New(sandboxrun.Config{Policy: pol, OCIRuntime: "runsc"})
		require.ErrorContains(t, err, `the runtime "runsc" was asked for, but oci.runtime (line 3) is "runc"`)
	})
}
