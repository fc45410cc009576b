package skill

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
)

// Skill is one skill folder as read from disk.
type Skill struct {
	// Dir is the skill folder, absolute.
	Dir string
	// Path is its SKILL.md (or skill.md), absolute.
	Path     string
	Manifest Manifest
	// Body is the Markdown after the frontmatter, with CRLF turned into LF.
	// It is empty when the skill came from LoadMeta.
	Body string
	// BodyLine is the line of Path where Body starts.
	BodyLine int

	bodyLoaded bool
	// problems are the manifest's problems that did not stop Load.
	problems []problem
}

// skillFileNames are tried in order: the spec's SKILL.md first, then the
// lowercase spelling the reference implementation also accepts.
var skillFileNames = []string{"SKILL.md", "skill.md"}

// FindFile returns the SKILL.md (or skill.md) of dir, or an error wrapping
// ErrNoSkillFile when it has neither.
func FindFile(dir string) (string, error) {
	for _, name := range skillFileNames {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", where.Errorf("looking for %s: %w", where.Path(p), err)
		}
	}
	return "", where.Errorf("%s: %w: a skill folder needs a SKILL.md with YAML frontmatter (name, description) and a Markdown body", where.Path(dir), ErrNoSkillFile)
}

// Load reads a skill folder: the frontmatter and the body. It fails with a
// *ParseError when the frontmatter cannot be read and a *ManifestError when
// the manifest is unusable (see the package documentation).
func Load(dir string) (*Skill, error) {
	return load(dir, true)
}

// LoadMeta is Load without the body: it stops reading SKILL.md at the
// closing `---` of the frontmatter, for listing many skills cheaply.
func LoadMeta(dir string) (*Skill, error) {
	return load(dir, false)
}

func load(dir string, withBody bool) (*Skill, error) {
	s, probs, err := read(dir, withBody)
	if err != nil {
		return nil, err
	}
	var fatal []string
	for _, p := range probs {
		if p.sev == sevFatal {
			fatal = append(fatal, p.String())
		}
	}
	if len(fatal) > 0 {
		return nil, &ManifestError{Path: s.Path, Problems: fatal}
	}
	s.problems = probs
	return s, nil
}

// Warnings are what a user should hear whenever the skill is loaded to run
// or listed: the choices sandboxrun made for a manifest that breaks a rule
// (the name it uses, an allowed-tools entry it cannot read). validate
// reports these and the rest.
func (s *Skill) Warnings() []string {
	var out []string
	for _, p := range s.problems {
		if p.loud {
			out = append(out, p.String())
		}
	}
	return out
}

// Strict returns a *ManifestError listing what `validate --strict` would
// call an error in the frontmatter (the spec's rules, sandboxrun's), or nil.
// Hosts that run only conforming skills refuse the skill on it.
func (s *Skill) Strict() error {
	var errs []string
	for _, p := range s.problems {
		if p.sev == sevError || p.sev == sevStrict {
			errs = append(errs, p.String())
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &ManifestError{Path: s.Path, Problems: errs}
}

// read parses a skill folder and returns every manifest problem found; only
// a folder or frontmatter that cannot be read at all is an error.
func read(dir string, withBody bool) (*Skill, []problem, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, where.Errorf("resolving %s: %w", where.Path(dir), err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("opening skill folder: %w", err)
	}
	if !fi.IsDir() {
		return nil, nil, where.Errorf("%s: %w: give the skill's folder, not a file in it", where.Path(dir), ErrNotDir)
	}
	path, err := FindFile(abs)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(path) // #nosec G304 -- reading the skill file the caller named is the point
	if err != nil {
		return nil, nil, fmt.Errorf("opening skill file: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only: a close error loses nothing
	s, probs, err := parseSkillFile(f, path, withBody)
	if err != nil {
		return nil, nil, err
	}
	s.Dir = abs
	probs = append(probs, settleName(&s.Manifest, filepath.Base(abs))...)
	return s, probs, nil
}

// parseSkillFile reads frontmatter and, if withBody, the body from r.
func parseSkillFile(r io.Reader, path string, withBody bool) (*Skill, []problem, error) {
	br := bufio.NewReader(r)
	fm, err := readFrontmatter(br, path)
	if err != nil {
		return nil, nil, err
	}
	root, err := parseYAML(fm, path)
	if err != nil {
		return nil, nil, err
	}
	m, probs := decodeManifest(root)
	s := &Skill{Path: path, Manifest: m, BodyLine: fm.bodyLine}
	if withBody {
		body, err := io.ReadAll(io.LimitReader(br, maxSkillFileBytes+1))
		if err != nil {
			return nil, nil, where.Errorf("reading %s: %w", where.Path(path), err)
		}
		if len(body) > maxSkillFileBytes {
			return nil, nil, &ParseError{Path: path, Line: fm.bodyLine, Err: ErrTooLarge,
				Msg: "body is larger than " + size.Format(maxSkillFileBytes) + "; move material into references/"}
		}
		s.Body = strings.ReplaceAll(string(body), "\r\n", "\n")
		s.bodyLoaded = true
	}
	return s, probs, nil
}

// Limits returns the limits the skill asks for; zero fields are unset and
// leave policy's defaults in place.
func (s *Skill) Limits() policy.SkillLimits {
	m := s.Manifest
	return policy.SkillLimits{
		Timeout:   time.Duration(m.MaxExecutionTime) * time.Second,
		MemoryMiB: m.MaxMemoryMiB,
		CPUs:      m.MaxCPUs,
		Network:   m.NetworkAccess,

		AllowedDomains: m.AllowedDomains,
		Secrets:        m.Secrets,
	}
}
