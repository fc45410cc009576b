package skillstore

import "time"

// bytesTTL is how long the store reuses what it counted of an owner's
// uploads: the stored_bytes check and each metrics scrape ask for it, and
// counting reads every version's metadata. This process's own commits and
// removals forget the owner's figure at once; another replica's, on a
// shared store, are seen within bytesTTL.
const bytesTTL = 2 * time.Second

// OwnerBytes is what owner's uploaded versions hold (their files' bytes,
// as each version's metadata says), counted at most bytesTTL ago.
func (s *Store) OwnerBytes(owner string) (int64, error) {
	od, err := ownerDir(owner)
	if err != nil {
		return 0, nil
	}
	now := s.now()
	if n, ok := s.counted.Get(od, now); ok {
		return n, nil
	}
	skills, err := s.List(owner)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, sk := range skills {
		for _, v := range sk.Versions {
			n += v.Bytes
		}
	}
	s.counted.Put(od, n, now)
	return n, nil
}
