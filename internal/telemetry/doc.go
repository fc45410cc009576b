// Package telemetry sets up OpenTelemetry tracing for sandboxrun: one
// trace per request, from the front end (HTTP, MCP tool call, CLI command)
// through the Service to the backend's container steps. It is off by
// default, and then every span is the global no-op provider's, which costs
// next to nothing; Setup turns it on from a flag or the standard OTEL_*
// variables and exports over OTLP/HTTP.
package telemetry
