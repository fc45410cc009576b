//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/policy"
)

// What Service.Explain says of a request is what the real engine then ran:
// the limits (network included) and the image, read back from the Result.
func TestExplainMatchesARealRun(t *testing.T) {
	t.Parallel()
	pol, err := policy.ParsePolicy("clamp.yaml", []byte("on_exceed: clamp\nlimits:\n  memory: {max: 96Mi}\n  timeout: {max: 20s}\n"))
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Policy: pol, Backend: backends.New, Images: backends.Images()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	req := sandboxrun.Request{Args: []byte(`{"n": 1}`), Timeout: 15 * time.Second}
	a := sandboxrun.Action{Script: "scripts/echo.py"}
	e, err := svc.Explain(ctx, "hello", a, req)
	require.NoError(t, err)
	require.NotEmpty(t, e.Limits.Clamped, "the policy's ceiling clamps the skill's memory")
	res, err := svc.RunScript(ctx, "hello", a.Script, req)
	require.NoError(t, err)
	require.True(t, res.Success, res.Stderr)
	require.Equal(t, e.Limits.MemoryBytes, res.Limits.MemoryBytes)
	require.Equal(t, e.Limits.TimeoutSec, res.Limits.TimeoutSec)
	require.Equal(t, e.Limits.Network, res.Limits.Network)
	require.Equal(t, e.Limits.Clamped, res.Limits.Clamped)
	require.Equal(t, e.Image, res.Image)
}
