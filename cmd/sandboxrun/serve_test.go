package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeReplicaFlags: --replica and --peer-url go together, and each is
// checked before anything starts, with the way to fix it.
func TestServeReplicaFlags(t *testing.T) {
	t.Setenv("SANDBOXRUN_REPLICA", "")
	t.Setenv("SANDBOXRUN_PEER_URL", "")
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
