package skillstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
)

// Skill is one of an owner's uploaded skills with its versions, oldest
// first.
type Skill struct {
	Name     string `json:"name"`
	Versions []Meta `json:"versions"`
}

// Resolved is the version a reference names, and where its folder is.
type Resolved struct {
	Meta
	// Dir is the skill folder, named as the skill.
	Dir string
}

// List returns owner's skills, by name. An owner that is not a token
// digest (an MCP connection's) has none.
func (s *Store) List(owner string) ([]Skill, error) {
	od, err := ownerDir(owner)
	if err != nil {
		return nil, nil
	}
	ents, err := os.ReadDir(filepath.Join(s.root, od))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing uploaded skills: %w", err)
	}
	var out []Skill
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		vs, err := s.versions(filepath.Join(s.root, od, e.Name()))
		if err != nil {
			return nil, err
		}
		if len(vs) > 0 {
			out = append(out, Skill{Name: e.Name(), Versions: vs})
		}
	}
	return out, nil
}

// Versions returns owner's versions of the skill name, oldest first, or
// ErrNotFound.
func (s *Store) Versions(owner, name string) ([]Meta, error) {
	od, err := ownerDir(owner)
	if err != nil {
		return nil, notFound(name)
	}
	if !policy.ValidSandboxName(name) {
		return nil, notFound(name)
	}
	vs, err := s.versions(filepath.Join(s.root, od, name))
	if err == nil && len(vs) == 0 {
		err = notFound(name)
	}
	return vs, err
}

// Resolve finds the version ref names among owner's uploads: NAME (the
// newest), NAME@VERSION or NAME@sha256:HEX. A name owner has no upload of
// is ErrNotFound; a malformed pin, ErrBadRef.
func (s *Store) Resolve(owner, ref string) (Resolved, error) {
	name, pin := SplitRef(ref)
	vs, err := s.Versions(owner, name)
	if err != nil {
		return Resolved{}, err
	}
	od, _ := ownerDir(owner)
	pick := func(v Meta) Resolved {
		return Resolved{Meta: v, Dir: filepath.Join(s.root, od, name, hexOf(v.Digest), name)}
	}
	switch {
	case pin == "":
		return pick(vs[len(vs)-1]), nil
	case strings.HasPrefix(pin, DigestPrefix):
		if hexOf(pin) == "" {
			return Resolved{}, fmt.Errorf("%w: %q: a digest pin is sha256: and 64 lowercase hex digits", ErrBadRef, ref)
		}
		for _, v := range vs {
			if v.Digest == pin {
				return pick(v), nil
			}
		}
	default:
		for _, v := range vs {
			if v.Version == pin {
				return pick(v), nil
			}
		}
	}
	return Resolved{}, fmt.Errorf("%w: %s has no version %s (GET /v1/skills/%s/versions lists them)", ErrNotFound, name, pin, name)
}

// SplitRef splits a skill reference into its name and its pin (a version
// or a digest), "" when it has none.
func SplitRef(ref string) (name, pin string) {
	name, pin, _ = strings.Cut(ref, "@")
	return name, pin
}

// Delete removes every version of owner's skill name.
func (s *Store) Delete(owner, name string) error {
	od, err := ownerDir(owner)
	if err != nil {
		return notFound(name)
	}
	if !policy.ValidSandboxName(name) {
		return notFound(name)
	}
	unlock, err := s.lock(od)
	if err != nil {
		return err
	}
	defer unlock()
	dir := filepath.Join(s.root, od, name)
	if vs, err := s.versions(dir); err != nil || len(vs) == 0 {
		return errors.Join(err, notFound(name))
	}
	return s.remove(dir)
}

// DeleteVersion removes one version (a version name or a digest) of
// owner's skill name; the last one gone, the skill is gone.
func (s *Store) DeleteVersion(owner, name, version string) error {
	od, err := ownerDir(owner)
	if err != nil {
		return notFound(name)
	}
	unlock, err := s.lock(od)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := s.Resolve(owner, name+"@"+version)
	if err != nil {
		return err
	}
	if err := s.remove(filepath.Dir(r.Dir)); err != nil {
		return err
	}
	nameDir := filepath.Dir(filepath.Dir(r.Dir))
	if vs, err := s.versions(nameDir); err == nil && len(vs) == 0 {
		return s.remove(nameDir)
	}
	return nil
}

// remove moves dir into the staging folder (one rename: a crash leaves it
// whole or gone) and deletes it there.
func (s *Store) remove(dir string) error {
	own, err := s.stagingFolder()
	if err != nil {
		return fmt.Errorf("removing the skill: %w", err)
	}
	trash := filepath.Join(own, "rm-"+randName())
	if err := os.Rename(dir, trash); err != nil {
		return fmt.Errorf("removing the skill: %w", err)
	}
	if err := syncDirs(filepath.Dir(dir)); err != nil {
		return err
	}
	return os.RemoveAll(trash)
}

// versions reads the versions under a skill's folder, oldest first; a
// folder without a readable meta.json is skipped.
func (s *Store) versions(nameDir string) ([]Meta, error) {
	ents, err := os.ReadDir(nameDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading uploaded versions: %w", err)
	}
	var vs []Meta
	for _, e := range ents {
		if !e.IsDir() || hexOf(DigestPrefix+e.Name()) == "" {
			continue
		}
		v, err := readMeta(filepath.Join(nameDir, e.Name()))
		if err != nil {
			continue
		}
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Seq < vs[j].Seq })
	return vs, nil
}

func notFound(name string) error {
	return fmt.Errorf("%w: %q (GET /v1/skills lists yours)", ErrNotFound, name)
}

// countDirs counts the folders in dir (none when it does not exist).
func countDirs(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() {
			n++
		}
	}
	return n, err
}

// syncTree makes every folder under dir, dir included, 0755 (readable by
// the sandbox user whatever the umask) and fsyncs it (the files were
// fsynced as they were written).
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil { //nolint:gosec // the sandbox user reads the skill
			return err
		}
		return syncDirs(p)
	})
}

func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		f, err := os.Open(d)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return where.Errorf("fsync %s: %w", where.Path(d), err)
		}
	}
	return nil
}
