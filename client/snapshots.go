package client

import (
	"context"
	"time"
)

// Snapshot is a session's files at a moment (files only).
type Snapshot struct {
	ID        string    `json:"id"`
	Session   string    `json:"session"`
	Label     string    `json:"label,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Bytes     int64     `json:"bytes"`
	Files     int       `json:"files"`
}

var jsonHeader = map[string]string{"Content-Type": "application/json"}

// CreateSnapshot saves session id's files as they are now; label may be
// empty.
func (c *Client) CreateSnapshot(ctx context.Context, id, label string) (*Snapshot, error) {
	body, err := jsonBody(struct {
		Label string `json:"label,omitempty"`
	}{label})
	if err != nil {
		return nil, err
	}
	var s Snapshot
	if err := c.do(ctx, call{op: "createSnapshot", params: map[string]string{"id": id}, body: body, header: jsonHeader}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Snapshots lists session id's snapshots, oldest first.
func (c *Client) Snapshots(ctx context.Context, id string) ([]Snapshot, error) {
	var out struct {
		Snapshots []Snapshot `json:"snapshots"`
	}
	return out.Snapshots, c.do(ctx, call{op: "listSnapshots", params: map[string]string{"id": id}}, &out)
}

// DeleteSnapshot removes one snapshot of session id.
func (c *Client) DeleteSnapshot(ctx context.Context, id, snap string) error {
	return c.do(ctx, call{op: "deleteSnapshot", params: map[string]string{"id": id, "snap": snap}}, nil)
}

// Restore makes session id's workspace exactly the snapshot snap.
func (c *Client) Restore(ctx context.Context, id, snap string) (*Session, error) {
	body, err := jsonBody(struct {
		Snapshot string `json:"snapshot"`
	}{snap})
	if err != nil {
		return nil, err
	}
	var s Session
	if err := c.do(ctx, call{op: "restoreSnapshot", params: map[string]string{"id": id}, body: body, header: jsonHeader}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Fork makes a new session with the files of session from, as they are
// now (snap "") or as its snapshot snap holds them; ttl as CreateSession's.
func (c *Client) Fork(ctx context.Context, from, snap string, ttl time.Duration) (*Session, error) {
	type source struct {
		Session  string `json:"session"`
		Snapshot string `json:"snapshot,omitempty"`
	}
	body, err := jsonBody(struct {
		TTL  float64 `json:"ttl,omitempty"`
		From source  `json:"from"`
	}{ttl.Seconds(), source{from, snap}})
	if err != nil {
		return nil, err
	}
	var s Session
	if err := c.do(ctx, call{op: "createSession", body: body, header: jsonHeader}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
