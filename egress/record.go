package egress

import (
	"cmp"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

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
	// counts hosts past the first maxHosts.
	Hosts        []HostStats `json:"hosts,omitempty"`
	HostsOmitted int64       `json:"hosts_omitted,omitempty"`
}

// Record is everything the proxy decided, for the audit log.
type Record struct {
	Summary
	Decisions []Decision `json:"decisions"`
	// DecisionsOmitted counts decisions past the first maxDecisions; the
	// summary still counts them.
	DecisionsOmitted int64 `json:"decisions_omitted,omitempty"`
}

// Bounds on what a run can make the proxy remember.
const (
	maxDecisions = 1000
	maxHosts     = 256
)

type recorder struct {
	observe func(Decision)

	mu           sync.Mutex
	sum          Summary
	decisions    []Decision
	omitted      int64
	hosts        map[string]*HostStats
	hostsOmitted int64
}

func newRecorder(cfg Config, observe func(Decision)) *recorder {
	return &recorder{
		observe: observe,
		sum:     Summary{Allowlist: cfg.Allow.Strings()},
		hosts:   map[string]*HostStats{},
	}
}

// add records a finished decision.
func (r *recorder) add(d Decision) {
	r.mu.Lock()
	s := &r.sum
	s.Requests++
	if d.Allowed {
		s.Allowed++
	} else {
		s.Denied++
	}
	if d.Addr != "" {
		s.Connections++
	}
	if d.Exfiltration {
		s.ExfiltrationAttempts++
	}
	s.BytesUp += d.BytesUp
	s.BytesDown += d.BytesDown
	if len(r.decisions) < maxDecisions {
		r.decisions = append(r.decisions, d)
	} else {
		r.omitted++
	}
	key := net.JoinHostPort(d.Host, strconv.Itoa(int(d.Port)))
	h := r.hosts[key]
	if h == nil && len(r.hosts) < maxHosts {
		h = &HostStats{Host: d.Host, Port: d.Port}
		r.hosts[key] = h
	}
	if h == nil {
		r.hostsOmitted++
	} else {
		if d.Allowed {
			h.Allowed++
		} else {
			h.Denied++
			if h.Reason == "" {
				h.Reason = d.Reason
			}
		}
		h.BytesUp += d.BytesUp
		h.BytesDown += d.BytesDown
	}
	r.mu.Unlock()
	if r.observe != nil {
		r.observe(d)
	}
}

func (r *recorder) record(b *budget) Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := Record{Summary: r.sum, Decisions: slices.Clone(r.decisions), DecisionsOmitted: r.omitted}
	rec.Allowlist = slices.Clone(r.sum.Allowlist)
	if rec.Decisions == nil {
		rec.Decisions = []Decision{}
	}
	if b.connsHit.Load() {
		rec.LimitsHit = append(rec.LimitsHit, "connections")
	}
	if b.bytesHit.Load() {
		rec.LimitsHit = append(rec.LimitsHit, "bytes")
	}
	for _, h := range r.hosts {
		rec.Hosts = append(rec.Hosts, *h)
	}
	slices.SortFunc(rec.Hosts, func(a, b HostStats) int {
		return cmp.Or(
			cmp.Compare(b.Allowed+b.Denied, a.Allowed+a.Denied),
			cmp.Compare(a.Host, b.Host),
			cmp.Compare(a.Port, b.Port),
		)
	})
	rec.HostsOmitted = r.hostsOmitted
	return rec
}
