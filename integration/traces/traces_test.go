//go:build traces

// Package traces checks sandboxrun's OpenTelemetry traces against a real
// tracing backend: Jaeger, built once into a cache by hack/jaeger-build.sh
// (make test-traces does both), started on 127.0.0.1 with an in-memory
// store. A `sandboxrun --trace serve` on loopback exports to it; the test
// makes requests (success, refusal, timeout, a warm hit) and reads the
// traces back from Jaeger's query API. It fails loudly when Jaeger or the
// Docker engine is missing.
package traces

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/testserve"
)

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// jaegerConfig keeps every listener on loopback and every trace in memory.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// start runs a process until the test ends.
func start(t *testing.T, name string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	log, err := os.Create(filepath.Join(t.TempDir(), filepath.Base(name)+".log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("%s output:\n%s", name, b)
		}
	})
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("nothing answers at %s", url)
}

// jaegerTrace is the part of the query API's answer the test reads.
type jaegerTrace struct {
	Data []struct {
		TraceID string `json:"traceID"`
		Spans   []struct {
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			References    []struct {
				RefType string `json:"refType"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			Tags []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
			Logs []struct {
				Fields []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"fields"`
			} `json:"logs"`
		} `json:"spans"`
	} `json:"data"`
}

type span struct {
	id, parent, name string
	tags             map[string]string
	events           []string
	// fields are each event's attributes, in the order of events.
	fields []map[string]string
}

// fetch waits until Jaeger has every span of a trace named want and
// returns them by operation name.
func fetch(t *testing.T, query, traceID string, want ...string) map[string]span {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]span{}
		resp, err := http.Get(query + "/api/traces/" + traceID)
		if err == nil {
			var tr jaegerTrace
			err = json.NewDecoder(resp.Body).Decode(&tr)
			resp.Body.Close()
			if err == nil && len(tr.Data) == 1 {
				for _, s := range tr.Data[0].Spans {
					sp := span{id: s.SpanID, name: s.OperationName, tags: map[string]string{}}
					for _, r := range s.References {
						if r.RefType == "CHILD_OF" {
							sp.parent = r.SpanID
						}
					}
					for _, tg := range s.Tags {
						sp.tags[tg.Key] = fmt.Sprint(tg.Value)
					}
					for _, l := range s.Logs {
						fields := map[string]string{}
						for _, f := range l.Fields {
							fields[f.Key] = fmt.Sprint(f.Value)
						}
						sp.events = append(sp.events, fields["event"])
						sp.fields = append(sp.fields, fields)
					}
					got[sp.name] = sp
				}
			}
		}
		missing := ""
		for _, w := range want {
			if _, ok := got[w]; !ok {
				missing = w
			}
		}
		if missing == "" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s has no span %q after 30 s; it has %v", traceID, missing, got)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// fetchScript asks the egress proxy (HTTPS_PROXY) for a host it denies.
const fetchScript = `import urllib.request
try:
    urllib.request.urlopen("https://denied.invalid/", timeout=10)
except Exception as e:
    print("refused:", type(e).__name__)
`

