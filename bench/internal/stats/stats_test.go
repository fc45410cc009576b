package stats

import (
	"slices"
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

func TestMedianInt(t *testing.T) {
	tests := []struct {
		in   []int64
		want int64
	}{{nil, 0}, {[]int64{7}, 7}, {[]int64{3, 1, 2}, 2}, {[]int64{4, 1, 3, 2}, 2}}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		require.Equal(t, tt.want, MedianInt(tt.in), "%v", tt.in)
		require.Equal(t, in, tt.in, "input left unsorted")
	}
}
