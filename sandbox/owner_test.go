package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProcessAlive(t *testing.T) {
	proc := t.TempDir()
	write := func(pid int, stat string) {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
	}
	// A command name with spaces and parentheses must not shift the fields.
	write(42, "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 777 1000 10 18446744073709551615")
	start, err := procStartTime(proc, 42)
	require.NoError(t, err)
	require.Equal(t, uint64(777), start)

	require.True(t, processAlive(proc, 42, 777))
	require.True(t, processAlive(proc, 42, 0), "unknown start time: existence decides")
	require.False(t, processAlive(proc, 42, 778), "same pid, another process")
	require.False(t, processAlive(proc, 43, 0))

	write(44, "garbage")
	require.True(t, processAlive(proc, 44, 1), "unreadable but present: never reaped")
}

func TestOwnerOfThisProcess(t *testing.T) {
	o := OwnerOf(os.Getpid(), "h")
	require.NotZero(t, o.Start)
	require.True(t, processAlive("/proc", o.PID, o.Start))
}
