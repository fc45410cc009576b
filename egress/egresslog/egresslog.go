package egresslog

import "time"

// Decision is one request the proxy judged: a CONNECT tunnel or a plain
// HTTP request. JSON field names are part of the audit log.
type Decision struct {
	Time time.Time `json:"time"`
	// Method is CONNECT for a tunnel, else the HTTP method forwarded.
	Method string `json:"method"`
	Host   string `json:"host"`
	Port   uint16 `json:"port"`
	// Allowed is the policy's verdict; an allowed request can still fail
	// upstream (Status 502, Reason set).
	Allowed bool `json:"allowed"`
	// Reason says why it was denied, or how an allowed one failed or was
	// cut (a limit, the idle timeout).
	Reason string `json:"reason,omitempty"`
	// Addr is the address connected to.
	Addr string `json:"addr,omitempty"`
	// Status is the HTTP status the sandbox got: the proxy's own (200 for
	// an opened tunnel, 403, 429, 502) or the forwarded server's.
	Status int `json:"status,omitempty"`
	// BytesUp went from the sandbox to the host, BytesDown back, counted
	// on the upstream connection (TLS records, or HTTP with headers).
	BytesUp    int64 `json:"bytes_up"`
	BytesDown  int64 `json:"bytes_down"`
	DurationMS int64 `json:"duration_ms"`
	// Intercepted is true for a tunnel whose TLS the proxy ended (its
	// host carries a secret or an HTTP rule) and for each request in it.
	// Path is the path of such a request or of a plain-HTTP one (never
	// its query).
	Intercepted bool   `json:"intercepted,omitempty"`
	Path        string `json:"path,omitempty"`
	// Secrets name the secrets the proxy put in the request (never
	// their values).
	Secrets []string `json:"secrets,omitempty"`
	// Exfiltration is true when the request was refused for carrying a
	// secret's placeholder where the secret does not go.
	Exfiltration bool `json:"exfiltration,omitempty"`
}

// HostStats sums the decisions about one host and port.
type HostStats struct {
	Host      string `json:"host"`
	Port      uint16 `json:"port"`
	Allowed   int64  `json:"allowed"`
	Denied    int64  `json:"denied"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
	// Reason is why the first denial happened.
	Reason string `json:"reason,omitempty"`
}

// Summary is a run's egress at a glance, for the Result. JSON field names
// are part of the interface.
type Summary struct {
	// Allowlist is what the run could reach.
	Allowlist []string `json:"allowlist"`
	// Requests were judged; Allowed and Denied split them.
	Requests int64 `json:"requests"`
	Allowed  int64 `json:"allowed"`
	Denied   int64 `json:"denied"`
	// Connections is how many upstream connections were opened.
	Connections int64 `json:"connections"`
	BytesUp     int64 `json:"bytes_up"`
	BytesDown   int64 `json:"bytes_down"`
	// ExfiltrationAttempts counts requests refused for carrying a
	// secret's placeholder where it does not go.
	ExfiltrationAttempts int64 `json:"exfiltration_attempts,omitempty"`
	// LimitsHit names the limits the run reached: connections, bytes.
	LimitsHit []string `json:"limits_hit,omitempty"`
	// Hosts sums per host and port, most requests first; HostsOmitted
	// counts hosts past the proxy's bound (256).
	Hosts        []HostStats `json:"hosts,omitempty"`
	HostsOmitted int64       `json:"hosts_omitted,omitempty"`
}

// Record is everything the proxy decided, for the audit log.
type Record struct {
	Summary
	Decisions []Decision `json:"decisions"`
	// DecisionsOmitted counts decisions past the proxy's bound (1000); the
	// summary still counts them.
	DecisionsOmitted int64 `json:"decisions_omitted,omitempty"`
}
