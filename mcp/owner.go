package mcp

import (
	"net/http"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/caller"
)

// byOwner serves each owner's Streamable HTTP connections from a server of
// its own, built on its first request: its tools and resources resolve
// skills as that owner (the operator's and its uploads) and its workspaces
// are that owner's sessions, so per-token quotas apply. The owner is the
// one the server's authentication put in the request (internal/caller):
// a token's digest, or none (no tokens), who acts as sessionOwner. Owners
// are the tokens file's, so the servers are few; they live as long as the
// handler.
type byOwner struct {
	svc *sandboxrun.Service
	o   options

	mu      sync.Mutex
	servers map[string]*mcpsdk.Server // owner -> its server
}

// ownerOf is who r acts for.
func ownerOf(r *http.Request) string {
	if o := caller.Owner(r.Context()); o != "" {
		return o
	}
	return sessionOwner
}

// server is the SDK's getServer: the server of r's owner, which a session
// r opens belongs to for its whole life.
func (b *byOwner) server(r *http.Request) *mcpsdk.Server {
	owner := ownerOf(r)
	b.mu.Lock()
	defer b.mu.Unlock()
	srv, ok := b.servers[owner]
	if !ok {
		// A token's label is its own: one owner, one label.
		srv, _ = newServer(b.svc, b.o, sandboxrun.Caller{Owner: owner, Label: caller.Label(r.Context()), Remote: true,
			OtherReplicas: caller.OtherReplicas(r.Context())})
		b.servers[owner] = srv
	}
	return srv
}

// opened reports whether owner's server holds the MCP session id.
func (b *byOwner) opened(owner, id string) bool {
	b.mu.Lock()
	srv := b.servers[owner]
	b.mu.Unlock()
	if srv == nil {
		return false
	}
	for ss := range srv.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// sessionIDHeader names a request's MCP session (Streamable HTTP).
const sessionIDHeader = "Mcp-Session-Id"

// guard lets a request naming an MCP session through only when the session
// was opened by the request's owner. The SDK finds a session by its id
// alone, whichever server opened it: a caller with another token who
// learned the id would act in it, for its owner. The refusal is the SDK's
// own answer to an id it does not know, so it tells nothing of sessions
// that are not the caller's; nothing runs.
func (b *byOwner) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(sessionIDHeader); id != "" && !b.opened(ownerOf(r), id) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}
