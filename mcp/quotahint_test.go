package mcp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
)

// TestQuotaHint: a window's quota tells the model when to retry; the
// stored_bytes quota, which no wait frees, tells it to delete instead.
func TestQuotaHint(t *testing.T) {
	window := quotaHint(&sandboxrun.QuotaError{Label: "ci", Quota: "runs", Window: time.Hour, Limit: 1, Used: 1, RetryAfter: 90 * time.Second})
	require.ErrorContains(t, window, "retry_after_seconds: 90")
	stored := quotaHint(&sandboxrun.QuotaError{Label: "ci", Quota: "stored_bytes", Limit: 100, Used: 120})
	require.NotContains(t, stored.Error(), "retry_after_seconds")
	require.ErrorContains(t, stored, "delete sessions, snapshots or uploads")
}
