package skillstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/fresh"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
)

// Meta is one stored version of an uploaded skill. The JSON field names
// are part of the HTTP API.
type Meta struct {
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	Digest    string    `json:"digest"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`
	// Seq orders an owner's versions of a skill: the newest is the highest.
	Seq int `json:"seq"`
}

// Upload is what Put stored, or found already stored.
type Upload struct {
	Meta
	// Warnings are validate's warnings on the skill.
	Warnings []string `json:"warnings"`
	// Created is false when the same content was stored already: the
	// version returned is that one.
	Created bool `json:"-"`
}

// Store is the uploaded skills under one folder. It is safe for
// concurrent use, by goroutines and by processes sharing the folder (the
// replicas of a server on one shared volume: see shared.go).
//
// Layout: ROOT/OWNER/NAME/HEX/meta.json and ROOT/OWNER/NAME/HEX/NAME/ (the
// skill folder, named as the skill so it mounts at /skills/NAME), HEX the
// digest's hex; ROOT/.staging/p-RANDOM holds one process's uploads being
// written and what it is deleting; ROOT/.locks/OWNER is an owner's lock;
// ROOT/.sandboxrun-upload-store (skill.UploadStoreMarker) keeps operator
// skill discovery out.
type Store struct {
	root     string
	lim      Limits
	reserved func(name string) bool
	packages func(name string, deps skill.Deps) error // nil: any
	now      func() time.Time

	// mu is held while a version is committed or removed, with the
	// owner's file lock: it orders this process's goroutines whatever the
	// file system makes of two locks taken by one process.
	mu        sync.Mutex
	counted   fresh.Figures[string, int64] // each owner's upload bytes, for bytesTTL
	stageMu   sync.Mutex                   // guards stage and stageLock
	restageMu sync.Mutex                   // held while the staging folder is made anew
	stage     string                       // this process's staging folder
	stageLock *os.File                     // holds the flock on stage/lock while the store is open
}

// Option configures a Store.
type Option func(*Store)

// WithReserved refuses uploads of the names reserved reports (the
// operator's skills): ErrNameTaken.
func WithReserved(reserved func(name string) bool) Option {
	return func(s *Store) { s.reserved = reserved }
}

// WithClock sets the clock stamping versions (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

const (
	stagingDir = ".staging"
	metaFile   = "meta.json"
	// anonymous is the owner folder of callers without a token (a server
	// that takes none).
	anonymous = "anonymous"
)

// Open opens (creating) the store in root, an absolute folder, marks it
// as a store (skill.UploadStoreMarker), makes this process's staging
// folder, and removes what crashed processes left in theirs.
func Open(root string, lim Limits, opts ...Option) (*Store, error) {
	if !filepath.IsAbs(root) {
		return nil, where.Errorf("skill store %q: not an absolute path", where.Path(root))
	}
	s := &Store{root: root, lim: lim.WithDefaults(), reserved: func(string) bool { return false }, now: time.Now,
		counted: fresh.Figures[string, int64]{TTL: bytesTTL}}
	for _, o := range opts {
		o(s)
	}
	// 0711: the sandbox user (another uid) must reach a skill's folder
	// through the store; listing owners and names is the server's alone.
	if err := os.MkdirAll(root, 0o711); err != nil { //nolint:gosec // others may traverse, not list: see above
		return nil, fmt.Errorf("skill store: %w", err)
	}
	if err := writeMarker(root); err != nil {
		return nil, err
	}
	if err := s.openStaging(); err != nil {
		return nil, err
	}
	return s, nil
}

// Limits are the store's limits, defaults filled.
func (s *Store) Limits() Limits { return s.lim }

