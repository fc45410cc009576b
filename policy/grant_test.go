package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWithTools(t *testing.T) {
	pol, err := ParsePolicy("p.yaml", []byte("skills:\n  a:\n    allowed-tools: Write\n"))
	require.NoError(t, err)
	got, err := pol.WithTools("a", "Bash(python:*) Read")
	require.NoError(t, err)
	require.Equal(t, "Write, Bash(python:*), Read", got.ExtraTools("a").String())
	require.Equal(t, "Write", pol.ExtraTools("a").String(), "the policy itself is left as it was")
	require.NotEqual(t, pol.Digest, got.Digest, "an audit record tells the two apart")
	require.Empty(t, got.ExtraTools("b"), "only the skill named")

	fresh, err := BuiltinPolicy().WithTools("b", "Bash(git status:*)")
	require.NoError(t, err)
	require.Equal(t, "Bash(git status:*)", fresh.ExtraTools("b").String())
	require.Empty(t, BuiltinPolicy().ExtraTools("b"))

	_, err = pol.WithTools("a", "Bash(python")
	require.Error(t, err)
}
