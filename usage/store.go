package usage

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// Options configure a Store.
type Options struct {
	// Path is the state file; "" keeps the counts in memory only.
	Path string
	// Windows are the windows counted (e.g. 1h and 24h); each is a fixed
	// span of the clock: a 1h window is each whole hour (UTC).
	Windows []time.Duration
	// Quotas is a label's quota by window; nil or an empty map for none.
	Quotas func(label string) map[time.Duration]Limits
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Store counts every tenant's use. It is safe for concurrent use.
type Store struct {
	o Options

	mu      sync.Mutex
	tenants map[string]*tenant
}

// tenant is one label's counts; pending are runs begun and not yet ended
// (not kept in the state file: a run cut off by a kill has no Result).
type tenant struct {
	Total   Figures            `json:"total"`
	Windows map[string]*bucket `json:"windows"`
	pending int64
}

// bucket is a window's counts since Start.
type bucket struct {
	Start time.Time `json:"start"`
	Used  Figures   `json:"used"`
}

// Open returns a Store with the counts of o.Path, when it exists.
func Open(o Options) (*Store, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Quotas == nil {
		o.Quotas = func(string) map[time.Duration]Limits { return nil }
	}
	o.Windows = slices.Clone(o.Windows)
	slices.Sort(o.Windows)
	s := &Store{o: o, tenants: map[string]*tenant{}}
	if o.Path != "" {
		t, err := readState(o.Path)
		if err != nil {
			return nil, err
		}
		s.tenants = t
	}
	return s, nil
}

// Ticket is a run let in by Begin; End it once with what it used.
type Ticket struct {
	s     *Store
	label string
	once  sync.Once
}

// Begin lets a run of label's in, or refuses it with a *QuotaError when a
// quota of label's has no room for it. Runs begun and not yet ended count
// against the runs quota.
func (s *Store) Begin(label string) (*Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	t := s.tenant(label)
	for _, w := range s.o.Windows {
		l, ok := s.o.Quotas(label)[w]
		if !ok {
			continue
		}
		b := t.bucket(w, now)
		if name, limit, used, reached := l.check(b.Used, t.pending); reached {
			return nil, &QuotaError{Label: label, Quota: name, Window: w, Limit: limit, Used: used, RetryAfter: b.Start.Add(w).Sub(now)}
		}
	}
	t.pending++
	return &Ticket{s: s, label: label}, nil
}

// End counts the run's use in the windows it ended in, and writes the
// state file; a nil run (no Result: refused, cancelled, cached) counts
// nothing. Only the first call counts.
func (k *Ticket) End(r *Run) (err error) {
	k.once.Do(func() { err = k.s.end(k.label, r) })
	return err
}

func (s *Store) end(label string, r *Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenant(label)
	t.pending--
	if r == nil {
		return nil
	}
	now := s.o.Now()
	for _, w := range s.o.Windows {
		b := t.bucket(w, now)
		b.Used.add(*r)
	}
	t.Total.add(*r)
	if s.o.Path == "" {
		return nil
	}
	return writeState(s.o.Path, s.tenants)
}

// Tenant is label's use now.
func (s *Store) Tenant(label string) Tenant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view(label, s.tenant(label))
}

// All is every tenant's use now, by label.
func (s *Store) All() []Tenant {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Tenant, 0, len(s.tenants))
	for label, t := range s.tenants {
		out = append(out, s.view(label, t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

func (s *Store) view(label string, t *tenant) Tenant {
	now := s.o.Now()
	v := Tenant{Label: label, Total: t.Total}
	quotas := s.o.Quotas(label)
	for _, w := range s.o.Windows {
		b := t.bucket(w, now)
		win := Window{Window: w.String(), WindowSeconds: w.Seconds(), Start: b.Start, End: b.Start.Add(w), Used: b.Used}
		if l, ok := quotas[w]; ok {
			win.Limits = &l
		}
		v.Windows = append(v.Windows, win)
	}
	return v
}

func (s *Store) tenant(label string) *tenant {
	t := s.tenants[label]
	if t == nil {
		t = &tenant{Windows: map[string]*bucket{}}
		s.tenants[label] = t
	}
	return t
}

// bucket is t's counts for the window of length w that now is in: a
// fresh one once the stored one has ended.
func (t *tenant) bucket(w time.Duration, now time.Time) *bucket {
	start := now.UTC().Truncate(w)
	key := windowKey(w)
	b := t.Windows[key]
	if b == nil || !b.Start.Equal(start) {
		b = &bucket{Start: start}
		t.Windows[key] = b
	}
	return b
}
