package stats

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	tests := []struct {
		p    int
		want time.Duration
	}{{50, 5}, {95, 10}, {100, 10}, {10, 1}, {0, 1}}
	for _, tt := range tests {
		require.Equal(t, tt.want, Percentile(ds, tt.p), "p%d", tt.p)
	}
	require.Equal(t, time.Duration(5), ds[0], "input left unsorted")
	require.Equal(t, "12ms", MS(12*time.Millisecond+400*time.Microsecond))
}
