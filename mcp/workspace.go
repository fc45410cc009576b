package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
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
	door *sandboxrun.Door // the connections' caller, who owns their sessions

	mu     sync.Mutex
	byConn map[*mcpsdk.ServerSession]string // connection -> session id
	gone   sync.WaitGroup                   // removals of ended connections' sessions
}

func newWorkspaces(door *sandboxrun.Door) *workspaces {
	return &workspaces{door: door, byConn: map[*mcpsdk.ServerSession]string{}}
}

// errNoWorkspace is wrapped when the server keeps no sessions.
var errNoWorkspace = errors.New("no workspace")

// of returns the session id of the connection that made the call,
// creating the session on first use. With no connection (a call made
// outside a session) or no sessions on this server it fails with
// errNoWorkspace and the reason.
func (w *workspaces) of(req *mcpsdk.CallToolRequest) (string, error) {
	if err := w.door.SessionsOn(); err != nil {
		return "", fmt.Errorf("%w: %w", errNoWorkspace, err)
	}
	if req == nil || req.Session == nil {
		return "", fmt.Errorf("%w: the call came outside an MCP session", errNoWorkspace)
	}
	conn := req.Session
	w.mu.Lock()
	defer w.mu.Unlock()
	if id, ok := w.byConn[conn]; ok {
		return id, nil
	}
	info, err := w.door.CreateSession(0)
	if err != nil {
		return "", err
	}
	w.byConn[conn] = info.ID
	w.gone.Add(1)
	go func() {
		defer w.gone.Done()
		// The client is gone: so is its workspace.
		_ = conn.Wait()
		w.mu.Lock()
		delete(w.byConn, conn)
		w.mu.Unlock()
		_ = w.door.DeleteSession(info.ID)
	}()
	return info.ID, nil
}

// settle waits until the sessions of connections that ended are removed:
// a server that stops must not close the Service under them.
func (w *workspaces) settle() { w.gone.Wait() }

// runIn puts a run in the connection's workspace; a server without
// sessions runs it with none, as before sessions existed.
func (w *workspaces) runIn(req *mcpsdk.CallToolRequest, r *sandboxrun.Request) error {
	id, err := w.of(req)
	switch {
	case errors.Is(err, errNoWorkspace):
		return nil
	case err != nil:
		return err
	}
	r.Session = id
	return nil
}

// files is where a connection's file tools and runs work: its own session
// (workspaces), or a host folder the operator gave (folder).
type files interface {
	put(req *mcpsdk.CallToolRequest, p string, data []byte) (sandboxrun.FileInfo, error)
	get(req *mcpsdk.CallToolRequest, p string, limit int64) ([]byte, sandboxrun.FileEntry, error)
	list(req *mcpsdk.CallToolRequest, sub string) ([]sandboxrun.FileEntry, error)
	runIn(req *mcpsdk.CallToolRequest, r *sandboxrun.Request) error
	snapshot(req *mcpsdk.CallToolRequest, label string) (sandboxrun.Snapshot, error)
	restore(req *mcpsdk.CallToolRequest, snap string) error
	snapshots(req *mcpsdk.CallToolRequest) ([]sandboxrun.Snapshot, error)
}

func (w *workspaces) put(req *mcpsdk.CallToolRequest, p string, data []byte) (sandboxrun.FileInfo, error) {
	id, err := w.of(req)
	if err != nil {
		return sandboxrun.FileInfo{}, err
	}
	return w.door.PutFile(id, p, bytes.NewReader(data))
}

func (w *workspaces) get(req *mcpsdk.CallToolRequest, p string, limit int64) ([]byte, sandboxrun.FileEntry, error) {
	id, err := w.of(req)
	if err != nil {
		return nil, sandboxrun.FileEntry{}, err
	}
	f, e, err := w.door.OpenFile(id, p)
	if err != nil {
		return nil, e, err
	}
	defer f.Close()
	data, err := readAllMax(f, e.Size, limit, e.Path)
	return data, e, err
}

func (w *workspaces) list(req *mcpsdk.CallToolRequest, sub string) ([]sandboxrun.FileEntry, error) {
	id, err := w.of(req)
	if err != nil {
		return nil, err
	}
	return w.door.ListFiles(id, sub)
}
