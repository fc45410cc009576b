package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStreamYieldsUsage: usage events reach the caller between the output
// and the result, and the request carries the interval asked.
func TestStreamYieldsUsage(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"type":"stdout","data":"a\n"}
{"type":"usage","usage":{"elapsed_ms":1000,"cpu_percent":99.9,"memory_bytes":1048576,"pids":3}}
{"type":"result","result":{"id":"r","success":true,"peak_cpu_percent":99.9,"peak_memory_bytes":1048576,"peak_pids":3}}
`)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	require.NoError(t, err)
	var types []string
	var usage *LiveUsage
	var res *Result
	for ev, err := range c.ExecStream(context.Background(), "hello", ExecRequest{Command: "x", UsageEveryMS: UsageEvery(time.Second)}) {
		require.NoError(t, err)
		types = append(types, ev.Type)
		if ev.Usage != nil {
			usage = ev.Usage
		}
		if ev.Result != nil {
			res = ev.Result
		}
	}
	require.Equal(t, []string{"stdout", "usage", "result"}, types)
	require.Equal(t, &LiveUsage{ElapsedMS: 1000, CPUPercent: 99.9, MemoryBytes: 1 << 20, Pids: 3}, usage)
	require.Equal(t, int64(1<<20), res.PeakMemoryBytes)
	require.Equal(t, int64(3), res.PeakPids)
	require.InDelta(t, 99.9, res.PeakCPUPercent, 0)
	require.InDelta(t, 1000, body["usage_every_ms"], 0)
}
