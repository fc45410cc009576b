package images

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReporter(t *testing.T) {
	var buf strings.Builder
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	r := newReporter(&buf, clock)

	r.stepf("checking %s", "Docker")
	now = now.Add(1500 * time.Millisecond)
	out := r.output()
	_, err := out.Write([]byte("I: Retrieving "))
	require.NoError(t, err)
	_, err = out.Write([]byte("libc6\nI: Validating libc6\npartial"))
	require.NoError(t, err)
	now = now.Add(3*time.Minute + 4*time.Second)
	r.stepf("done")

	require.Equal(t, "[  0.0s] checking Docker\n"+
		"      I: Retrieving libc6\n"+
		"      I: Validating libc6\n"+
		"      partial\n"+
		"[ 3m05s] done\n", buf.String())
}

func TestFormatDuration(t *testing.T) {
	require.Equal(t, "2.5s", formatDuration(2500*time.Millisecond))
	require.Equal(t, "1m23s", formatDuration(83*time.Second+400*time.Millisecond))
}

func TestReporterNilWriter(t *testing.T) {
	r := newReporter(nil, nil)
	r.stepf("nothing to see")
	n, err := r.output().Write([]byte("x\n"))
	require.NoError(t, err)
	require.Equal(t, 2, n)
}
