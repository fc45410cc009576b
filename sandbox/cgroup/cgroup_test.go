package cgroup_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/cgroup"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestRead(t *testing.T) {
	for name, c := range map[string]struct {
		files map[string]string
		rels  []string
	}{
		"version 1": {rels: []string{"elsewhere/x", "docker/abc"}, files: map[string]string{
			"cpuacct/docker/abc/cpuacct.usage":        "2500000000\n",
			"memory/docker/abc/memory.usage_in_bytes": "10485760\n",
			"memory/docker/abc/memory.stat":           "cache 100\ninactive_file 9\ntotal_inactive_file 2097152\n",
			"pids/docker/abc/pids.current":            "7\n",
		}},
		"version 2": {rels: []string{"sandboxrun/run1"}, files: map[string]string{
			"cgroup.controllers":             "cpu memory pids\n",
			"sandboxrun/run1/cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\n",
			"sandboxrun/run1/memory.current": "10485760\n",
			"sandboxrun/run1/memory.stat":    "anon 1\ninactive_file 2097152\n",
			"sandboxrun/run1/pids.current":   "7\n",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range c.files {
				write(t, filepath.Join(root, p), content)
			}
			r, err := cgroup.Find(root, c.rels...)
			require.NoError(t, err)
			s, err := r.Read()
			require.NoError(t, err)
			require.Equal(t, sandbox.UsageSample{CPU: 2500 * time.Millisecond, MemoryBytes: 8 << 20, Pids: 7}, s)
		})
	}
}

func TestFindNone(t *testing.T) {
	_, err := cgroup.Find(t.TempDir(), "docker/abc")
	require.ErrorIs(t, err, cgroup.ErrNotFound)
}

func TestReadGone(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "memory/x/memory.usage_in_bytes"), "1\n")
	r, err := cgroup.Find(root, "x")
	require.NoError(t, err)
	_, err = r.Read()
	require.Error(t, err, "no cpuacct.usage: the cgroup went")
}
