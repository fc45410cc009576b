// Package client talks to a sandboxrun server (`sandboxrun serve`) over
// HTTP or a unix socket, for Go hosts that run skills remotely instead of
// embedding the Service. It links no container engine client: its wire
// types are its own, checked against server/openapi.json by its tests.
package client
