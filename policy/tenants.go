package policy

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"gopkg.in/yaml.v3"
)

// TenantRules share one server between the holders of its bearer tokens,
// each named by its token's label (the tokens file's, never the token):
//
//	tenants:
//	  fair_share: true      # round-robin between tokens waiting (default)
//	  operators: [ops]      # labels that may read every token's usage
//	  default:              # every token's share, unless labels says otherwise
//	    max_running: 2      # runs one token may hold at once (default: the server's)
//	    max_queued: 4       # runs one token may have waiting (default: the server's queue)
//	    quotas:             # each window a fixed span of the clock
//	      - {window: 1h, runs: 500, cpu_seconds: 1800, memory_gib_seconds: 3600}
//	      - {window: 24h, runs: 5000, egress_bytes: 10Gi}
//	    stored_bytes: 20Gi  # what its sessions and uploads may hold at once
//	  labels:
//	    ci: {max_running: 1, quotas: [{window: 1h, runs: 100}]}
//
// A label's entry replaces the default's values it sets (quotas as a
// whole list); the rest are the default's.
type TenantRules struct {
	FairShare Setting[bool]           `yaml:"fair_share" json:"fair_share"`
	Operators Setting[[]string]       `yaml:"operators" json:"operators"`
	Default   TenantShare             `yaml:"default" json:"default"`
	Labels    map[string]*TenantShare `yaml:"labels" json:"labels,omitempty"`
}

// TenantShare is one token's share: admission caps and quotas.
type TenantShare struct {
	MaxRunning Setting[Count]   `yaml:"max_running" json:"max_running"`
	MaxQueued  Setting[Count]   `yaml:"max_queued" json:"max_queued"`
	Quotas     Setting[[]Quota] `yaml:"quotas" json:"quotas"`
	// StoredBytes bounds a level, not a window: the bytes the token's
	// sessions (with what their snapshots alone hold) and uploads take at
	// once. An operation that would store more past it is refused.
	StoredBytes Setting[Size] `yaml:"stored_bytes" json:"stored_bytes"`
}

// Quota bounds what one token uses in each window of the clock (a
// window of 1h is each whole hour): runs started, CPU time, memory
// reserved (each run's memory limit times its wall time), egress bytes.
// Zero leaves a figure unbounded.
type Quota struct {
	Window           Duration `yaml:"window" json:"window"`
	Runs             int64    `yaml:"runs" json:"runs,omitempty"`
	CPUSeconds       float64  `yaml:"cpu_seconds" json:"cpu_seconds,omitempty"`
	MemoryGiBSeconds float64  `yaml:"memory_gib_seconds" json:"memory_gib_seconds,omitempty"`
	EgressBytes      Size     `yaml:"egress_bytes" json:"egress_bytes,omitempty"`
}

// Share is one label's effective share.
type Share struct {
	// MaxRunning and MaxQueued are 0 for no cap below the server's own.
	MaxRunning int
	MaxQueued  int
	Quotas     []Quota
	// StoredBytes is 0 for no bound.
	StoredBytes int64
}

// DefaultUsageWindows are the windows usage is kept for even when no
// quota names them: an hour and a day.
var DefaultUsageWindows = []time.Duration{time.Hour, 24 * time.Hour}

var (
	tenantKeys = []string{"fair_share", "operators", "default", "labels"}
	shareKeys  = []string{"max_running", "max_queued", "quotas", "stored_bytes"}
	quotaKeys  = []string{"window", "runs", "cpu_seconds", "memory_gib_seconds", "egress_bytes"}
	labelRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
)

// ValidLabel checks a token label: 1 to 63 lowercase letters, digits, '.',
// '_' or '-', starting with a letter or digit.
func ValidLabel(label string) error {
	if !labelRE.MatchString(label) {
		return fmt.Errorf("label %q: use 1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. team-a)", label)
	}
	return nil
}

// UnmarshalYAML refuses unknown keys.
func (r *TenantRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "tenants", tenantKeys); err != nil {
		return err
	}
	type plain TenantRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "tenants", err)
	}
	*r = TenantRules(v)
	return nil
}

// UnmarshalYAML refuses unknown keys.
func (s *TenantShare) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "tenants share", shareKeys); err != nil {
		return err
	}
	type plain TenantShare
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*s = TenantShare(v)
	return nil
}

// UnmarshalYAML refuses unknown keys.
func (q *Quota) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "quota", quotaKeys); err != nil {
		return err
	}
	type plain Quota
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "quota", err)
	}
	*q = Quota(v)
	return nil
}

func (r *TenantRules) setBuiltins() { r.FairShare.orBuiltin(true) }

func (r *TenantRules) validate() []error {
	var errs []error
	for _, l := range r.Operators.Value {
		if err := ValidLabel(l); err != nil {
			errs = append(errs, fmt.Errorf("line %d: tenants.operators: %w", r.Operators.Line, err))
		}
	}
	errs = append(errs, r.Default.validate("tenants.default")...)
	for _, l := range sortedKeys(r.Labels) {
		if err := ValidLabel(l); err != nil {
			errs = append(errs, fmt.Errorf("tenants.labels: %w", err))
		}
		if r.Labels[l] == nil {
			r.Labels[l] = &TenantShare{}
		}
		errs = append(errs, r.Labels[l].validate("tenants.labels."+l)...)
	}
	return errs
}

