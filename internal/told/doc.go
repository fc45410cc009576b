// Package told says the host's places as a remote caller (the HTTP API, an
// MCP client) knows them, and renders the Service's messages, errors and
// limits through those names: it is internal/where's Namer for callers who
// are never shown a folder of the host. The Service decides which places a
// request has (its skill, its workspace, the stores); this package only
// names them, and checks that no message still holds one as plain text.
package told
