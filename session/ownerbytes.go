package session

// OwnerBytes is what owner's live sessions hold now: their workspaces'
// regular files and what their snapshots alone hold (the bytes the store
// counts against its total), from the store's own counts, without a walk.
func (s *Store) OwnerBytes(owner string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for id, ss := range s.sessions {
		if ss.owner != owner {
			continue
		}
		if _, err := s.lookupLocked(owner, id); err == nil {
			n += ss.used + ss.snapBytes
		}
	}
	return n
}
