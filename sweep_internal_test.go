package sandboxrun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSweepIntervalFollowsAShortTTL(t *testing.T) {
	tests := []struct {
		ttl, want time.Duration
	}{
		{30 * time.Minute, time.Minute},
		{2 * time.Minute, time.Minute},
		{time.Minute, 30 * time.Second},
		{2 * time.Second, time.Second},
		{time.Second, time.Second},
		{time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, sweepInterval(tt.ttl), "ttl %v", tt.ttl)
	}
}
