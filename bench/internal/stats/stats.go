// Package stats holds the small summaries the benchmarks print.
package stats

import (
	"fmt"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (nearest rank) of ds, which must not
// be empty. ds is not modified.
func Percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

// MS formats d in whole milliseconds, as the benchmark tables print it.
func MS(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }

// MedianInt returns the median (lower middle) of xs, 0 when xs is empty. xs
// is not modified.
func MedianInt(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
