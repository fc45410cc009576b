package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// TestUsageSample reads the cgroup files of both versions: at the root of
// a private namespace, under the path /proc/self/cgroup gives on a mount
// of the whole hierarchy, and with files missing.
func TestUsageSample(t *testing.T) {
	tests := []struct {
		name  string
		self  string
		files map[string]string
		want  frame.UsageSample
	}{
		{"v2 at the root", "0::/\n", map[string]string{
			"cgroup.controllers": "cpu memory pids\n",
			"cpu.stat":           "usage_usec 2500000\nuser_usec 2000000\n",
			"memory.current":     "10485760\n",
			"memory.stat":        "anon 1\ninactive_file 2097152\n",
			"pids.current":       "7\n",
		}, frame.UsageSample{CPUNS: 2_500_000_000, MemoryBytes: 8 << 20, Pids: 7}},
		{"v1 at the root", atRoot + "3:cpu,cpuacct:/\n", map[string]string{
			"cpuacct/cpuacct.usage":        "2500000000\n",
			"memory/memory.usage_in_bytes": "10485760\n",
			"memory/memory.stat":           "cache 100\ninactive_file 9\ntotal_inactive_file 2097152\n",
			"pids/pids.current":            "3\n",
		}, frame.UsageSample{CPUNS: 2_500_000_000, MemoryBytes: 8 << 20, Pids: 3}},
		{"v1, the whole hierarchy mounted", "5:pids:/kubepods/pod1/c1\n4:memory:/kubepods/pod1/c1\n3:cpu,cpuacct:/kubepods/pod1/c1\n", map[string]string{
			"cpuacct/cpuacct.usage":                         "999\n",
			"cpuacct/kubepods/pod1/c1/cpuacct.usage":        "1000\n",
			"memory/memory.usage_in_bytes":                  "999999\n",
			"memory/kubepods/pod1/c1/memory.usage_in_bytes": "4096\n",
			"pids/kubepods/pod1/c1/pids.current":            "2\n",
		}, frame.UsageSample{CPUNS: 1000, MemoryBytes: 4096, Pids: 2}},
		{"v1, its own cgroup at the mount", "4:memory:/kubepods/pod1/c1\n3:cpu,cpuacct:/kubepods/pod1/c1\n", map[string]string{
			"cpuacct/cpuacct.usage":        "1000\n",
			"memory/memory.usage_in_bytes": "4096\n",
		}, frame.UsageSample{CPUNS: 1000, MemoryBytes: 4096}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, fixture(t, tt.self, tt.files).sample())
		})
	}
	got := fixture(t, "0::/\n", map[string]string{"cgroup.controllers": "cpu\n"}).sample()
	require.Contains(t, got.Error, "cpu.stat", "a missing file is said, not a zero")
}

// yamuxPair is a yamux session over a pipe: init's end and the host's.
func yamuxPair(t *testing.T) (client, server *yamux.Session) {
	t.Helper()
	a, b := net.Pipe()
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	client, err := yamux.Client(a, cfg)
	require.NoError(t, err)
	server, err = yamux.Server(b, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// TestUsageStreamAnswersEachAsk: init opens the usage stream and answers
// each ask with a line; a host that closes the stream (one that does not
// know it) ends the serving.
func TestUsageStreamAnswersEachAsk(t *testing.T) {
	client, server := yamuxPair(t)
	ws := t.TempDir()
	serveUsage(&channel{sess: client}, &workspaceTree{dir: ws}, slog.New(slog.DiscardHandler))
	s, err := server.Accept()
	require.NoError(t, err)
	var kind [1]byte
	_, err = io.ReadFull(s, kind[:])
	require.NoError(t, err)
	require.Equal(t, frame.StreamUsage, kind[0])
	r := bufio.NewReader(s)
	for range 2 {
		_, err = s.Write([]byte{frame.UsageAsk})
		require.NoError(t, err)
		line, err := r.ReadBytes('\n')
		require.NoError(t, err)
		var smp frame.UsageSample
		require.NoError(t, json.Unmarshal(line, &smp))
		require.NotNil(t, smp.WorkspaceBytes, "a writable workspace's bytes are sampled")
		require.GreaterOrEqual(t, *smp.WorkspaceBytes, int64(0))
	}
	require.NoError(t, s.Close())
	_, err = r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "init closes its side once the host closed")
}

// BenchmarkUsageSample is the cost of one sample from this host's own
// cgroup files (init's work per ask).
func BenchmarkUsageSample(b *testing.B) {
	for b.Loop() {
		if s := sandboxCgroups.sample(); s.Error != "" {
			b.Fatal(s.Error)
		}
	}
}