// post sends one run request continuing traceID and returns the status.
func post(t *testing.T, url, traceID, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

func TestTracesInJaeger(t *testing.T) {
	jaeger := os.Getenv("SANDBOXRUN_JAEGER")
	require.NotEmpty(t, jaeger, "SANDBOXRUN_JAEGER names the Jaeger binary: run make test-traces (hack/jaeger-build.sh builds it)")
	bin := os.Getenv("SANDBOXRUN_BIN")
	require.NotEmpty(t, bin, "SANDBOXRUN_BIN names the sandboxrun binary: run make test-traces")

	queryPort, grpcPort, otlpPort, serverPort := freePort(t), freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, queryPort, grpcPort, otlpPort), 0o600))
	start(t, jaeger, nil, "--config", cfg)
	query := fmt.Sprintf("http://127.0.0.1:%d", queryPort)
	waitHTTP(t, query+"/api/services")

	// A skill that asks for a host the policy's allowlist does not hold.
	extra := t.TempDir()
	fetcher := filepath.Join(extra, "fetcher")
	require.NoError(t, os.MkdirAll(filepath.Join(fetcher, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fetcher, "SKILL.md"), []byte("---\nname: fetcher\ndescription: Fetches a page.\nmetadata:\n  network_access: \"true\"\n  allowed_domains: allowed.invalid\n---\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fetcher, "scripts", "fetch.py"), []byte(fetchScript), 0o644))
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("network: allowlist\nallowed_domains: [\"allowed.invalid\"]\n"), 0o600))

	srv, err := testserve.Start(testserve.Options{Bin: bin, Env: []string{
		fmt.Sprintf("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", otlpPort),
		"OTEL_SERVICE_NAME=sandboxrun-traces-test", "OTEL_BSP_SCHEDULE_DELAY=100",
	}, Args: []string{"--trace", "--skills", "../../skills:" + extra, "--policy", pol, "serve", "--warm-pool", "2"},
		Listen: fmt.Sprintf("127.0.0.1:%d", serverPort), Probe: "/healthz", Wait: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() {
		srv.Stop()
		if t.Failed() {
			t.Logf("serve's log:\n%s", srv.Log)
		}
	})
	api := srv.URL

	t.Run("success", func(t *testing.T) {
		const id = "4bf92f3577b34da6a3ce929d0e0e4736"
		require.Equal(t, 200, post(t, api+"/v1/skills/hello/run", id, `{"script":"scripts/echo.sh","args":{"secret":"do-not-record"}}`))
		spans := fetch(t, query, id, "POST /v1/skills/{name}/run", "sandboxrun.run", "sandboxrun.policy.decide",
			"sandbox.run", "container.create", "container.start", "container.remove")
		h, run, box := spans["POST /v1/skills/{name}/run"], spans["sandboxrun.run"], spans["sandbox.run"]
		require.Equal(t, "00f067aa0ba902b7", h.parent, "the handler continues the caller's trace")
		require.Equal(t, h.id, run.parent)
		require.Equal(t, run.id, box.parent)
		require.Equal(t, box.id, spans["container.create"].parent)
		require.Equal(t, "hello", run.tags["sandboxrun.skill"])
		require.Equal(t, "success", run.tags["sandboxrun.outcome"])
		require.Equal(t, "0", run.tags["sandboxrun.exit_code"])
		require.Equal(t, "200", h.tags["http.response.status_code"])
		require.Contains(t, box.events, "result frame")
		require.NotEmpty(t, box.tags["container.id"])
		for _, s := range spans {
			for k, v := range s.tags {
				require.NotContains(t, v, "do-not-record", "%s.%s", s.name, k)
			}
		}
	})
	t.Run("warm hit", func(t *testing.T) {
		const id = "5bf92f3577b34da6a3ce929d0e0e4736"
		// The success run left a warm container of this configuration.
		time.Sleep(2 * time.Second)
		require.Equal(t, 200, post(t, api+"/v1/skills/hello/run", id, `{"script":"scripts/echo.sh"}`))
		spans := fetch(t, query, id, "sandbox.run")
		require.Equal(t, "true", spans["sandbox.run"].tags["sandboxrun.warm"])
		require.NotContains(t, spans, "container.create")
	})
	t.Run("refusal", func(t *testing.T) {
		const id = "6bf92f3577b34da6a3ce929d0e0e4736"
		require.Equal(t, 403, post(t, api+"/v1/skills/hello/exec", id, `{"command":"curl http://example.com"}`))
		spans := fetch(t, query, id, "sandboxrun.run", "sandboxrun.policy.decide")
		require.Equal(t, "refused", spans["sandboxrun.run"].tags["sandboxrun.outcome"])
		require.Equal(t, "refused", spans["sandboxrun.policy.decide"].tags["error.type"])
		require.NotContains(t, spans, "sandbox.run", "nothing ran")
	})
	t.Run("egress denial", func(t *testing.T) {
		const id = "8bf92f3577b34da6a3ce929d0e0e4736"
		require.Equal(t, 200, post(t, api+"/v1/skills/fetcher/run", id, `{"script":"scripts/fetch.py"}`))
		spans := fetch(t, query, id, "sandboxrun.run")
		run := spans["sandboxrun.run"]
		i := slices.Index(run.events, "egress decision")
		require.GreaterOrEqual(t, i, 0, "events: %v", run.events)
		require.Equal(t, "denied.invalid", run.fields[i]["server.address"])
		require.Equal(t, "false", run.fields[i]["sandboxrun.egress.allowed"])
	})
	t.Run("timeout", func(t *testing.T) {
		const id = "7bf92f3577b34da6a3ce929d0e0e4736"
		post(t, api+"/v1/skills/hello/python", id, `{"code":"import time\ntime.sleep(30)","timeout":1}`)
		spans := fetch(t, query, id, "sandboxrun.run")
		require.Equal(t, "timeout", spans["sandboxrun.run"].tags["sandboxrun.outcome"])
		require.Equal(t, "true", spans["sandboxrun.run"].tags["sandboxrun.timed_out"])
		require.Equal(t, "124", spans["sandboxrun.run"].tags["sandboxrun.exit_code"])
	})
}
