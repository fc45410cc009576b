package sandboxrun_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
)

// TestStoredBytesQuota: once a token's sessions hold its stored_bytes, a
// new session, a file, a snapshot and a run into a session are refused
// before anything is done (the engine is not asked); a run without a
// session, a read and a delete still pass; deleting makes room; the usage
// shows the level.
func TestStoredBytesQuota(t *testing.T) {
	pol, err := policy.ParsePolicy("p.yaml", []byte("tenants:\n  labels:\n    team: {stored_bytes: 100B}\n"))
	require.NoError(t, err)
	svc, eng := newService(t, sandboxrun.Config{SessionsRoot: t.TempDir(), Policy: pol})
	ctx := context.Background()
	team := svc.For(sandboxrun.Caller{Owner: "digest-a", Label: "team", Remote: true})
	other := svc.For(sandboxrun.Caller{Owner: "digest-b", Label: "other", Remote: true})

	info, err := team.CreateSession(0)
	require.NoError(t, err)
	_, err = team.PutFile(info.ID, "a", strings.NewReader(strings.Repeat("x", 60)))
	require.NoError(t, err)
	_, err = team.PutFile(info.ID, "b", strings.NewReader(strings.Repeat("x", 60)))
	require.NoError(t, err, "a write that starts below the quota is let in")
	u, err := team.Usage()
	require.NoError(t, err)
	require.Equal(t, &sandboxrun.StoredUsage{SessionBytes: 120, Bytes: 120, Limit: 100}, u.Stored)

	refusedStored := func(err error) {
		t.Helper()
		var qe *sandboxrun.QuotaError
		require.ErrorAs(t, err, &qe)
		require.Equal(t, "stored_bytes", qe.Quota)
		require.Equal(t, int64(0), qe.RetryAfterSeconds())
	}
	_, err = team.CreateSession(0)
	refusedStored(err)
	_, err = team.PutFile(info.ID, "c", strings.NewReader("x"))
	refusedStored(err)
	_, err = team.Snapshot(info.ID, "")
	refusedStored(err)
	_, err = team.ForkSession(info.ID, "", 0)
	refusedStored(err)
	_, err = team.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{Session: info.ID})
	refusedStored(err)
	require.Empty(t, eng.specs, "the refused run never reached the engine")
	_, err = team.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{})
	require.NoError(t, err, "a run without a session stores nothing")
	_, err = other.CreateSession(0)
	require.NoError(t, err, "another token's quota is its own")

	require.NoError(t, team.DeleteFile(info.ID, "b"))
	_, err = team.ForkSession(info.ID, "", 0)
	refusedStored(err) // 60 held, the fork's 60 more would pass 100
	_, err = team.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{Session: info.ID})
	require.NoError(t, err, "below the quota a run into the session is let in")
	_, err = team.CreateSession(0)
	require.NoError(t, err)
}
