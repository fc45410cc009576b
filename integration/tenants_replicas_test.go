//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/server"
)

// TestStoredBytesCountsEveryReplica: a token's stored_bytes quota counts
// its sessions on every replica. With 5000 bytes in a session on r-0, r-1
// refuses the token a new session (429 naming the quota), and its usage
// through r-1 shows the bytes r-0 holds (a peer's own ask, marked
// forwarded, is told r-1's alone). Another token is not bounded by them.
// Once r-0 is down, r-1 counts what it last said (its sessions are still
// on its disk) and keeps refusing, and says so in its log.
func TestStoredBytesCountsEveryReplica(t *testing.T) {
	t.Parallel()
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(fmt.Sprintf("tenants:\n  labels:\n    %s: {stored_bytes: 4Ki}\n",
		server.TokenLabel(replicaTokenA))), 0o600))
	rs := startReplicas(t, "--policy", pol)
	r0, r1 := rs.srv[0], rs.srv[1]

	a := r0.create(t, "")
	c := r0.do(t, "PUT", "/v1/sessions/"+a.ID+"/files/big", bytes.NewReader(bytes.Repeat([]byte("x"), 5000)))
	require.Less(t, c.status, 300, c.String())

	c = r1.do(t, "POST", "/v1/sessions", nil)
	require.Equal(t, http.StatusTooManyRequests, c.status, "r-1 counts the token's session on r-0: %s", c.String())
	require.Contains(t, c.String(), "quota stored_bytes reached")

	stored := func(header ...string) sandboxrun.StoredUsage {
		t.Helper()
		c := r1.doAs(t, replicaTokenA, "GET", "/v1/usage", nil, header...)
		require.Equal(t, http.StatusOK, c.status, c.String())
		var u sandboxrun.TenantUsage
		require.NoError(t, json.Unmarshal(c.body, &u))
		require.NotNil(t, u.Stored, c.String())
		return *u.Stored
	}
	require.Equal(t, int64(5000), stored().SessionBytes, "the caller's usage counts every replica")
	require.Zero(t, stored(server.ForwardedHeader, "r-0").SessionBytes, "a peer's ask is told this replica's own bytes")

	c = r1.doAs(t, replicaTokenB, "POST", "/v1/sessions", nil)
	require.Equal(t, http.StatusCreated, c.status, "another token is not bounded by token A's bytes: %s", c.String())

	require.NoError(t, r0.cmd.Process.Signal(syscall.SIGKILL))
	<-r0.done
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r1.stderr.String(), "a peer did not tell the caller's session bytes") {
		c = r1.do(t, "POST", "/v1/sessions", nil)
		require.Equal(t, http.StatusTooManyRequests, c.status, "r-0 down, its last answer still counts: %s", c.String())
		require.True(t, time.Now().Before(deadline), "r-1 never asked r-0 again")
		time.Sleep(200 * time.Millisecond)
	}
	c = r1.do(t, "POST", "/v1/sessions", nil)
	require.Equal(t, http.StatusTooManyRequests, c.status, "after the silent ask too: %s", c.String())
	require.Contains(t, r1.stderr.String(), `bytes=5000`, "the log says what counted")
}
