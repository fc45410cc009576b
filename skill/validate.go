package skill

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Report is the outcome of validating one skill folder. The JSON field names
// are part of `sandboxrun validate --json`.
type Report struct {
	// Path is the skill folder as given.
	Path string `json:"path"`
	// Name is the skill's name, empty when the frontmatter did not parse.
	Name     string   `json:"name"`
	Valid    bool     `json:"valid"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	p := plain(r)
	if p.Errors == nil {
		p.Errors = []string{}
	}
	if p.Warnings == nil {
		p.Warnings = []string{}
	}
	return json.Marshal(p)
}

// Validate checks one skill folder against the Agent Skills spec and
// sandboxrun's own rules. In strict mode, fields outside the spec's top-level
// set are errors rather than warnings, so that strict agrees with the spec's
// reference validator; sandboxrun's checks apply in both modes.
func Validate(dir string, strict bool) Report { return ValidateFor(dir, strict, where.Operator) }

// ValidateFor is Validate with the findings' host paths named through n,
// for a reader who is not the operator (an upload's owner).
func ValidateFor(dir string, strict bool, n where.Namer) Report {
	r := Report{Path: dir, Errors: []string{}, Warnings: []string{}}
	s, probs, err := read(dir, true)
	if err != nil {
		r.Errors = append(r.Errors, where.Render(err, n))
		return r
	}
	r.Name = s.Manifest.Name
	probs = append(probs, checkFolder(s)...)
	// In file order, so a report reads top to bottom; problems not tied to a
	// line (the folder, scripts/, body size) come last.
	slices.SortStableFunc(probs, func(a, b problem) int { return cmp.Compare(lineKey(a), lineKey(b)) })
	for _, p := range probs {
		switch {
		case p.sev == sevFatal, p.sev == sevError, p.sev == sevStrict && strict:
			r.Errors = append(r.Errors, p.render(n))
		default:
			r.Warnings = append(r.Warnings, p.render(n))
		}
	}
	r.Valid = len(r.Errors) == 0
	return r
}

func lineKey(p problem) int {
	if p.line == 0 {
		return math.MaxInt
	}
	return p.line
}

// ValidatePath validates path when it is a skill folder, or else every skill
// below it that Discover would find (plugins/*/skills/*, .claude/skills/*,
// category folders), in path order.
func ValidatePath(path string, strict bool) ([]Report, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("validating: %w", err)
	}
	if !fi.IsDir() {
		return nil, where.Errorf("validating %s: %w: give a skill folder or a folder of skills", where.Path(path), ErrNotDir)
	}
	if _, err := FindFile(path); err == nil {
		return []Report{Validate(path, strict)}, nil
	} else if !errors.Is(err, ErrNoSkillFile) {
		return nil, fmt.Errorf("validating: %w", err)
	}
	dirs, _, err := skillDirs(path)
	if err != nil && len(dirs) == 0 {
		return nil, where.Errorf("validating %s: %w", where.Path(path), err)
	}
	if len(dirs) == 0 {
		return nil, where.Errorf("validating %s: %w: it has no SKILL.md and no subfolder with one", where.Path(path), ErrNoSkills)
	}
	reports := make([]Report, 0, len(dirs))
	for _, d := range dirs {
		reports = append(reports, Validate(d, strict))
	}
	return reports, nil
}

// checkFolder runs the checks that need the files around SKILL.md.
func checkFolder(s *Skill) []problem {
	var probs []problem
	probs = append(probs, checkBody(s)...)
	probs = append(probs, checkScripts(s)...)
	return probs
}
