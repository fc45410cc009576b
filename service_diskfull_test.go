package sandboxrun

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestHandBackFull(t *testing.T) {
	s := &Service{log: slog.New(slog.DiscardHandler)}
	full := fmt.Errorf("hand back: %w", &fs.PathError{Op: "write", Path: "/var/lib/sessions/ws/x/.sandboxrun-1", Err: syscall.ENOSPC})
	res, err := s.handBackFull(&sandbox.Result{Started: true, Success: true}, full)
	require.NoError(t, err)
	require.True(t, res.WorkspaceFull)
	require.False(t, res.Success)
	require.Contains(t, res.Error, "disk is full")
	require.NotContains(t, res.Error, "/var/lib")

	other := errors.New("boom")
	res, err = s.handBackFull(&sandbox.Result{Started: true}, other)
	require.ErrorIs(t, err, other)
	require.False(t, res.WorkspaceFull)
	_, err = s.handBackFull(nil, full)
	require.ErrorIs(t, err, syscall.ENOSPC, "a run that never started is not a hand-back")
}
