package testserve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A server's Log keeps the tail of what was written.
func TestLogKeepsTheTail(t *testing.T) {
	l := newLog()
	line := strings.Repeat("x", 99) + "\n"
	for range 2 * maxLog / len(line) {
		_, err := l.Write([]byte(line))
		require.NoError(t, err)
	}
	_, err := l.Write([]byte("the end\n"))
	require.NoError(t, err)
	got := l.String()
	require.LessOrEqual(t, len(got), maxLog)
	require.True(t, strings.HasSuffix(got, "the end\n"))
}

// Start fails, naming the problem, without a binary, and with one that
// ends before it answers, with what it wrote.
func TestStartFails(t *testing.T) {
	_, err := Start(Options{})
	require.ErrorContains(t, err, "no binary")
	_, err = Start(Options{Bin: "/bin/sh", Args: []string{"-c", "echo no engine here >&2; exit 3"}})
	require.ErrorContains(t, err, "ended before /readyz answered")
	require.ErrorContains(t, err, "no engine here")
}

// Start waits for the probe to answer 200 on the address it picked, and
// Stop ends the process. A Python file server stands in for serve: it
// answers /readyz once the file is there.
func TestStartWaitsForTheProbe(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "readyz"), []byte("ok"), 0o644))
	srv, err := Start(Options{Bin: "/bin/sh", Args: []string{"-c",
		`exec python3 -m http.server --bind 127.0.0.1 --directory "$0" "${2##*:}"`, dir}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	resp, err := srv.Client().Get(srv.BaseURL() + "/readyz")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, 200, resp.StatusCode)
	srv.Stop()
	select {
	case <-srv.Done():
	default:
		t.Fatal("Stop returned before the process ended")
	}
}
