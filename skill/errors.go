package skill

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNoSkillFile means the folder has neither SKILL.md nor skill.md.
	ErrNoSkillFile = errors.New("no SKILL.md in folder")
	// ErrNotDir means the path given as a skill folder is not a directory.
	ErrNotDir = errors.New("not a directory")
	// ErrSkillNotFound means a skill reference resolves to nothing.
	ErrSkillNotFound = errors.New("skill not found")
	// ErrNoSkills means a folder holds no skill and is not one.
	ErrNoSkills = errors.New("no skills found")
	// ErrTooLarge means SKILL.md, its frontmatter, or a skill's file listing
	// exceeds the bounds this package reads.
	ErrTooLarge = errors.New("too large")

	// ErrNoFrontmatter means the file does not start with a `---` line.
	ErrNoFrontmatter = errors.New("missing frontmatter")
	// ErrUnclosedFrontmatter means no closing `---` line follows the opening one.
	ErrUnclosedFrontmatter = errors.New("unclosed frontmatter")
	// ErrInvalidYAML means the frontmatter is not valid YAML.
	ErrInvalidYAML = errors.New("invalid YAML in frontmatter")
	// ErrNotMapping means the frontmatter is valid YAML but not a mapping.
	ErrNotMapping = errors.New("frontmatter is not a mapping")

	// ErrInvalidManifest means the frontmatter parsed but describes a skill
	// that cannot be used; see [ManifestError].
	ErrInvalidManifest = errors.New("invalid skill manifest")
)

// ParseError reports a SKILL.md whose frontmatter cannot be read. Err is one of
// the frontmatter sentinels (or ErrTooLarge) and is returned by Unwrap.
type ParseError struct {
	Path string // the SKILL.md file
	Line int    // 1-based line in Path, 0 when unknown
	Msg  string // what is wrong and how to fix it
	Err  error
}

// Error formats the error as path:line: message, like a compiler.
func (e *ParseError) Error() string { return e.Render(where.Operator) }

// Render is the error with its file named through n.
func (e *ParseError) Render(n where.Namer) string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", n(e.Path), e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", n(e.Path), e.Msg)
}

// Unwrap returns the sentinel saying which kind of problem this is.
func (e *ParseError) Unwrap() error { return e.Err }

// ManifestError reports a parsed frontmatter whose fields make the skill
// unusable. Problems holds one message per problem, each naming the field and
// the fix. It unwraps to ErrInvalidManifest.
type ManifestError struct {
	Path     string
	Problems []string
}

// Error lists every problem on one line.
func (e *ManifestError) Error() string { return e.Render(where.Operator) }

// Render is the error with its file named through n.
func (e *ManifestError) Render(n where.Namer) string {
	return fmt.Sprintf("%s: %s: %s", n(e.Path), ErrInvalidManifest, strings.Join(e.Problems, "; "))
}

// Unwrap returns ErrInvalidManifest.
func (e *ManifestError) Unwrap() error { return ErrInvalidManifest }
