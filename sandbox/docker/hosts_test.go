package docker

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestHostsFile(t *testing.T) {
	dir := t.TempDir()
	h := &hostsFile{dir: func() (string, error) { return dir, nil }}
	want := filepath.Join(dir, hostsFileName)

	// Written once, world-readable (the sandbox user reads it through the
	// mount), with exactly the sandbox's entries.
	path, err := h.ensure()
	require.NoError(t, err)
	require.Equal(t, want, path)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, sandbox.Hosts, string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	require.Contains(t, string(got), "127.0.0.1\tlocalhost\n")
	require.Contains(t, string(got), "::1\tlocalhost ip6-localhost ip6-loopback\n")
	require.Contains(t, string(got), "\t"+sandbox.Hostname+"\n")

	// Removed behind the process's back (a temp cleaner): written again.
	require.NoError(t, os.Remove(path))
	path, err = h.ensure()
	require.NoError(t, err)
	require.FileExists(t, path)

	// Another content found on first use (an older sandboxrun's) is
	// replaced; nothing else is left in the folder.
	require.NoError(t, os.WriteFile(want, []byte("10.0.0.1 evil\n"), 0o644))
	fresh := &hostsFile{dir: h.dir}
	_, err = fresh.ensure()
	require.NoError(t, err)
	got, err = os.ReadFile(want)
	require.NoError(t, err)
	require.Equal(t, sandbox.Hosts, string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")

	// Concurrent runs and processes get a whole file.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := (&hostsFile{dir: h.dir}).ensure()
			require.NoError(t, err)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, sandbox.Hosts, string(b))
		}()
	}
	wg.Wait()
}

func TestHostsFileFolderRefused(t *testing.T) {
	// The private folder is checked (userdir): one another user could
	// write into would let them choose the sandbox's /etc/hosts.
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dir := filepath.Join(xdg, "sandboxrun-hosts")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := newHostsFile().ensure()
	require.ErrorContains(t, err, "closed to others")

	require.NoError(t, os.Remove(dir))
	path, err := newHostsFile().ensure()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, hostsFileName), path)
}
