package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/session"
)

// sessionOwner is who a connection with no token acts for (stdio, a
// server that takes no tokens): it owns their sandboxrun sessions, and,
// being no token's digest, has no uploaded skills (the skill store knows
// no such owner), so those connections reach operator skills only. A
// connection's session ids never leave the server: it finds its own by
// its MCP session.
const sessionOwner = "mcp"

// workspaces give each MCP connection a sandboxrun session of its own,
// made on first use and removed when the client disconnects, so that files
// written by one call (a tool, a run) are there for the next.
type workspaces struct {
	svc   *sandboxrun.Service
	owner string // the connections' owner, who owns their sessions

	mu     sync.Mutex
	byConn map[*mcpsdk.ServerSession]string // connection -> session id
}

func newWorkspaces(svc *sandboxrun.Service, owner string) *workspaces {
	return &workspaces{svc: svc, owner: owner, byConn: map[*mcpsdk.ServerSession]string{}}
}

// errNoWorkspace is wrapped when the server keeps no sessions.
var errNoWorkspace = errors.New("no workspace")

// of returns the store and the session id of the connection that made
// the call, creating the session on first use. With no connection (a call
// made outside a session) or no sessions on this server it fails with
// errNoWorkspace and the reason.
func (w *workspaces) of(req *mcpsdk.CallToolRequest) (*session.Store, string, error) {
	st, err := w.svc.Sessions()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", errNoWorkspace, err)
	}
	if req == nil || req.Session == nil {
		return nil, "", fmt.Errorf("%w: the call came outside an MCP session", errNoWorkspace)
	}
	conn := req.Session
	w.mu.Lock()
	defer w.mu.Unlock()
	if id, ok := w.byConn[conn]; ok {
		return st, id, nil
	}
	info, err := st.Create(w.owner, 0)
	if err != nil {
		return nil, "", err
	}
	w.byConn[conn] = info.ID
	go func() {
		// The client is gone: so is its workspace.
		_ = conn.Wait()
		w.mu.Lock()
		delete(w.byConn, conn)
		w.mu.Unlock()
		_ = st.Delete(w.owner, info.ID)
	}()
	return st, info.ID, nil
}

// runIn puts a run in the connection's workspace; a server without
// sessions runs it with none, as before sessions existed.
func (w *workspaces) runIn(req *mcpsdk.CallToolRequest, r *sandboxrun.Request) error {
	_, id, err := w.of(req)
	switch {
	case errors.Is(err, errNoWorkspace):
		return nil
	case err != nil:
		return err
	}
	r.Session, r.Owner = id, w.owner
	return nil
}

// files is where a connection's file tools and runs work: its own session
// (workspaces), or a host folder the operator gave (folder).
type files interface {
	put(req *mcpsdk.CallToolRequest, p string, data []byte) (session.FileInfo, error)
	get(req *mcpsdk.CallToolRequest, p string, limit int64) ([]byte, session.Entry, error)
	list(req *mcpsdk.CallToolRequest, sub string) ([]session.Entry, error)
	runIn(req *mcpsdk.CallToolRequest, r *sandboxrun.Request) error
	snapshot(req *mcpsdk.CallToolRequest, label string) (session.Snapshot, error)
	restore(req *mcpsdk.CallToolRequest, snap string) error
	snapshots(req *mcpsdk.CallToolRequest) ([]session.Snapshot, error)
}

func (w *workspaces) put(req *mcpsdk.CallToolRequest, p string, data []byte) (session.FileInfo, error) {
	st, id, err := w.of(req)
	if err != nil {
		return session.FileInfo{}, err
	}
	return st.PutFile(w.owner, id, p, bytes.NewReader(data))
}

func (w *workspaces) get(req *mcpsdk.CallToolRequest, p string, limit int64) ([]byte, session.Entry, error) {
	st, id, err := w.of(req)
	if err != nil {
		return nil, session.Entry{}, err
	}
	f, e, err := st.OpenFile(w.owner, id, p)
	if err != nil {
		return nil, e, err
	}
	defer f.Close()
	data, err := readAllMax(f, e.Size, limit, e.Path)
	return data, e, err
}

func (w *workspaces) list(req *mcpsdk.CallToolRequest, sub string) ([]session.Entry, error) {
	st, id, err := w.of(req)
	if err != nil {
		return nil, err
	}
	return st.ListFiles(w.owner, id, sub)
}
