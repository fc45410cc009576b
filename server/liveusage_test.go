package server_test

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/server"
)

func TestUsageEvents(t *testing.T) {
	eng := &engine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, UsageEveryMin: 1500 * time.Millisecond})
	require.NoError(t, err)
	srv, err := server.New(server.Options{Service: svc})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	f := fixture{url: ts.URL, eng: eng}
	for name, c := range map[string]struct {
		body   string
		stream bool
		every  time.Duration
	}{
		"a stream samples by default":         {body: `{"command": "echo hi"}`, stream: true, every: sandbox.DefaultUsageEvery},
		"a stream asks its interval":          {body: `{"command": "echo hi", "usage_every_ms": 5000}`, stream: true, every: 5 * time.Second},
		"the operator's floor holds":          {body: `{"command": "echo hi", "usage_every_ms": 300}`, stream: true, every: 1500 * time.Millisecond},
		"0 is no sampling":                    {body: `{"command": "echo hi", "usage_every_ms": 0}`, stream: true},
		"one answer samples only when asked":  {body: `{"command": "echo hi"}`},
		"one answer keeps the peaks if asked": {body: `{"command": "echo hi", "usage_every_ms": 2000}`, every: 2 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			var hdr []string
			if c.stream {
				hdr = []string{"Accept", "application/x-ndjson"}
			}
			r := call(t, "POST", f.url+"/v1/skills/hello/exec", c.body, hdr...)
			require.Equal(t, 200, r.status, string(r.body))
			eng.mu.Lock()
			every, sent := eng.usageEvery, eng.usageSent
			eng.mu.Unlock()
			require.Equal(t, c.every, every)
			require.Equal(t, c.stream, sent, "samples go to the stream only")
			if !c.stream {
				return
			}
			var usage []sandbox.Usage
			sc := bufio.NewScanner(strings.NewReader(string(r.body)))
			for sc.Scan() {
				requireSchema(t, "Event", sc.Bytes())
				var ev struct {
					Type  string
					Usage *sandbox.Usage
				}
				require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
				if ev.Type == "usage" {
					require.NotNil(t, ev.Usage)
					usage = append(usage, *ev.Usage)
				}
			}
			if c.every == 0 {
				require.Empty(t, usage)
				return
			}
			require.Equal(t, []sandbox.Usage{{ElapsedMS: 2000, CPUPercent: 99.5, MemoryBytes: 3 << 20, Pids: 2}}, usage)
		})
	}
	t.Run("a negative interval is a bad request", func(t *testing.T) {
		r := call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "echo hi", "usage_every_ms": -1}`)
		require.Equal(t, 400, r.status)
		require.Contains(t, string(r.body), "usage_every_ms")
	})
}
