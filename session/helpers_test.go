package session

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const owner = "owner-a"

// clock is a settable clock for TTL tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openStore opens a store in a fresh temp root and closes it at cleanup.
func openStore(t testing.TB, lim Limits, opts ...Option) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "sessions"), lim, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func create(t testing.TB, s *Store) string {
	t.Helper()
	info, err := s.Create(owner, 0)
	require.NoError(t, err)
	return info.ID
}

func wsPath(s *Store, id string) string { return filepath.Join(s.Root(), "ws", id) }

func put(t testing.TB, s *Store, id, p, content string) FileInfo {
	t.Helper()
	fi, err := s.PutFile(owner, id, p, strings.NewReader(content))
	require.NoError(t, err)
	return fi
}

func readAll(t testing.TB, s *Store, id, p string) string {
	t.Helper()
	rc, _, err := s.OpenFile(owner, id, p)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

func sum(b string) string {
	h := sha256.Sum256([]byte(b))
	return hex.EncodeToString(h[:])
}

// sentinel is a file outside every session whose bytes must never change.
type sentinel struct {
	dir, path, hash string
}

func newSentinel(t testing.TB) sentinel {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(p, []byte("top secret"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	return sentinel{dir: dir, path: p, hash: treeHash(t, dir)}
}

// check asserts nothing under the sentinel's folder changed.
func (s sentinel) check(t testing.TB) {
	t.Helper()
	require.Equal(t, s.hash, treeHash(t, s.dir), "something outside the session changed")
}

// treeHash hashes the names, types and contents of a tree.
func treeHash(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		io.WriteString(h, rel+"\x00"+fi.Mode().String()+"\x00")
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// zeros is an endless reader.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// withoutSync skips fsync: for fuzzing, and tests that do not cut power.
func withoutSync() Option { return func(o *options) { o.noSync = true } }
