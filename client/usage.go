package client

import (
	"context"
	"net/url"
	"time"
)

// Usage is what the caller's token used (or, in UsageAll, one token's),
// by its label: in each window of the clock now running, with the
// window's quota, and in all.
type Usage struct {
	// Label names the token (the tokens file's label); never the token.
	Label   string        `json:"label"`
	Windows []UsageWindow `json:"windows"`
	Total   UsageFigures  `json:"total"`
	// Stored is what the token keeps on the server now; nil from a server
	// that does not say.
	Stored *UsageStored `json:"stored,omitempty"`
}

// UsageStored is a level, not a window's sum: the bytes the token's
// sessions (with what their snapshots alone hold) and uploads take now,
// and its stored_bytes quota (0: none). At or past Limit, a new session,
// file, snapshot, upload or run into a session is refused with 429 and no
// RetryAfter: deleting frees room, waiting does not.
type UsageStored struct {
	SessionBytes int64 `json:"session_bytes"`
	UploadBytes  int64 `json:"upload_bytes"`
	Bytes        int64 `json:"bytes"`
	Limit        int64 `json:"limit,omitempty"`
}

// UsageWindow is a token's use in the current window of one length; End
// is when the next begins (a quota refusal's Retry-After points there).
type UsageWindow struct {
	Window        string       `json:"window"`
	WindowSeconds float64      `json:"window_seconds"`
	Start         time.Time    `json:"start"`
	End           time.Time    `json:"end"`
	Used          UsageFigures `json:"used"`
	Limits        *UsageLimits `json:"limits,omitempty"`
}

// UsageFigures are runs, CPU, memory and egress used. CPUTimeMS is the
// sum of the runs' Result.CPUTimeMS.
type UsageFigures struct {
	Runs             int64   `json:"runs"`
	CPUTimeMS        int64   `json:"cpu_time_ms"`
	MemoryMiBMS      int64   `json:"memory_mib_ms"`
	MemoryGiBSeconds float64 `json:"memory_gib_seconds"`
	EgressBytes      int64   `json:"egress_bytes"`
}

// UsageLimits are a window's quota; zero is unbounded.
type UsageLimits struct {
	Runs             int64   `json:"runs,omitempty"`
	CPUSeconds       float64 `json:"cpu_seconds,omitempty"`
	MemoryGiBSeconds float64 `json:"memory_gib_seconds,omitempty"`
	EgressBytes      int64   `json:"egress_bytes,omitempty"`
}

// Usage returns the caller's token's use. A run refused by a quota is an
// *Error with status 429 (ErrBusy) whose Message names the quota and
// whose RetryAfter is when the next window begins.
func (c *Client) Usage(ctx context.Context) (*Usage, error) {
	var u Usage
	if err := c.do(ctx, call{op: "getUsage"}, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// UsageAll returns every token's use, by label: for a token the server's
// policy lists under tenants.operators (ErrRefused for another).
func (c *Client) UsageAll(ctx context.Context) ([]Usage, error) {
	var out struct {
		Tenants []Usage `json:"tenants"`
	}
	return out.Tenants, c.do(ctx, call{op: "getUsage", query: url.Values{"all": {"true"}}}, &out)
}
