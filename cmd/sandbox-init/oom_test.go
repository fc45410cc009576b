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
			root := t.TempDir()
			for name, body := range tt.files {
				p := filepath.Join(root, name)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			}
			require.Equal(t, tt.want, oomKills(root))
		})
	}
}

func ptr(n int64) *int64 { return &n }