func (s *TenantShare) validate(where string) []error {
	var errs []error
	if s.StoredBytes.Value < 0 {
		errs = append(errs, fmt.Errorf("line %d: %s.stored_bytes: %s is negative; give a size such as 20Gi, or leave it out for none", s.StoredBytes.Line, where, s.StoredBytes.Value))
	}
	var seen []Duration
	for i, q := range s.Quotas.Value {
		at := fmt.Sprintf("line %d: %s.quotas[%d]", s.Quotas.Line, where, i)
		switch {
		case q.Window < Duration(time.Second):
			errs = append(errs, fmt.Errorf("%s: window %s: give one of at least 1s, e.g. 1h or 24h", at, q.Window))
		case slices.Contains(seen, q.Window):
			errs = append(errs, fmt.Errorf("%s: window %s is given twice; put its limits in one entry", at, q.Window))
		}
		seen = append(seen, q.Window)
		if q.Runs < 0 || q.CPUSeconds < 0 || q.MemoryGiBSeconds < 0 || q.EgressBytes < 0 {
			errs = append(errs, fmt.Errorf("%s: a negative limit; give a positive one, or leave it out for none", at))
		}
		if q.Runs == 0 && q.CPUSeconds == 0 && q.MemoryGiBSeconds == 0 && q.EgressBytes == 0 {
			errs = append(errs, fmt.Errorf("%s: bounds nothing; give runs, cpu_seconds, memory_gib_seconds or egress_bytes", at))
		}
	}
	return errs
}

// FairShareOn reports whether admission shares slots between tokens.
func (r *TenantRules) FairShareOn() bool { return !r.FairShare.Has() || r.FairShare.Value }

// IsOperator reports whether label may read every token's usage.
func (r *TenantRules) IsOperator(label string) bool {
	return label != "" && slices.Contains(r.Operators.Value, label)
}

// For is label's effective share: its entry's values over the default's.
func (r *TenantRules) For(label string) Share {
	s := r.Default
	if l := r.Labels[label]; l != nil {
		s.MaxRunning = l.MaxRunning.or(s.MaxRunning)
		s.MaxQueued = l.MaxQueued.or(s.MaxQueued)
		s.Quotas = l.Quotas.or(s.Quotas)
		s.StoredBytes = l.StoredBytes.or(s.StoredBytes)
	}
	return Share{MaxRunning: int(s.MaxRunning.Value), MaxQueued: int(s.MaxQueued.Value), Quotas: s.Quotas.Value, StoredBytes: int64(s.StoredBytes.Value)}
}

// UsageWindows are the windows usage is kept for: DefaultUsageWindows and
// every quota's, shortest first.
func (r *TenantRules) UsageWindows() []time.Duration {
	out := slices.Clone(DefaultUsageWindows)
	add := func(s *TenantShare) {
		for _, q := range s.Quotas.Value {
			if w := time.Duration(q.Window); !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	add(&r.Default)
	for _, s := range r.Labels {
		add(s)
	}
	slices.Sort(out)
	return out
}

func (r *TenantRules) entries() []Entry {
	out := []Entry{
		{"tenants.fair_share", fmt.Sprint(r.FairShareOn()), r.FairShare.from()},
		{"tenants.operators", listOr(r.Operators.Value, "none"), r.Operators.from()},
	}
	share := func(prefix, unset string, s *TenantShare) {
		count := func(key string, c Setting[Count]) {
			v := unset
			if c.Set {
				v = c.Value.String()
			}
			out = append(out, Entry{prefix + key, v, c.from()})
		}
		count("max_running", s.MaxRunning)
		count("max_queued", s.MaxQueued)
		for _, q := range s.Quotas.Value {
			out = append(out, Entry{prefix + "quotas." + q.Window.String(), q.describe(), s.Quotas.from()})
		}
		stored := unset
		if prefix == "tenants.default." {
			stored = "none"
		}
		if s.StoredBytes.Set {
			stored = s.StoredBytes.Value.String()
		}
		if s.StoredBytes.Set || prefix == "tenants.default." {
			out = append(out, Entry{prefix + "stored_bytes", stored, s.StoredBytes.from()})
		}
	}
	share("tenants.default.", "the server's", &r.Default)
	for _, l := range sortedKeys(r.Labels) {
		share("tenants.labels."+l+".", "the default's", r.Labels[l])
	}
	return out
}

func (q Quota) describe() string {
	var parts []string
	if q.Runs > 0 {
		parts = append(parts, fmt.Sprintf("runs %d", q.Runs))
	}
	if q.CPUSeconds > 0 {
		parts = append(parts, fmt.Sprintf("cpu_seconds %g", q.CPUSeconds))
	}
	if q.MemoryGiBSeconds > 0 {
		parts = append(parts, fmt.Sprintf("memory_gib_seconds %g", q.MemoryGiBSeconds))
	}
	if q.EgressBytes > 0 {
		parts = append(parts, "egress_bytes "+q.EgressBytes.String())
	}
	return listOr(parts, "none")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
