// Package server is sandboxrun's HTTP front end: JSON over HTTP (and NDJSON or
// Server-Sent Events streams) for agent hosts, on top of one
// sandboxrun.Service. It adds only what a network front end needs: bearer
// authentication, bounded admission (a queue that answers 429 when full),
// Prometheus metrics, request logs and the OpenAPI document. Every step of an
// execution itself happens in the Service.
package server
