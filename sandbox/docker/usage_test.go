package docker

import (
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestStatsSample(t *testing.T) {
	for name, stats := range map[string]map[string]uint64{
		"cgroup v1": {"cache": 5, "total_inactive_file": 2 << 20},
		"cgroup v2": {"file": 5, "inactive_file": 2 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			var st container.StatsResponse
			st.CPUStats.CPUUsage.TotalUsage = uint64(1500 * time.Millisecond)
			st.MemoryStats.Usage = 10 << 20
			st.MemoryStats.Stats = stats
			st.PidsStats.Current = 3
			require.Equal(t, sandbox.UsageSample{CPU: 1500 * time.Millisecond, MemoryBytes: 8 << 20, Pids: 3}, statsSample(&st))
		})
	}
}
