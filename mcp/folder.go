package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
)

// folder is where the file tools and runs work when the operator gave the
// server a host folder (WithWorkspace) instead of a session per
// connection: every connection shares it, and it outlives them all. The
// file tools reach it through sandboxrun.Folder, the sessions' own guards;
// runs mount it as a CLI run's --workspace is mounted, so whether a run may
// write it is decided as for one (the skill's allowed-tools Write and the
// policy's workspace.write), not by writable.
type folder struct {
	f   *sandboxrun.Folder
	err error // why the folder could not be opened, for every call
}

// openFolder opens dir for the door's caller (Door.OpenFolder); the folder
// is released when base ends. A folder that does not open leaves the
// server up, every file tool and run answering with the reason.
func openFolder(base context.Context, door *sandboxrun.Door, dir string, writable bool) *folder {
	f, err := door.OpenFolder(dir, writable)
	if err != nil {
		return &folder{err: fmt.Errorf("the server's workspace folder is unusable (%w): ask the operator to fix --workspace", err)}
	}
	context.AfterFunc(base, func() { _ = f.Close() })
	return &folder{f: f}
}

func (w *folder) put(_ *mcpsdk.CallToolRequest, p string, data []byte) (sandboxrun.FileInfo, error) {
	if w.err != nil {
		return sandboxrun.FileInfo{}, w.err
	}
	return w.f.PutFile(p, bytes.NewReader(data))
}

// get reads p, refusing more than limit bytes before reading them, and
// hashes what it read (a Folder does not hash: its files have no bound).
func (w *folder) get(_ *mcpsdk.CallToolRequest, p string, limit int64) ([]byte, sandboxrun.FileEntry, error) {
	if w.err != nil {
		return nil, sandboxrun.FileEntry{}, w.err
	}
	rc, e, err := w.f.OpenFile(p)
	if err != nil {
		return nil, e, err
	}
	defer rc.Close()
	data, err := readAllMax(rc, e.Size, limit, e.Path)
	if err != nil {
		return nil, e, err
	}
	sum := sha256.Sum256(data)
	e.SHA256, e.Size = hex.EncodeToString(sum[:]), int64(len(data))
	return data, e, nil
}

func (w *folder) list(_ *mcpsdk.CallToolRequest, sub string) ([]sandboxrun.FileEntry, error) {
	if w.err != nil {
		return nil, w.err
	}
	return w.f.ListFiles(sub)
}

// runIn mounts the folder at the run's /workspace. The Service checks it
// again (policy.ResolveWorkspace, the policy's workspace.roots) on every
// run, as for the CLI.
func (w *folder) runIn(_ *mcpsdk.CallToolRequest, r *sandboxrun.Request) error {
	if w.err != nil {
		return w.err
	}
	r.Workspace, r.Session = w.f.Dir(), ""
	return nil
}
