package session

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// idLen is the length of an id: 16 random bytes in unpadded base32.
const idLen = 26

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns 128 random bits, URL-safe, lowercase.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return idEncoding.EncodeToString(b[:])
}

// validID reports whether id has one of the exact shapes NewID makes. Ids
// become file names, so nothing else may reach the file system.
func validID(id string) bool {
	_, ok := IDReplica(id)
	return ok
}

// validRandom reports whether id has the exact shape newID makes.
func validRandom(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	b, err := idEncoding.DecodeString(id)
	return err == nil && len(b) == 16 && idEncoding.EncodeToString(b) == id
}

// randName returns a reserved temporary name.
func randName() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return fsroot.TempPrefix + hex.EncodeToString(b[:])
}

// metaVersion is the format of the metadata file.
const metaVersion = 1

// meta is what is persisted per session, in <root>/meta/<id>.json (outside
// the workspace, so nothing a run does can reach it).
type meta struct {
	Version   int           `json:"version"`
	ID        string        `json:"id"`
	Owner     string        `json:"owner"`
	CreatedAt time.Time     `json:"created_at"`
	LastUsed  time.Time     `json:"last_used"`
	TTL       time.Duration `json:"ttl_ns"`
	BytesUsed int64         `json:"bytes_used"`
}

func (m meta) validate(name string) error {
	switch {
	case m.Version != metaVersion:
		return fmt.Errorf("version %d, want %d", m.Version, metaVersion)
	case !validID(m.ID) || m.ID+".json" != name:
		return fmt.Errorf("id %q does not match the file name", m.ID)
	case m.TTL <= 0:
		return fmt.Errorf("ttl %v is not positive", m.TTL)
	case m.CreatedAt.IsZero() || m.LastUsed.IsZero():
		return errors.New("times missing")
	}
	return nil
}

// metaTempMark marks the temp files of metadata writes.
const metaTempMark = ".tmp-"

// writeMeta replaces <id>.json atomically: a temp file, fsync, rename,
// fsync of the folder. A crash at any point leaves the old or the new file.
func (s *Store) writeMeta(m meta) error {
	dir := s.metaDir
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	name := m.ID + ".json"
	tmp := name + metaTempMark + randName()[len(fsroot.TempPrefix):]
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing session metadata: %w", err)
	}
	_, err = f.Write(data)
	if err == nil && !s.opt.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		_ = dir.Remove(tmp)
		return fmt.Errorf("writing session metadata: %w", err)
	}
	return s.syncDir(dir)
}

// readMeta loads and validates one metadata file.
func readMeta(dir *os.Root, name string) (meta, error) {
	var m meta
	data, err := dir.ReadFile(name)
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("corrupt: %w", err)
	}
	return m, m.validate(name)
}
