package sandboxrun

import (
	"maps"
	"sort"
	"sync"

	"github.com/sandboxrun/sandboxrun/session"
	"github.com/sandboxrun/sandboxrun/usage"
)

// StoredUsage is what a token's sessions and uploads hold now, and its
// stored_bytes quota.
type StoredUsage = usage.Stored

// tenantOwners maps each token label to its owner (the token's digest):
// the policy's stored_bytes quota names a label, the stores count by
// owner. The server tells it every token's at start (KnowTenants); a
// caller's door tells it again.
type tenantOwners struct {
	mu sync.Mutex
	m  map[string]string
}

func (t *tenantOwners) learn(label, owner string) {
	if label == "" || owner == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]string{}
	}
	t.m[label] = owner
}

func (t *tenantOwners) all() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.m)
}

// KnowTenants tells the Service each token's owner by label (the server's
// tokens file), so that every token's stored bytes are in the usage and
// the metrics from the start, not only once it has called.
func (s *Service) KnowTenants(owners map[string]string) {
	for label, owner := range owners {
		s.owners.learn(label, owner)
	}
}

// storedOf is what owner's sessions and uploads hold now, with label's
// stored_bytes quota: this replica's sessions, and elsewhere's (the
// caller's sessions on other replicas; nil: none asked).
func (s *Service) storedOf(owner, label string, elsewhere func() int64) usage.Stored {
	var st usage.Stored
	if s.sessions != nil {
		st.SessionBytes = s.sessions.OwnerBytes(owner)
	}
	if elsewhere != nil {
		st.SessionBytes += elsewhere()
	}
	if up, err := s.skillStore(); err == nil {
		st.UploadBytes, _ = up.OwnerBytes(owner)
	}
	st.Bytes = st.SessionBytes + st.UploadBytes
	st.Limit = s.pol.Tenants.For(label).StoredBytes
	return st
}

// checkStored refuses an operation of c's that would store more (a new
// session or fork, a file, an upload, a snapshot, a run into a session)
// once its token holds its stored_bytes quota, its sessions on other
// replicas counted (c.OtherReplicas); adding is what the operation is
// known to add (0: unknown). A caller without a label, or a label without
// the quota, is not bounded here.
func (s *Service) checkStored(c Caller, adding int64) error {
	if c.Label == "" || s.pol.Tenants.For(c.Label).StoredBytes <= 0 {
		return nil
	}
	st := s.storedOf(c.Owner, c.Label, c.OtherReplicas)
	err := usage.CheckStored(c.Label, st.Limit, st.Bytes, adding)
	if err != nil {
		s.observeRefusal(c.Label, usage.QuotaStoredBytes)
	}
	return err
}

// StoredByTenant is every known token's stored bytes now, by label (the
// metrics' gauge).
func (s *Service) StoredByTenant() map[string]int64 {
	out := map[string]int64{}
	for label, owner := range s.owners.all() {
		out[label] = s.storedOf(owner, label, nil).Bytes
	}
	return out
}

// withStored adds to ts the stored bytes of each label whose owner is
// known, and a label that stores bytes without having run.
func (s *Service) withStored(ts []usage.Tenant) []usage.Tenant {
	owners := s.owners.all()
	seen := map[string]bool{}
	for i := range ts {
		seen[ts[i].Label] = true
		if owner, ok := owners[ts[i].Label]; ok {
			st := s.storedOf(owner, ts[i].Label, nil)
			ts[i].Stored = &st
		}
	}
	for label, owner := range owners {
		if st := s.storedOf(owner, label, nil); !seen[label] && st.Bytes > 0 {
			u := s.usage.Tenant(label)
			u.Stored = &st
			ts = append(ts, u)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Label < ts[j].Label })
	return ts
}

// storeMore refuses the door's operation that would store more once the
// caller's token holds its stored_bytes quota (a *QuotaError, 429).
func (d *Door) storeMore(adding int64) error {
	return d.svc.checkStored(d.c, adding)
}

// forkBytes is what a fork of the caller's session from adds: its
// workspace's bytes (a fork of a snapshot: unknown, 0).
func (d *Door) forkBytes(st *session.Store, from, snap string) int64 {
	if snap != "" || d.c.Label == "" {
		return 0
	}
	info, err := st.Get(d.c.Owner, from)
	if err != nil {
		return 0
	}
	return info.BytesUsed
}
