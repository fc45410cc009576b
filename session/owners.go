package session

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The store makes every entry of its workspaces and snapshots itself, as
// this process, without a set-id bit (a change layer's modes are masked to
// the permission bits). So it can vouch for a workspace's owner and its
// bytes (Lease.Facts) without a walk at each run, unless Open found an
// entry it did not make so (a server run before as another user, a file
// put there by hand): then it vouches for no workspace (Store.foreign).

// ours reports whether fi is an entry the store could have made: owned by
// this process's user and group, with no set-id bit.
func ours(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid() &&
		fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) == 0
}

// allOurs walks r (no link followed) and reports whether every entry is
// ours.
func allOurs(r *os.Root) bool {
	all := true
	_ = fs.WalkDir(r.FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			all = false
			return fs.SkipAll
		}
		fi, err := d.Info()
		if err != nil || !ours(fi) {
			all = false
			return fs.SkipAll
		}
		return nil
	})
	return all
}

// factsOf are what the store vouches for the workspace dir of ss (held by
// the caller), or nil when it cannot vouch.
func (s *Store) factsOf(dir string, used int64) *sandbox.WorkspaceFacts {
	s.mu.Lock()
	foreign := s.foreign
	s.mu.Unlock()
	fi, err := os.Lstat(dir)
	if foreign || err != nil || !ours(fi) {
		return nil
	}
	return &sandbox.WorkspaceFacts{Bytes: used, UID: os.Geteuid(), GID: os.Getegid(), Uniform: true}
}
