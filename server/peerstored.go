package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/caller"
)

// A token's stored_bytes quota counts its sessions on every replica: a
// replica asks its peers for the caller's session bytes (GET /v1/usage
// with the caller's own token, marked ForwardedHeader so the peer answers
// with its own figures alone) when a check needs them.
const (
	// peerStoredTTL is how long a replica reuses its peers' figure for a
	// token before asking again: a burst of writes asks once.
	peerStoredTTL = 2 * time.Second
	// peerStoredTimeout bounds one ask; a peer that does not answer in
	// time counts as holding what it last said (nothing, if it never
	// answered), and is logged: its sessions are still on its disk.
	peerStoredTimeout = 2 * time.Second
	// maxPeerUsage bounds a peer's usage answer.
	maxPeerUsage = 1 << 20
)

// peerKey names what one peer last said of one owner's sessions
// (forwarder.lastSaid): a few entries per token of the tokens file.
type peerKey struct{ owner, peer string }

// elsewhere is what the sessions of owner, whose request carried the
// Authorization header auth, hold on every other replica, asked at once; 0
// on a single server. It is called while a request is served, or later by
// an MCP connection of the same token: its asks have their own deadline.
func (f *forwarder) elsewhere(auth, owner string) int64 {
	if f.c.Count == 0 {
		return 0
	}
	now := time.Now()
	if n, ok := f.stored.Get(owner, now); ok {
		return n
	}
	names := f.c.names()
	figures := make([]int64, len(names))
	var wg sync.WaitGroup
	for i, p := range names {
		if p == f.c.Self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := peerKey{owner, p}
			n, err := f.sessionBytesOn(auth, p)
			if err != nil {
				last, _ := f.lastSaid.Load(key)
				n, _ = last.(int64)
				f.log.Warn("a peer did not tell the caller's session bytes; its last answer counts for this stored_bytes check",
					"peer", p, "replica", f.c.Self, "bytes", n, "err", err)
			} else {
				f.lastSaid.Store(key, n)
			}
			figures[i] = n
		}()
	}
	wg.Wait()
	var sum int64
	for _, n := range figures {
		sum += n
	}
	f.stored.Put(owner, sum, now)
	return sum
}

// sessionBytesOn asks replica peer what the sessions of the token auth
// carries hold there.
func (f *forwarder) sessionBytesOn(auth, peer string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), peerStoredTimeout)
	defer cancel()
	var body struct {
		Stored *struct {
			SessionBytes int64 `json:"session_bytes"`
		} `json:"stored"`
	}
	if err := f.askPeer(ctx, peer, "/v1/usage", auth, maxPeerUsage, &body); err != nil {
		return 0, err
	}
	if body.Stored == nil {
		return 0, nil
	}
	return max(body.Stored.SessionBytes, 0), nil
}

// withPeers is r saying, for the Service's door, how to ask the peers what
// r's token holds in sessions on them (a replicated server only).
func (f *forwarder) withPeers(r *http.Request) *http.Request {
	if f.c.Count == 0 {
		return r
	}
	auth, owner := r.Header.Get("Authorization"), caller.Owner(r.Context())
	return r.WithContext(caller.WithOtherReplicas(r.Context(), func() int64 { return f.elsewhere(auth, owner) }))
}
