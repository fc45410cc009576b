//go:build kube

package kube

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// TestLiveUsageFromThePod: a run that asks for live usage gets samples
// read by sandbox-init from the Pod's own cgroup while the script burns
// CPU, and the Result keeps their peaks. No figure is held to a timing:
// the script runs until it has seen two samples' worth of CPU, bounded by
// its timeout.
func TestLiveUsageFromThePod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var got []sandbox.Usage
	limits := sandboxtest.DefaultLimits()
	skillDir, err := filepath.Abs("../../skills/hello")
	require.NoError(t, err)
	res, err := runner.Run(ctx, sandbox.Spec{
		Skill:      "hello",
		SkillDir:   skillDir,
		Argv:       []string{"python3", "-c", "import time\nend = time.process_time() + 3\nwhile time.process_time() < end:\n    pass\nprint('burnt')\n"},
		Runtime:    "python3",
		Limits:     limits,
		UsageEvery: sandbox.MinUsageEvery,
		Usage: func(u sandbox.Usage) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, u)
		},
	})
	require.NoError(t, err)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, got, "3 s of CPU at a sample every %s: the Pod sent none", sandbox.MinUsageEvery)
	var peaks sandbox.UsagePeaks
	busy := false
	for _, u := range got {
		peaks.Add(u)
		require.Positive(t, u.MemoryBytes, "%+v", u)
		require.Positive(t, u.Pids, "%+v", u)
		require.Nil(t, u.WorkspaceBytes, "no writable workspace, no figure")
		busy = busy || u.CPUPercent > 0
	}
	require.True(t, busy, "some sample saw the script's CPU: %+v", got)
	require.Equal(t, peaks.MemoryBytes, res.PeakMemoryBytes)
	require.Equal(t, peaks.Pids, res.PeakPids)
	requirePodGone(t, res.ID)
}
