package kube

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// fakeInitUsage answers each ask on st with the lines given, one per ask,
// then stops answering.
func fakeInitUsage(st net.Conn, lines ...string) {
	go func() {
		r := bufio.NewReader(st)
		for _, l := range lines {
			if _, err := r.ReadByte(); err != nil {
				return
			}
			if _, err := st.Write([]byte(l + "\n")); err != nil {
				return
			}
		}
	}()
}

// TestUsageOverTheChannel: the box's reads ask init for a sample each, over
// the stream init opened; a bad answer breaks the stream for good (a late
// answer would pass for the next); the channel's end ends the reads.
func TestUsageOverTheChannel(t *testing.T) {
	c := newHostChannel(&sandbox.Spec{}, 0, slog.New(slog.DiscardHandler))
	b := &box{ch: c}
	s := initSide(t, c)

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.ReadUsage(short)
	require.ErrorContains(t, err, "offered no usage stream", "an init without the stream: the read ends at its deadline")

	st := openKind(t, s, frame.StreamUsage)
	fakeInitUsage(st,
		`{"cpu_ns": 1500000000, "memory_bytes": 1048576, "pids": 3, "workspace_bytes": 4096}`,
		`{"cpu_ns": 1600000000, "memory_bytes": 2097152, "pids": 4}`,
		`{"cpu_ns": -1}`,
	)
	ctx := context.Background()
	got, err := b.ReadUsage(ctx)
	require.NoError(t, err)
	four := int64(4096)
	require.Equal(t, sandbox.UsageSample{CPU: 1500 * time.Millisecond, MemoryBytes: 1 << 20, Pids: 3, WorkspaceBytes: &four}, got)
	got, err = b.ReadUsage(ctx)
	require.NoError(t, err)
	require.Nil(t, got.WorkspaceBytes, "no writable workspace, no figure")
	_, err = b.ReadUsage(ctx)
	require.ErrorContains(t, err, "negative")
	_, err = b.ReadUsage(ctx)
	require.Error(t, err, "the stream is broken after a bad answer")

	_, _ = c.close()
	_, err = b.ReadUsage(ctx)
	require.Error(t, err)
	_, err = (&box{}).ReadUsage(ctx)
	require.ErrorIs(t, err, errNoUsage)
}

// TestUsageInitError: init's own error (no cgroup files) is the read's.
func TestUsageInitError(t *testing.T) {
	c := newHostChannel(&sandbox.Spec{}, 0, slog.New(slog.DiscardHandler))
	s := initSide(t, c)
	fakeInitUsage(openKind(t, s, frame.StreamUsage), `{"error": "read cpu.stat: no such file"}`)
	_, err := (&box{ch: c}).ReadUsage(context.Background())
	require.ErrorContains(t, err, "cpu.stat")
	_, _ = c.close()
}
