package egress

import (
	"cmp"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
)

// Bounds on what a run can make the proxy remember.
const (
	maxDecisions = 1000
	maxHosts     = 256
)

type recorder struct {
	observe func(egresslog.Decision)
	redact  *redactor

	mu           sync.Mutex
	sum          egresslog.Summary
	decisions    []egresslog.Decision
	omitted      int64
	hosts        map[string]*egresslog.HostStats
	hostsOmitted int64
}

func newRecorder(cfg Config, observe func(egresslog.Decision)) *recorder {
	return &recorder{
		observe: observe,
		redact:  newRedactor(cfg.Secrets),
		sum:     egresslog.Summary{Allowlist: cfg.Allow.Strings()},
		hosts:   map[string]*egresslog.HostStats{},
	}
}

// add records a finished decision, its placeholders and secret values
// redacted, and returns what it recorded.
func (r *recorder) add(d egresslog.Decision) egresslog.Decision {
	r.redact.decision(&d)
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
		h = &egresslog.HostStats{Host: d.Host, Port: d.Port}
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
	return d
}

func (r *recorder) record(b *budget) egresslog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := egresslog.Record{Summary: r.sum, Decisions: slices.Clone(r.decisions), DecisionsOmitted: r.omitted}
	rec.Allowlist = slices.Clone(r.sum.Allowlist)
	if rec.Decisions == nil {
		rec.Decisions = []egresslog.Decision{}
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
	slices.SortFunc(rec.Hosts, func(a, b egresslog.HostStats) int {
		return cmp.Or(
			cmp.Compare(b.Allowed+b.Denied, a.Allowed+a.Denied),
			cmp.Compare(a.Host, b.Host),
			cmp.Compare(a.Port, b.Port),
		)
	})
	rec.HostsOmitted = r.hostsOmitted
	return rec
}
