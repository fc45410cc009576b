package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun"
)

// listTimeout bounds how long a replica waits for a peer's list of the
// caller's sessions; a peer that takes longer is named unreachable.
const listTimeout = 10 * time.Second

// maxPeerList bounds a peer's answer to a list: far above what the
// per-token session limit lets one token keep.
const maxPeerList = 16 << 20

// sessionList is GET /v1/sessions's answer: the caller's sessions on every
// replica, and the replicas that did not answer. Partial is true when the
// list may lack sessions: a replica did not answer, the server does not
// know its peers (serve without --replicas), or the request came from a
// peer, which gathers the lists itself.
type sessionList struct {
	Sessions    []json.RawMessage `json:"sessions"`
	Partial     bool              `json:"partial"`
	Unreachable []string          `json:"unreachable"`
}

// gather is the answer to a list: this replica's sessions (own), and, on
// a request from the caller, the caller's sessions on every peer, asked
// at once with the caller's own token, replica by replica in the order of
// their numbers. A request that carries ForwardedHeader is answered with
// this replica's sessions alone, so a list never fans out twice. Whoever
// sets that header gains nothing: each replica checks the token and lists
// that token's sessions only; a caller who sets it gets a shorter list,
// marked partial.
func (f *forwarder) gather(r *http.Request, own []sandboxrun.SessionInfo) sessionList {
	mine := make([]json.RawMessage, 0, len(own))
	for _, s := range own {
		b, err := json.Marshal(s)
		if err == nil {
			mine = append(mine, b)
		}
	}
	ans := sessionList{Sessions: mine, Unreachable: []string{}}
	if f == nil {
		return ans
	}
	if r.Header.Get(ForwardedHeader) != "" || f.c.Count == 0 {
		ans.Partial = true
		return ans
	}
	names := f.c.names()
	lists := make([][]json.RawMessage, len(names))
	failed := make([]bool, len(names))
	var wg sync.WaitGroup
	for i, p := range names {
		if p == f.c.Self {
			lists[i] = mine
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if lists[i], err = f.listOn(r, p); err != nil {
				failed[i] = true
				f.log.Warn("a peer did not list the caller's sessions", "peer", p, "replica", f.c.Self, "err", err)
			}
		}()
	}
	wg.Wait()
	all := []json.RawMessage{}
	for i, p := range names {
		if failed[i] {
			ans.Unreachable = append(ans.Unreachable, p)
		}
		all = append(all, lists[i]...)
	}
	ans.Sessions = all
	ans.Partial = len(ans.Unreachable) > 0
	return ans
}

// listOn asks replica peer for the sessions of the token r carries.
func (f *forwarder) listOn(r *http.Request, peer string) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(r.Context(), listTimeout)
	defer cancel()
	var body struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if err := f.askPeer(ctx, peer, "/v1/sessions", r.Header.Get("Authorization"), maxPeerList, &body); err != nil {
		return nil, err
	}
	return body.Sessions, nil
}

// askPeer GETs path of replica peer as the token auth carries, marked
// ForwardedHeader (the peer answers with its own figures alone), and
// decodes at most limit bytes of its 200 answer into out.
func (f *forwarder) askPeer(ctx context.Context, peer, path, auth string, limit int64, out any) error {
	u, err := f.c.peer(peer)
	if err != nil {
		return err
	}
	u.Path = path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set(ForwardedHeader, f.c.Self)
	resp, err := f.peers.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, limit)).Decode(out); err != nil {
		return fmt.Errorf("reading its answer to %s: %w", path, err)
	}
	return nil
}
