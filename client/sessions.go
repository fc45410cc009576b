package client

import (
	"context"
	"errors"
	"io"
	"net/url"
	"time"
)

// CreateSession makes a workspace kept across calls. ttl is its idle time
// before the server removes it; zero takes the policy's default.
func (c *Client) CreateSession(ctx context.Context, ttl time.Duration) (*Session, error) {
	var req struct {
		TTL float64 `json:"ttl,omitempty"`
	}
	req.TTL = ttl.Seconds()
	body, err := jsonBody(req)
	if err != nil {
		return nil, err
	}
	var s Session
	if err := c.do(ctx, call{op: "createSession", body: body, header: map[string]string{"Content-Type": "application/json"}}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// WithSession creates a session, calls fn with it and deletes it when fn
// returns, whatever fn returned; the deletion outlives ctx's cancellation.
func (c *Client) WithSession(ctx context.Context, ttl time.Duration, fn func(*Session) error) (err error) {
	s, err := c.CreateSession(ctx, ttl)
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := c.DeleteSession(dctx, s.ID); derr != nil && !errors.Is(derr, ErrNotFound) {
			err = errors.Join(err, derr)
		}
	}()
	return fn(s)
}

// Sessions lists the caller's sessions on every replica. When the list
// may lack some (a replica did not answer) it returns the sessions it got
// and a *PartialListError naming the replicas that did not answer.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var out struct {
		Sessions    []Session `json:"sessions"`
		Partial     bool      `json:"partial"`
		Unreachable []string  `json:"unreachable"`
	}
	if err := c.do(ctx, call{op: "listSessions"}, &out); err != nil {
		return nil, err
	}
	if out.Partial {
		return out.Sessions, &PartialListError{Unreachable: out.Unreachable}
	}
	return out.Sessions, nil
}

// Session returns one session.
func (c *Client) Session(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.do(ctx, call{op: "getSession", params: map[string]string{"id": id}}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSession removes a session: a run in it is cancelled, its files
// removed.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.do(ctx, call{op: "deleteSession", params: map[string]string{"id": id}}, nil)
}

// Files lists a session's workspace, or the folder dir of it when dir is
// not empty. Links are shown, never followed.
func (c *Client) Files(ctx context.Context, id, dir string) ([]FileEntry, error) {
	var q url.Values
	if dir != "" {
		q = url.Values{"path": {dir}}
	}
	var out struct {
		Files []FileEntry `json:"files"`
	}
	return out.Files, c.do(ctx, call{op: "listFiles", params: map[string]string{"id": id}, query: q}, &out)
}

// PutFile writes one file into the workspace, making the folders on the
// way. path is relative and clean (out/report.csv).
func (c *Client) PutFile(ctx context.Context, id, path string, content io.Reader) (*StoredFile, error) {
	var f StoredFile
	err := c.do(ctx, call{op: "putFile", params: map[string]string{"id": id, "path": path}, body: content,
		header: map[string]string{"Content-Type": "application/octet-stream"}}, &f)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// GetFile opens one file of the workspace; the caller closes it.
func (c *Client) GetFile(ctx context.Context, id, path string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, call{op: "getFile", params: map[string]string{"id": id, "path": path}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// DeleteFile removes a file, a link (never its target) or a folder with
// what it holds.
func (c *Client) DeleteFile(ctx context.Context, id, path string) error {
	return c.do(ctx, call{op: "deleteFile", params: map[string]string{"id": id, "path": path}}, nil)
}

// PutTar unpacks a tar of regular files and folders into the workspace,
// all or nothing.
func (c *Client) PutTar(ctx context.Context, id string, tar io.Reader) ([]StoredFile, error) {
	var out struct {
		Files []StoredFile `json:"files"`
	}
	err := c.do(ctx, call{op: "putTar", params: map[string]string{"id": id}, body: tar,
		header: map[string]string{"Content-Type": "application/x-tar"}}, &out)
	return out.Files, err
}

// GetTar streams the whole workspace as a tar (links as links); the caller
// closes it. A tar cut short (no end marker) means the server failed
// while writing it.
func (c *Client) GetTar(ctx context.Context, id string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, call{op: "listFiles", params: map[string]string{"id": id},
		header: map[string]string{"Accept": "application/x-tar"}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
