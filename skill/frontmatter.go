package skill

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Bounds on what is read from a SKILL.md. A frontmatter is a few hundred
// bytes and a body a few pages; these only stop a hostile or broken file from
// making listing or loading unbounded.
const (
	maxFrontmatterBytes = 256 << 10
	maxSkillFileBytes   = 8 << 20
)

const fence = "---"

var utf8BOM = []byte("\xef\xbb\xbf")

// frontmatter is the YAML text of a SKILL.md, read up to the closing fence.
type frontmatter struct {
	yaml []byte // between the fences, with CRLF turned into LF
	// bodyLine is the 1-based file line where the body starts, the line after
	// the closing fence.
	bodyLine int
}

// readFrontmatter reads r from the start of the file through the closing
// fence and no further (beyond bufio's read-ahead), so that listing skills
// never reads their bodies. Errors are *ParseError with Path set to path.
func readFrontmatter(r *bufio.Reader, path string) (frontmatter, error) {
	budget := maxFrontmatterBytes
	first, err := readLine(r, &budget)
	if err != nil && !errors.Is(err, io.EOF) {
		return frontmatter{}, frontmatterReadError(path, 1, err)
	}
	first = bytes.TrimPrefix(first, utf8BOM)
	if !isFence(first) {
		return frontmatter{}, &ParseError{Path: path, Line: 1, Err: ErrNoFrontmatter,
			Msg: "missing frontmatter: the file must start with a `---` line, then YAML with at least `name:` and `description:`, then a closing `---` line"}
	}
	var buf bytes.Buffer
	for lineNo := 2; ; lineNo++ {
		line, err := readLine(r, &budget)
		if isFence(line) {
			return frontmatter{yaml: buf.Bytes(), bodyLine: lineNo + 1}, nil
		}
		buf.Write(toLF(line))
		if errors.Is(err, io.EOF) {
			return frontmatter{}, &ParseError{Path: path, Line: 1, Err: ErrUnclosedFrontmatter,
				Msg: "unclosed frontmatter: the `---` on line 1 has no closing `---` line; add one after the last YAML line"}
		}
		if err != nil {
			return frontmatter{}, frontmatterReadError(path, lineNo, err)
		}
	}
}

func frontmatterReadError(path string, line int, err error) error {
	if errors.Is(err, ErrTooLarge) {
		return &ParseError{Path: path, Line: line, Err: ErrTooLarge,
			Msg: fmt.Sprintf("frontmatter is larger than %d KiB; is its closing `---` line missing?", maxFrontmatterBytes>>10)}
	}
	return where.Errorf("reading %s: %w", where.Path(path), err)
}

// readLine returns the next line including its newline, failing with
// ErrTooLarge instead of growing past *budget bytes.
func readLine(r *bufio.Reader, budget *int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > *budget {
			return nil, ErrTooLarge
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		*budget -= len(line)
		return line, err
	}
}

// isFence reports whether line is `---`, ignoring trailing blanks and CR.
func isFence(line []byte) bool {
	return string(bytes.TrimRight(line, " \t\r\n")) == fence
}

// toLF turns a CRLF line ending into LF. Every CR before the LF goes: YAML
// would read each as one more (blank) line break, which only shifts line
// numbers away from the file's, and stripping them all keeps parsing the
// canonical form idempotent.
func toLF(line []byte) []byte {
	body, ok := bytes.CutSuffix(line, []byte("\n"))
	if !ok {
		return line
	}
	return append(bytes.TrimRight(body, "\r"), '\n')
}

// yamlLine extracts the position from a yaml.v3 syntax error (for parser, as
// opposed to scanner, errors yaml.v3 may name the line before). yaml.v3 exposes
// no structured position for syntax errors, only a "yaml: line N: msg" text,
// so this reads that text for display; it never classifies errors by it.
var yamlLine = regexp.MustCompile(`(?s)^yaml: (?:line (\d+): )?(.*)$`)

// parseYAML parses the frontmatter text into its top-level mapping node.
func parseYAML(fm frontmatter, path string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(fm.yaml, &doc); err != nil {
		line, msg := 0, err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			msg = m[2]
			if n, convErr := strconv.Atoi(m[1]); convErr == nil {
				line = n + 1 // the opening fence is file line 1
			}
		}
		return nil, &ParseError{Path: path, Line: line, Err: ErrInvalidYAML,
			Msg: "invalid YAML in frontmatter: " + msg + "; fix the syntax (quote values that contain `: ` or start with `[`, `{`, `*`, `&`, `!`, `%`, `@` or a backtick)"}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &ParseError{Path: path, Line: 1, Err: ErrNotMapping,
			Msg: "frontmatter is empty: it needs at least `name:` and `description:` lines"}
	}
	root := resolveAlias(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, &ParseError{Path: path, Line: root.Line + 1, Err: ErrNotMapping,
			Msg: fmt.Sprintf("frontmatter is a YAML %s, not a mapping: write `key: value` lines such as `name: my-skill`", kindName(root))}
	}
	return root, nil
}

// resolveAlias follows one alias. Only the two levels this package reads are
// ever resolved, so alias chains cannot blow up the work done.
func resolveAlias(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return "scalar"
	default:
		return "document"
	}
}
