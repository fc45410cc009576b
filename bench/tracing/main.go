// Command tracing measures what OpenTelemetry tracing costs a run: the
// same script through one Service, runs alternating between tracing off
// (the no-op provider) and on (spans batched and exported over OTLP/HTTP to
// -endpoint, a local Jaeger or collector; by default a loopback sink that
// accepts and drops them), cold and with a warm pool. It prints p50 and
// p95 of each and the ratio on/off. Traffic goes to loopback only.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends/dockerbackend"
	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/internal/telemetry/otlp"
)

func main() {
	n := flag.Int("n", 20, "runs per row and mode")
	endpoint := flag.String("endpoint", "", "OTLP/HTTP endpoint on loopback, e.g. http://127.0.0.1:4318 (default: a sink that drops spans)")
	skills := flag.String("skills", "skills", "skills root")
	flag.Parse()
	if err := run(*n, *endpoint, *skills); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tracing:", err)
		os.Exit(1)
	}
}

func run(n int, endpoint, skills string) error {
	ctx := context.Background()
	if endpoint == "" {
		sink, err := startSink()
		if err != nil {
			return err
		}
		endpoint = sink
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
	if err != nil {
		return err
	}
	// Setup installs the provider; the bench switches between it and the
	// no-op one for each run, as a process with tracing off or on has.
	shutdown, err := otlp.Setup(ctx, otlp.Config{Enabled: true, Version: sandboxrun.Version, Exporter: exp})
	if err != nil {
		return err
	}
	defer func() { _ = shutdown(ctx) }()
	on := otel.GetTracerProvider()
	off := noop.NewTracerProvider()
	fmt.Printf("bench/tracing: %d runs per cell, hello scripts/echo.py, spans to %s\n", n, endpoint)
	fmt.Printf("%-6s %-5s %8s %8s\n", "pool", "trace", "p50", "p95")
	for _, warm := range []int{0, 2} {
		svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{skills}, WarmPool: warm, Backend: dockerbackend.New, Images: dockerbackend.Images()})
		if err != nil {
			return err
		}
		lat := map[bool][]time.Duration{}
		for i := range 2*n + 2 {
			traced := i%2 == 1
			if traced {
				otel.SetTracerProvider(on)
			} else {
				otel.SetTracerProvider(off)
			}
			began := time.Now()
			res, err := svc.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{Args: []byte(`{"name":"bench"}`)})
			d := time.Since(began)
			if err != nil {
				svc.Close()
				return err
			}
			if !res.Success {
				svc.Close()
				return fmt.Errorf("run failed: %s", res.Stderr)
			}
			if i >= 2 { // the first of each mode warms the image, the pool and the exporter
				lat[traced] = append(lat[traced], d)
			}
		}
		svc.Close()
		pool := "cold"
		if warm > 0 {
			pool = "warm"
		}
		for _, traced := range []bool{false, true} {
			name := "off"
			if traced {
				name = "on"
			}
			fmt.Printf("%-6s %-5s %8s %8s\n", pool, name, stats.MS(stats.Percentile(lat[traced], 50)), stats.MS(stats.Percentile(lat[traced], 95)))
		}
		fmt.Printf("%-6s ratio on/off p50 %.2f\n", pool, float64(stats.Percentile(lat[true], 50))/float64(stats.Percentile(lat[false], 50)))
	}
	return nil
}

// startSink accepts OTLP/HTTP exports on loopback and drops them.
func startSink() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), nil
}
