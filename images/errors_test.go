package images

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBootstrapErrorMatchesSentinelAndCause(t *testing.T) {
	err := error(&BootstrapError{Step: "running debootstrap", LogTail: "E: Couldn't download packages: libc6", Err: context.Canceled})
	require.ErrorIs(t, err, ErrBootstrap)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.Is(err, ErrNoDocker))
	require.Contains(t, err.Error(), "running debootstrap")
	require.Contains(t, err.Error(), "E: Couldn't download packages: libc6")
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\n\nc\n", 2, "b | c"},
		{"only", 5, "only"},
		{"\n\n", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Equal(t, tt.want, lastLines(tt.in, tt.n))
		})
	}
}
