package limit_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/session"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// The stores share the fields and the message, not the type: the server
// maps a session's limit and an upload's to different statuses, so neither
// may match the other's type or sentinel.
func TestStoresKeepTheirOwnLimitError(t *testing.T) {
	var sess error = &session.LimitError{Limit: session.LimitQuota, Value: 10, Hint: "delete files"}
	var up error = &skillstore.LimitError{Limit: skillstore.LimitFiles, Value: 3, Hint: "upload fewer files"}

	require.EqualError(t, sess, "limit reached: sessions.quota (10): delete files")
	require.EqualError(t, up, "limit reached: skill_uploads.max_files (3): upload fewer files")

	require.ErrorIs(t, sess, session.ErrLimit)
	require.NotErrorIs(t, sess, skillstore.ErrLimit)
	require.ErrorIs(t, up, skillstore.ErrLimit)
	require.NotErrorIs(t, up, session.ErrLimit)

	require.False(t, errors.As(sess, new(*skillstore.LimitError)))
	require.False(t, errors.As(up, new(*session.LimitError)))
}
