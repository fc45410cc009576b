package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/internal/telemetry/otlp"
)

// tracing is the CLI's share of OpenTelemetry: the provider (when on) and
// the command's own span.
type tracing struct {
	on       bool // --trace
	span     trace.Span
	shutdown otlp.Shutdown
}

// start sets up tracing from --trace and the OTEL_* variables and opens
// the command's span. serve and mcp trace each request instead: a span as
// long as the server would hold every request's trace open.
func (t *tracing) start(cmd *cobra.Command) error {
	shutdown, err := otlp.Setup(cmd.Context(), otlp.Config{Enabled: t.on, Version: sandboxrun.Version, Getenv: os.Getenv})
	if err != nil {
		return withCode(exitEnv, err)
	}
	t.shutdown = shutdown
	switch cmd.Name() {
	case "serve", "mcp":
		return nil
	}
	ctx, span := telemetry.Start(cmd.Context(), cmd.CommandPath())
	t.span = span
	cmd.SetContext(ctx)
	return nil
}

// end closes the command's span with its exit status and flushes what is
// still to export, for a few seconds at most.
func (t *tracing) end(code int) {
	if t.span != nil {
		var err error
		if code != exitOK {
			err = silentExit(code)
		}
		telemetry.End(t.span, err, "exit_"+strconv.Itoa(code))
	}
	if t.shutdown != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = t.shutdown(ctx) // a trace that cannot be sent must not change the exit
	}
}
