package cgroupfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
}

func TestReadV2(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"cpu.stat":       "usage_usec 1500\nuser_usec 1000\n",
		"memory.current": "10000\n",
		"memory.stat":    "anon 6000\ninactive_file 4000\n",
		"pids.current":   "3\n",
	})
	f, err := Dirs{V2: true, CPU: dir, Memory: dir, Pids: dir}.Read()
	require.NoError(t, err)
	require.Equal(t, Figures{CPU: 1500 * time.Microsecond, MemoryBytes: 6000, Pids: 3}, f)
}

func TestReadV1(t *testing.T) {
	cpu, mem, pids := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, cpu, map[string]string{"cpuacct.usage": "42\n"})
	write(t, mem, map[string]string{"memory.usage_in_bytes": "9000\n", "memory.stat": "cache 1\ntotal_inactive_file 1000\n"})
	write(t, pids, map[string]string{"pids.current": "7\n"})
	f, err := Dirs{CPU: cpu, Memory: mem, Pids: pids}.Read()
	require.NoError(t, err)
	require.Equal(t, Figures{CPU: 42, MemoryBytes: 8000, Pids: 7}, f)
}

func TestReadRefusesWhatIsMissingOrBroken(t *testing.T) {
	dir := t.TempDir()
	// No pids controller: still a reading.
	write(t, dir, map[string]string{"cpu.stat": "usage_usec 1\n", "memory.current": "5\n"})
	f, err := Dirs{V2: true, CPU: dir, Memory: dir, Pids: dir}.Read()
	require.NoError(t, err)
	require.Equal(t, int64(0), f.Pids)
	require.Equal(t, int64(5), f.MemoryBytes, "no memory.stat: nothing taken off")

	write(t, dir, map[string]string{"cpu.stat": "user_usec 1\n"})
	_, err = Dirs{V2: true, CPU: dir, Memory: dir, Pids: dir}.Read()
	require.ErrorContains(t, err, "no usage_usec")

	write(t, dir, map[string]string{"cpu.stat": "usage_usec x\n"})
	_, err = Dirs{V2: true, CPU: dir, Memory: dir, Pids: dir}.Read()
	require.ErrorContains(t, err, "usage_usec")

	_, err = Dirs{CPU: filepath.Join(dir, "absent"), Memory: dir, Pids: dir}.Read()
	require.ErrorIs(t, err, os.ErrNotExist)
}
