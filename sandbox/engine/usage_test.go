package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// usageLog collects a run's usage samples and counts those sent after
// Run returned.
type usageLog struct {
	mu       sync.Mutex
	got      []sandbox.Usage
	returned bool
	late     int
}

func (l *usageLog) add(u sandbox.Usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.returned {
		l.late++
	}
	l.got = append(l.got, u)
}

func (l *usageLog) done() []sandbox.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.returned = true
	return append([]sandbox.Usage(nil), l.got...)
}

func TestUsageIsSampledWhileTheScriptRuns(t *testing.T) {
	d := &fakeDriver{usage: true, work: 1500 * time.Millisecond}
	e := newEngine(t, d, 0)
	s := spec(t)
	s.UsageEvery = sandbox.MinUsageEvery
	var l usageLog
	s.Usage = l.add
	res, err := e.Run(context.Background(), s)
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	got := l.done()
	// 1.5 s of work at 250 ms: six ticks on an idle machine.
	require.GreaterOrEqual(t, len(got), 2, "samples while the script ran")
	var peaks sandbox.UsagePeaks
	for i, u := range got {
		peaks.Add(u)
		require.Positive(t, u.MemoryBytes)
		require.Positive(t, u.Pids)
		require.NotNil(t, u.WorkspaceBytes, "the box's workspace bytes reach the sample")
		require.Equal(t, u.MemoryBytes>>8, *u.WorkspaceBytes, "from the same read")
		// Each read finds 100 ms more CPU, a tick (about 250 ms) apart.
		require.Greater(t, u.CPUPercent, 0.0, "sample %d", i)
		require.LessOrEqual(t, u.CPUPercent, 100.0, "sample %d", i)
		if i > 0 {
			require.Greater(t, u.ElapsedMS, got[i-1].ElapsedMS, "samples in order")
			require.Greater(t, u.MemoryBytes, got[i-1].MemoryBytes)
		}
	}
	require.Equal(t, peaks.MemoryBytes, res.PeakMemoryBytes)
	require.Equal(t, peaks.Pids, res.PeakPids)
	require.InDelta(t, peaks.CPUPercent, res.PeakCPUPercent, 0)
	time.Sleep(3 * sandbox.MinUsageEvery)
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Zero(t, l.late, "no sample after the Result")
	require.Len(t, l.got, len(got))
}

func TestNoUsageWithoutTheAbilityOrTheAsk(t *testing.T) {
	for name, c := range map[string]struct {
		usage bool
		every time.Duration
	}{
		"box cannot read usage": {usage: false, every: sandbox.MinUsageEvery},
		"run does not ask":      {usage: true, every: 0},
	} {
		t.Run(name, func(t *testing.T) {
			d := &fakeDriver{usage: c.usage, work: 3 * sandbox.MinUsageEvery}
			e := newEngine(t, d, 0)
			s := spec(t)
			s.UsageEvery = c.every
			var l usageLog
			s.Usage = l.add
			res, err := e.Run(context.Background(), s)
			require.NoError(t, err)
			require.True(t, res.Success, res.Error)
			require.Empty(t, l.done())
			require.Zero(t, res.PeakMemoryBytes)
			require.Zero(t, res.PeakPids)
			require.Zero(t, res.PeakCPUPercent)
		})
	}
}

func TestUsageIntervalBelowTheFloorIsRefused(t *testing.T) {
	e := newEngine(t, &fakeDriver{usage: true}, 0)
	s := spec(t)
	s.UsageEvery = sandbox.MinUsageEvery / 2
	res, err := e.Run(context.Background(), s)
	require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
	require.Nil(t, res)
	require.ErrorContains(t, err, "UsageEvery")
}
