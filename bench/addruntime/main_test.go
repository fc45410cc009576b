package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAddRuntime(t *testing.T) {
	tests := []struct {
		name    string
		before  string // empty: no file
		changed bool
		err     string
		want    string // the file afterwards, as JSON
	}{
		{"no file yet", "", true, "", `{"runtimes": {"crun": {"path": "/usr/bin/crun"}}}`},
		{"other settings are kept", `{"storage-driver": "overlay2", "log-opts": {"max-size": "10m"}}`, true, "",
			`{"storage-driver": "overlay2", "log-opts": {"max-size": "10m"}, "runtimes": {"crun": {"path": "/usr/bin/crun"}}}`},
		{"other runtimes are kept whole", `{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--platform=ptrace"], "options": {"x": 1}}}}`, true, "",
			`{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--platform=ptrace"], "options": {"x": 1}}, "crun": {"path": "/usr/bin/crun"}}}`},
		{"already there", `{"runtimes": {"crun": {"path": "/usr/bin/crun"}}}`, false, "",
			`{"runtimes": {"crun": {"path": "/usr/bin/crun"}}}`},
		{"the name taken by another binary", `{"runtimes": {"crun": {"path": "/opt/crun"}}}`, false, `already names runtime crun as {"path": "/opt/crun"}`,
			`{"runtimes": {"crun": {"path": "/opt/crun"}}}`},
		{"not JSON", `{"runtimes": `, false, "not a JSON object", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "daemon.json")
			if tt.before != "" {
				require.NoError(t, os.WriteFile(config, []byte(tt.before), 0o600))
			}
			changed, err := addRuntime(config, "crun", "/usr/bin/crun")
			require.Equal(t, tt.changed, changed)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
			} else {
				require.NoError(t, err)
			}
			b, err := os.ReadFile(config)
			require.NoError(t, err)
			if tt.want == "" {
				require.Equal(t, tt.before, string(b), "a refused file is left as it was")
				return
			}
			require.JSONEq(t, tt.want, string(b))
			require.True(t, json.Valid(b))
			if tt.before != "" {
				fi, err := os.Stat(config)
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the file keeps its mode")
			}
			entries, err := os.ReadDir(filepath.Dir(config))
			require.NoError(t, err)
			require.Len(t, entries, 1, "no temporary file left behind")
		})
	}
	_, err := addRuntime(filepath.Join(t.TempDir(), "daemon.json"), "crun", "crun")
	require.ErrorContains(t, err, "absolute -path")
}

func TestRemoveRuntime(t *testing.T) {
	tests := []struct {
		name    string
		before  string
		changed bool
		want    string
	}{
		{"ours", `{"mtu": 1400, "runtimes": {"crun": {"path": "/usr/bin/crun"}, "runsc": {"path": "/usr/bin/runsc"}}}`, true,
			`{"mtu": 1400, "runtimes": {"runsc": {"path": "/usr/bin/runsc"}}}`},
		{"the last one", `{"mtu": 1400, "runtimes": {"crun": {"path": "/usr/bin/crun"}}}`, true, `{"mtu": 1400}`},
		{"another binary under the name", `{"runtimes": {"crun": {"path": "/opt/crun"}}}`, false,
			`{"runtimes": {"crun": {"path": "/opt/crun"}}}`},
		{"absent", `{"mtu": 1400}`, false, `{"mtu": 1400}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "daemon.json")
			require.NoError(t, os.WriteFile(config, []byte(tt.before), 0o644))
			changed, err := removeRuntime(config, "crun", "/usr/bin/crun")
			require.NoError(t, err)
			require.Equal(t, tt.changed, changed)
			b, err := os.ReadFile(config)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(b))
		})
	}
}
