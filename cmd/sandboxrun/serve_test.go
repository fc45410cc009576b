package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeReplicaFlags: --replica and --peer-url go together, and each is
// checked before anything starts, with the way to fix it.
func TestServeReplicaFlags(t *testing.T) {
	t.Setenv("SANDBOXRUN_REPLICA", "")
	t.Setenv("SANDBOXRUN_PEER_URL", "")
	t.Setenv("SANDBOXRUN_REPLICAS", "")
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"replica without peer", []string{"--replica", "r-0"}, []string{"--replica r-0 needs --peer-url", "SANDBOXRUN_PEER_URL", "{replica}"}},
		{"peer without replica", []string{"--peer-url", "http://{replica}:8080"}, []string{"--peer-url needs --replica", "SANDBOXRUN_REPLICA"}},
		{"bad name", []string{"--replica", "R_0", "--peer-url", "http://{replica}:8080"}, []string{`"R_0"`, "lowercase letters, digits and '-'"}},
		{"template names nobody", []string{"--replica", "r-0", "--peer-url", "http://peer:8080"}, []string{"names no replica", "{ordinal}"}},
		{"ordinal without number", []string{"--replica", "alpha", "--peer-url", "http://127.0.0.1:1808{ordinal}"}, []string{"does not end in a number"}},
		{"count without replica", []string{"--replicas", "2"}, []string{"--replicas 2 needs --replica and --peer-url"}},
		{"count not a number", []string{"--replica", "r-0", "--peer-url", "http://{replica}.h:8080", "--replicas", "two"}, []string{`--replicas "two"`, "1 or more"}},
		{"count below the name", []string{"--replica", "r-2", "--peer-url", "http://{replica}.h:8080", "--replicas", "2"}, []string{`replica "r-2" is not one of 2`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", append([]string{"serve", "--listen", "127.0.0.1:0"}, tt.args...)...)
			r.requireCode(t, exitRefused)
			require.True(t, strings.HasPrefix(r.stderr, "sandboxrun: "), r.stderr)
			for _, w := range tt.want {
				require.Contains(t, r.stderr, w)
			}
		})
	}
	t.Run("from the environment", func(t *testing.T) {
		t.Setenv("SANDBOXRUN_REPLICA", "r-0")
		r := cli(t, "", "serve", "--listen", "127.0.0.1:0")
		r.requireCode(t, exitRefused)
		require.Contains(t, r.stderr, "--replica r-0 needs --peer-url")
	})
}

// TestServeRefusesUnsharedUploads: uploads in the default store (beside
// each replica's own sessions root) with several replicas, or a number not
// told, are refused before anything starts; one replica, or a store the
// policy names, starts.
func TestServeRefusesUnsharedUploads(t *testing.T) {
	t.Setenv("SANDBOXRUN_REPLICA", "")
	t.Setenv("SANDBOXRUN_PEER_URL", "")
	t.Setenv("SANDBOXRUN_REPLICAS", "")
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("skill_uploads:\n  allow: tokens\n"), 0o600))
	set := []string{"--replica", "r-0", "--peer-url", "http://{replica}.h:8080"}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"two replicas", append(set, "--replicas", "2"), "skill uploads with several replicas need a store every replica shares"},
		{"replicas not counted", set, "no --replicas 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", append([]string{"--policy", pol, "serve", "--listen", "127.0.0.1:0", "--sessions", filepath.Join(dir, "sessions")}, tt.args...)...)
			r.requireCode(t, exitRefused)
			require.Contains(t, r.stderr, tt.want)
			require.Contains(t, r.stderr, "skill_uploads.store")
			require.NoDirExists(t, filepath.Join(dir, "sessions"), "refused before anything is made")
		})
	}
}
