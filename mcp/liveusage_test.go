package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestProgressCarriesTheLatestUsage(t *testing.T) {
	sample := sandbox.Usage{ElapsedMS: 1000, CPUPercent: 87.5, MemoryBytes: 3 << 20, Pids: 4}
	eng := newBlockingEngine()
	inner := eng.run
	eng.run = func(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		if spec.Usage != nil && spec.UsageEvery > 0 {
			spec.Usage(sample)
		}
		return inner(ctx, spec)
	}
	progress := newProgressLog()
	cs := connect(t, mcp.NewServer(service(t, &eng.fakeEngine), mcp.WithProgressInterval(5*time.Millisecond)), progress)

	done := make(chan struct{})
	go func() {
		defer close(done)
		params := &mcpsdk.CallToolParams{Name: mcp.ToolRunScript, Arguments: argsFor(mcp.ToolRunScript, "hello")}
		params.SetProgressToken("tok-u")
		_, _ = cs.CallTool(context.Background(), params)
	}()
	wait(t, eng.started, "the run to start")
	var with *mcpsdk.ProgressNotificationParams
	for with == nil {
		wait(t, progress.seen, "a progress notification")
		for _, p := range progress.all() {
			if p.Meta[mcp.UsageMetaKey] != nil {
				with = p
			}
		}
	}
	close(eng.release)
	<-done

	raw, err := json.Marshal(with.Meta[mcp.UsageMetaKey])
	require.NoError(t, err)
	var got sandbox.Usage
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, sample, got)
	require.True(t, strings.HasSuffix(with.Message, "; CPU 88%, memory 3MiB, 4 processes"), with.Message)
	// The progress interval (5 ms) is below the Service's floor: the
	// sandbox is sampled at the floor.
	require.Equal(t, sandboxrun.DefaultUsageEveryMin, eng.ran()[0].UsageEvery)
}
