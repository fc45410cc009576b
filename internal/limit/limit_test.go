package limit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestErrorMessage(t *testing.T) {
	err := &Error{Limit: "sessions.quota", Value: 1024, Hint: "raise sessions.quota in the operator policy"}
	require.EqualError(t, err, "limit reached: sessions.quota (1024): raise sessions.quota in the operator policy")
}

func TestOr(t *testing.T) {
	tests := []struct {
		name   string
		v, def int64
		want   int64
	}{
		{"unset takes the default", 0, 16, 16},
		{"negative takes the default", -1, 16, 16},
		{"set is kept, below the default", 3, 16, 3},
		{"set is kept, above the default", 64, 16, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Or(tt.v, tt.def))
		})
	}
	// The types the stores use: counts and durations.
	require.Equal(t, 32, Or(0, 32))
	require.Equal(t, 30*time.Minute, Or(time.Duration(0), 30*time.Minute))
}
