package skill

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// ErrInlineMetadata means a Python script's PEP 723 block (`# /// script`
// ... `# ///`) is malformed; errors.As with *InlineMetadataError gives the
// script and line.
var ErrInlineMetadata = errors.New("invalid PEP 723 inline script metadata")

// InlineMetadataError reports a malformed PEP 723 block, like a compiler:
// path:line: message. It matches ErrInlineMetadata.
type InlineMetadataError struct {
	Path string
	Line int // 1-based line in Path
	Msg  string
}

func (e *InlineMetadataError) Error() string { return e.Render(where.Operator) }

// Render is the error with its script named through n.
func (e *InlineMetadataError) Render(n where.Namer) string {
	return fmt.Sprintf("%s:%d: %v: %s", n(e.Path), e.Line, ErrInlineMetadata, e.Msg)
}

// Is makes errors.Is(err, ErrInlineMetadata) true.
func (e *InlineMetadataError) Is(target error) bool { return target == ErrInlineMetadata }

// ScriptMetadata is the `script` block of one Python file (PEP 723, the
// "inline script metadata" that uv and pipx read).
type ScriptMetadata struct {
	// Path is the script, as given to ParseInlineMetadata.
	Path string
	// Line is the line of the opening `# /// script`.
	Line int
	// Dependencies are the requirement strings as written, and
	// DependencyLines the line of each in Path.
	Dependencies    []string
	DependencyLines []int
	// RequiresPython is the requires-python specifier, empty when absent;
	// RequiresPythonLine is its line.
	RequiresPython     string
	RequiresPythonLine int
}

// maxMetadataLine bounds one line of a script while looking for the block.
// Longer lines are skipped as data (a script may embed a blob); inside a
// block they are an error, since no real requirement is that long.
const maxMetadataLine = 64 << 10

// Lines of a PEP 723 block, as the specification's reference regular
// expression defines them.
var (
	blockOpen    = regexp.MustCompile(`^# /// ([a-zA-Z0-9-]+)$`)
	blockClose   = "# ///"
	scriptBlock  = "script"
	knownScriptK = "dependencies, requires-python and [tool] tables"
	// requiresPythonSpec is a comma-separated list of PEP 440 version
	// clauses, e.g. ">=3.9, <4".
	requiresPythonSpec = regexp.MustCompile(`^\s*(?:~=|===|==|!=|<=|>=|<|>)?\s*[0-9][0-9A-Za-z.*+!]*(?:\s*,\s*(?:~=|===|==|!=|<=|>=|<|>)?\s*[0-9][0-9A-Za-z.*+!]*)*\s*$`)
)

// ParseInlineMetadataFile reads the PEP 723 `script` block of the file at
// path. It returns nil and no error when the script has none.
func ParseInlineMetadataFile(path string) (*ScriptMetadata, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading inline script metadata: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	return ParseInlineMetadata(f, path)
}

// ParseInlineMetadata reads the PEP 723 `script` block of a Python script;
// path names the script in errors. It returns nil and no error when there
// is no block.
//
// As the specification says, a block opens with a line `# /// script`,
// continues with lines that are `#` alone or start with `# `, and closes
// at the last `# ///` line of that run of comment lines. A block that does
// not close, a second `script` block, content that is not valid TOML, an
// unknown key, or `dependencies` that is not a list of strings is an
// *InlineMetadataError naming the line. Blocks of other
// types (`# /// pyproject`) are ignored, as the specification allows.
func ParseInlineMetadata(r io.Reader, path string) (*ScriptMetadata, error) {
	sc := newLineScanner(r)
	var found *ScriptMetadata
	for sc.next() {
		m := blockOpen.FindStringSubmatch(sc.text)
		if m == nil || m[1] != scriptBlock {
			continue
		}
		if found != nil {
			return nil, &InlineMetadataError{Path: path, Line: sc.line,
				Msg: fmt.Sprintf("a second `# /// script` block (the first opens at line %d); PEP 723 allows one: merge them", found.Line)}
		}
		open := sc.line
		content, err := readBlock(sc, path, open)
		if err != nil {
			return nil, err
		}
		meta, err := decodeScriptBlock(content, path, open+1)
		if err != nil {
			return nil, err
		}
		meta.Path, meta.Line = path, open
		found = meta
		if sc.pending {
			// The line that ended the block may itself open another.
			sc.replay()
		}
	}
	if err := sc.err(); err != nil {
		return nil, where.Errorf("reading %s: %w", where.Path(path), err)
	}
	return found, nil
}

// readBlock collects the comment lines after an opening line and returns
// the content before the last `# ///` among them, each line with its `# `
// or `#` removed.
func readBlock(sc *lineScanner, path string, open int) (string, error) {
	var lines []string
	closeAt := -1
	for sc.next() {
		if sc.long {
			return "", &InlineMetadataError{Path: path, Line: sc.line,
				Msg: fmt.Sprintf("line is longer than %d KiB inside the metadata block", maxMetadataLine>>10)}
		}
		t := sc.text
		if t != "#" && !strings.HasPrefix(t, "# ") {
			sc.pending = true // not a comment: the run of comment lines ends here
			break
		}
		if t == blockClose {
			closeAt = len(lines)
		}
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(t, "#"), " "))
	}
	if closeAt < 0 {
		return "", &InlineMetadataError{Path: path, Line: open,
			Msg: "`# /// script` is not closed: end the block with a line `# ///` (every line in between must start with `#`)"}
	}
	if i := slices.Index(lines, "///"); i < closeAt {
		// The specification closes the block at the last `# ///`, so an
		// earlier one is content, which is never valid TOML.
		return "", &InlineMetadataError{Path: path, Line: open + 1 + i,
			Msg: fmt.Sprintf("the block closes at the last `# ///` of the comment lines that follow it (line %d), so this one is read as TOML; leave a line that is not a comment after the closing `# ///`", open+1+closeAt)}
	}
	return strings.Join(lines[:closeAt], "\n"), nil
}

// lineScanner yields the lines of a file without their line ending. A line
// longer than maxMetadataLine is consumed whole but only its start is kept,
// with long set. replay makes the next call to next return the current line
// again.
type lineScanner struct {
	r       *bufio.Reader
	text    string
	line    int
	long    bool
	pending bool
	again   bool
	readErr error
}

func newLineScanner(r io.Reader) *lineScanner {
	return &lineScanner{r: bufio.NewReaderSize(r, 16<<10)}
}

func (s *lineScanner) replay() { s.again, s.pending = true, false }

func (s *lineScanner) next() bool {
	if s.again {
		s.again = false
		return true
	}
	if s.readErr != nil {
		return false
	}
	var buf []byte
	s.long = false
	for {
		chunk, isPrefix, err := s.r.ReadLine()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.readErr = err
			} else {
				s.readErr = io.EOF
			}
			if len(buf) == 0 {
				return false
			}
			break
		}
		if len(buf) < maxMetadataLine {
			buf = append(buf, chunk...)
		} else {
			s.long = true
		}
		if !isPrefix {
			break
		}
	}
	if len(buf) > maxMetadataLine {
		buf, s.long = buf[:maxMetadataLine], true
	}
	s.line++
	// ReadLine drops "\n" and "\r\n" alike; a script saved with CRLF
	// endings is read the same as one with LF.
	s.text = string(buf)
	return true
}

func (s *lineScanner) err() error {
	if errors.Is(s.readErr, io.EOF) {
		return nil
	}
	return s.readErr
}
