package caller_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/caller"
)

func TestOwner(t *testing.T) {
	require.Empty(t, caller.Owner(context.Background()), "nothing said: no owner")
	ctx := caller.WithOwner(context.Background(), "abc")
	require.Equal(t, "abc", caller.Owner(ctx))
	require.Equal(t, "def", caller.Owner(caller.WithOwner(ctx, "def")), "the innermost wins")
}

func TestLabel(t *testing.T) {
	require.Empty(t, caller.Label(context.Background()))
	ctx := caller.WithLabel(caller.WithOwner(context.Background(), "abc"), "team-a")
	require.Equal(t, "team-a", caller.Label(ctx))
	require.Equal(t, "abc", caller.Owner(ctx), "the label leaves the owner alone")
}

func TestOtherReplicas(t *testing.T) {
	require.Nil(t, caller.OtherReplicas(context.Background()), "nothing said: one server")
	ctx := caller.WithOtherReplicas(caller.WithLabel(context.Background(), "team-a"), func() int64 { return 42 })
	require.Equal(t, int64(42), caller.OtherReplicas(ctx)())
	require.Equal(t, "team-a", caller.Label(ctx), "the peers' figure leaves the label alone")
}
