package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOOMKills(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  *int64
	}{
		{"cgroup v2", map[string]string{"memory.events": "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n"}, ptr(2)},
		{"cgroup v1", map[string]string{"memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"}, ptr(1)},
		{"v1, none yet", map[string]string{"memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"}, ptr(0)},
		{"v2 wins over v1", map[string]string{"memory.events": "oom_kill 4\n", "memory/memory.oom_control": "oom_kill 0\n"}, ptr(4)},
		{"v1 before Linux 4.13 has no count", map[string]string{"memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\n"}, nil},
		{"a key that only starts alike", map[string]string{"memory.events": "oom_kill_x 5\noom 1\n"}, nil},
		{"malformed count", map[string]string{"memory.events": "oom_kill lots\n"}, nil},
		{"negative count", map[string]string{"memory.events": "oom_kill -1\n"}, nil},
		{"unreadable v2 falls back to v1", map[string]string{"memory.events": "oom_kill x\n", "memory/memory.oom_control": "oom_kill 3\n"}, ptr(3)},
		{"no memory cgroup", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, fixture(t, atRoot, tt.files).oomKills())
		})
	}
}

// atRoot is /proc/self/cgroup inside a container with a private cgroup
// namespace on a hybrid host (v1 controllers, and the v2 hierarchy).
const atRoot = "9:name=systemd:/\n8:pids:/\n4:memory:/\n1:cpu:/\n0::/\n"

func fixture(t *testing.T, self string, files map[string]string) cgroupView {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	selfFile := filepath.Join(t.TempDir(), "cgroup")
	require.NoError(t, os.WriteFile(selfFile, []byte(self), 0o644))
	return cgroupView{root: root, self: selfFile}
}

// A counter is trusted only when init is at the root of that hierarchy:
// elsewhere the file could count other processes than the sandbox's.
func TestOOMKillsOnlyAtTheRootOfOwnCgroup(t *testing.T) {
	v1 := map[string]string{"memory/memory.oom_control": "oom_kill 2\n"}
	v2 := map[string]string{"memory.events": "oom_kill 3\n"}
	tests := []struct {
		name  string
		self  string
		files map[string]string
		want  *int64
	}{
		{"v1 at the root", "4:memory:/\n", v1, ptr(2)},
		{"v1 in a sub-cgroup (host namespace)", "4:memory:/docker/abc\n", v1, nil},
		{"v1 with joined controllers", "4:cpu,memory:/\n", v1, ptr(2)},
		{"v2 at the root", "0::/\n", v2, ptr(3)},
		{"v2 in a sub-cgroup", "0::/system.slice/docker-abc.scope\n", v2, nil},
		{"v2 file but only v1 memory listed", "4:memory:/\n", v2, nil},
		{"nothing listed", "", v1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, fixture(t, tt.self, tt.files).oomKills())
		})
	}
}

func TestOOMKillsSince(t *testing.T) {
	v := fixture(t, atRoot, map[string]string{"memory.events": "oom_kill 5\n"})
	require.Equal(t, ptr(5), v.oomKillsSince(nil), "no base: all of them")
	require.Equal(t, ptr(2), v.oomKillsSince(ptr(3)))
	require.Equal(t, ptr(0), v.oomKillsSince(ptr(9)), "never negative")
	require.Nil(t, fixture(t, atRoot, nil).oomKillsSince(ptr(1)), "unreadable now: unknown")
}

func ptr(n int64) *int64 { return &n }
