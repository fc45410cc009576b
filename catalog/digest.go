package catalog

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// digestCache keeps the digest of each operator skill folder until the
// folder changes: a run stats the folder's entries (a signature of their
// paths, modes, sizes, times and inodes) and sums their bytes only when
// that signature moved. The zero value is ready.
type digestCache struct {
	mu sync.Mutex
	m  map[string]cachedDigest
}

type cachedDigest struct {
	sig    [sha256.Size]byte
	digest string
}

// of is the digest of the skill folder dir (skillstore.Digest).
func (c *digestCache) of(dir string) (string, error) {
	sig, err := folderSignature(dir)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if d, ok := c.m[dir]; ok && d.sig == sig {
		c.mu.Unlock()
		return d.digest, nil
	}
	c.mu.Unlock()
	digest, err := skillstore.Digest(dir)
	if err != nil {
		return "", err
	}
	// The folder may have changed while it was summed; then the next run
	// sees a new signature and sums it again.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedDigest{}
	}
	c.m[dir] = cachedDigest{sig: sig, digest: digest}
	return digest, nil
}

// folderSignature hashes what a change to the folder's content changes:
// each entry's path, mode, size, modification and change times and inode
// (a rename, a chmod or an edit keeping the mtime still moves the ctime).
func folderSignature(dir string) ([sha256.Size]byte, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(h, "%s\x00%v\x00%d\x00%d\x00", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			_, _ = fmt.Fprintf(h, "%d\x00%d\x00%d\x00", st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
		}
		return nil
	})
	var sig [sha256.Size]byte
	if err != nil {
		return sig, where.Errorf("reading the skill folder %s: %w", where.Path(dir), err)
	}
	copy(sig[:], h.Sum(nil))
	return sig, nil
}