// Put stores the skill in the archive r (of the given format) for owner:
// checked member by member, validated, and committed under its digest. The
// same content again gives the stored version (Created false). Nothing is
// left behind when it fails.
func (s *Store) Put(owner string, format Format, r io.Reader) (Upload, error) {
	od, err := ownerDir(owner)
	if err != nil {
		return Upload{}, err
	}
	s.sweep()
	own, err := s.stagingFolder()
	if err != nil {
		return Upload{}, err
	}
	stage, err := os.MkdirTemp(own, "up-")
	if err != nil {
		return Upload{}, fmt.Errorf("staging the upload: %w", err)
	}
	defer func() { _ = os.RemoveAll(stage) }()
	raw := filepath.Join(stage, "raw")
	if err := os.Mkdir(raw, 0o700); err != nil {
		return Upload{}, fmt.Errorf("staging the upload: %w", err)
	}
	u, err := unpack(raw, filepath.Join(stage, "spool"), format, r, s.lim)
	if err != nil {
		return Upload{}, err
	}
	name, warnings, err := s.check(stage, &u)
	if err != nil {
		return Upload{}, err
	}
	if err := s.checkPackages(u.dir, name); err != nil {
		return Upload{}, err
	}
	digest, err := Digest(u.dir)
	if err != nil {
		return Upload{}, err
	}
	declared := ""
	if sk, err := skill.LoadMeta(u.dir); err == nil {
		declared = sk.Manifest.Version
	}
	v := Meta{Name: name, Digest: digest, Files: u.files, Bytes: u.bytes}
	up, err := s.commit(od, stage, u.dir, declared, v)
	up.Warnings = warnings
	return up, err
}

// check reads the skill's name, moves the skill folder to stage/s/NAME (so
// validate judges the name against its folder as it will be stored) and
// validates it. The stage holds raw/ (the archive unpacked), spool (a
// zip), s/NAME and v/ (the version being committed).
func (s *Store) check(stage string, u *unpacked) (string, []string, error) {
	sk, err := skill.LoadMeta(u.dir)
	if err != nil {
		return "", nil, &InvalidError{Errors: []string{where.Render(err, uploadNames(u.dir, ""))}}
	}
	name := sk.Manifest.Name
	if !policy.ValidSandboxName(name) {
		return "", nil, &InvalidError{Errors: []string{fmt.Sprintf("`name` %q cannot name a skill folder: use lowercase letters, digits and hyphens", name)}}
	}
	if s.reserved(name) {
		return "", nil, fmt.Errorf("%w: %q is an operator skill's name: rename your skill (`name:` in SKILL.md)", ErrNameTaken, name)
	}
	if err := os.Mkdir(filepath.Join(stage, "s"), 0o700); err != nil {
		return "", nil, fmt.Errorf("staging the upload: %w", err)
	}
	dir := filepath.Join(stage, "s", name)
	if err := os.Rename(u.dir, dir); err != nil {
		return "", nil, fmt.Errorf("staging the upload: %w", err)
	}
	u.dir = dir
	rep := skill.ValidateFor(dir, false, uploadNames(dir, name))
	if !rep.Valid {
		return "", nil, &InvalidError{Name: name, Errors: rep.Errors, Warnings: rep.Warnings}
	}
	return name, rep.Warnings, nil
}

// uploadNames names the files of an upload, staged in dir, as its owner
// knows them: by their paths in the archive under shown (the skill's name,
// or nothing before the name is known). Any other path is the server's.
func uploadNames(dir, shown string) where.Namer {
	return func(host string) string {
		rel, err := filepath.Rel(dir, host)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "a file of the server"
		}
		if shown == "" && rel == "." {
			return "the skill folder"
		}
		return path.Join(shown, filepath.ToSlash(rel))
	}
}

