package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIdentity(t *testing.T) {
	root := IdentityFor(0, 0)
	require.Equal(t, "65532:65532", root.User())
	require.True(t, root.foreign())
	user := IdentityFor(1000, 1001)
	require.Equal(t, "1000:1001", user.User())
	require.False(t, user.foreign())
	require.Equal(t, "1000:65532", IdentityFor(1000, 0).User(), "never group root either")
}
