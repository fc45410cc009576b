//go:build integration

package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExplainAgainstServer: the explanation a real serve gives is the run
// that follows it (limits, image, network), and a refusal carries its part.
func TestExplainAgainstServer(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte(testToken+"\n"), 0o600))
	srv := startServer(t, true, "", nil, "--skills", "../skills", "--tokens", tokens)
	c, err := New(srv.url, WithToken(testToken))
	require.NoError(t, err)
	ctx := context.Background()

	e, err := c.Explain(ctx, "hello", ExplainRequest{Script: "scripts/echo.py", Params: Params{Timeout: 9}})
	require.NoError(t, err)
	require.Equal(t, "script", e.Action)
	r, err := c.Run(ctx, "hello", RunRequest{Script: "scripts/echo.py", Params: Params{Timeout: 9}})
	require.NoError(t, err)
	require.Equal(t, r.Limits.TimeoutS, e.Limits.TimeoutS)
	require.Equal(t, r.Limits.MemoryBytes, e.Limits.MemoryBytes)
	require.Equal(t, r.Limits.Network, e.Limits.Network)
	require.Equal(t, r.Image, e.Image)

	_, err = c.Explain(ctx, "hello", ExplainRequest{Command: "echo ok; rm -rf /tmp/x"})
	require.ErrorIs(t, err, ErrRefused)
	var refusal *Error
	require.ErrorAs(t, err, &refusal)
	require.Contains(t, refusal.Part, "rm")
	require.NotNil(t, refusal.Explanation)
	require.Equal(t, "hello", refusal.Explanation.Skill)

	_, err = c.Explain(ctx, "hello", ExplainRequest{})
	require.ErrorIs(t, err, ErrBadRequest)
	_, err = c.Explain(ctx, "no-such-skill", ExplainRequest{Code: "print(1)"})
	require.ErrorIs(t, err, ErrNotFound)
}