// commit moves a checked skill in as a new version, unless the owner has
// the same content already.
func (s *Store) commit(od, stage, dir, declared string, v Meta) (Upload, error) {
	unlock, err := s.lock(od)
	if err != nil {
		return Upload{}, err
	}
	defer unlock()
	nameDir := filepath.Join(s.root, od, v.Name)
	final := filepath.Join(nameDir, hexOf(v.Digest))
	if old, err := readMeta(final); err == nil {
		return Upload{Meta: old}, nil
	}
	versions, err := s.versions(nameDir)
	if err != nil {
		return Upload{}, err
	}
	if len(versions) == 0 {
		n, err := countDirs(filepath.Join(s.root, od))
		if err != nil {
			return Upload{}, err
		}
		if n >= s.lim.MaxSkills {
			return Upload{}, &LimitError{Limit: LimitSkills, Value: int64(s.lim.MaxSkills),
				Hint: "this token keeps as many skills as the operator allows: delete one (DELETE /v1/skills/{name}), or ask the operator to raise skill_uploads.max_skills_per_token"}
		}
	}
	if len(versions) >= s.lim.MaxVersions {
		return Upload{}, &LimitError{Limit: LimitVersions, Value: int64(s.lim.MaxVersions),
			Hint: "this skill has as many versions as the operator allows: delete an old one (DELETE /v1/skills/{name}/versions/{version}), or ask the operator to raise skill_uploads.max_versions"}
	}
	v.Version, v.Seq = nextVersion(versions, declared)
	v.CreatedAt = s.now().UTC()
	vdir := filepath.Join(stage, "v")
	if err := os.Mkdir(vdir, 0o700); err != nil { // syncTree opens it to 0755 once filled
		return Upload{}, err
	}
	if err := os.Rename(dir, filepath.Join(vdir, v.Name)); err != nil {
		return Upload{}, err
	}
	if err := writeMeta(vdir, v); err != nil {
		return Upload{}, err
	}
	if err := syncTree(vdir); err != nil {
		return Upload{}, err
	}
	for _, d := range []string{filepath.Dir(nameDir), nameDir} {
		if err := os.Mkdir(d, 0o711); err != nil && !errors.Is(err, fs.ErrExist) { //nolint:gosec // traverse, not list
			return Upload{}, err
		}
	}
	if err := os.Rename(vdir, final); err != nil {
		return Upload{}, fmt.Errorf("storing the skill: %w", err)
	}
	if err := syncDirs(nameDir, filepath.Dir(nameDir), s.root); err != nil {
		return Upload{}, err
	}
	return Upload{Meta: v, Created: true}, nil
}

// nextVersion is the frontmatter's version when given and not taken, else
// the next integer above every integer version (and the count).
func nextVersion(versions []Meta, declared string) (string, int) {
	seq, top := 0, 0
	taken := map[string]bool{}
	for _, v := range versions {
		seq = max(seq, v.Seq)
		taken[v.Version] = true
		if n, err := strconv.Atoi(v.Version); err == nil {
			top = max(top, n)
		}
	}
	if declared != "" && !taken[declared] && validVersion(declared) {
		return declared, seq + 1
	}
	top = max(top, len(versions))
	for taken[strconv.Itoa(top+1)] {
		top++
	}
	return strconv.Itoa(top + 1), seq + 1
}

// validVersion reports whether a frontmatter version can be named in a URL
// path and a pin: printable, no '/', '@' or space, at most 64 bytes, and
// not a digest.
func validVersion(v string) bool {
	if len(v) > 64 || strings.HasPrefix(v, DigestPrefix) || v == "." || v == ".." {
		return false
	}
	for _, c := range v {
		if c <= ' ' || c >= 0x7f || c == '/' || c == '@' || c == '\\' || c == '%' || c == '?' || c == '#' {
			return false
		}
	}
	return true
}

// ownerDir is owner's folder name: a token digest (hex), or anonymous.
func ownerDir(owner string) (string, error) {
	if owner == "" {
		return anonymous, nil
	}
	if b, err := hex.DecodeString(owner); err != nil || len(b) != 32 || strings.ToLower(owner) != owner {
		return "", errors.New("skill store: the owner is not a token digest")
	}
	return owner, nil
}

func randName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeMeta(dir string, v Meta) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, metaFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func readMeta(dir string) (Meta, error) {
	data, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return Meta{}, err
	}
	var v Meta
	if err := json.Unmarshal(data, &v); err != nil {
		return Meta{}, where.Errorf("%s: %w", where.Path(filepath.Join(dir, metaFile)), err)
	}
	return v, nil
}

// Root is the store's folder.
func (s *Store) Root() string { return s.root }
