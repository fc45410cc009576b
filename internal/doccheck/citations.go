package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The forms a comment cites documentation in. Each one is checked; a
// citation in another form is prose, and this test cannot keep it true.
var (
	// README, "Section" / docs/x.md "Section" / README's "Section"
	quotedSection = regexp.MustCompile(`\b(README(?:\.md)?|docs/[A-Za-z0-9_.-]+\.md)(?:'s)?,?\s+["“]([^"”]+)["”]`)
	// the README's Section section
	namedSection = regexp.MustCompile(`\b(README(?:\.md)?|docs/[A-Za-z0-9_.-]+\.md)'s\s+([A-Za-z][A-Za-z0-9 ,:-]*?)\s+section\b`)
	// docs/x.md, docs/x.md#anchor
	docPath = regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]+\.md(?:#[A-Za-z0-9_-]+)?`)
)

// comments returns the comment text of a source file as runs of
// consecutive comment lines, each run joined into one line, so that a
// citation wrapped over two lines reads as one. It knows // (Go, TypeScript)
// and # (shell, Makefile, YAML, Python, Dockerfile) comments.
func comments(name string, src []byte) []comment {
	marker := "#"
	if ext := filepath.Ext(name); ext == ".go" || ext == ".ts" {
		marker = "//"
	}
	var out []comment
	var cur *comment
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		i := strings.Index(line, marker)
		if i < 0 || (marker == "#" && strings.HasPrefix(strings.TrimSpace(line), "#!")) {
			cur = nil
			continue
		}
		whole := strings.TrimSpace(line[:i]) == ""
		body := strings.TrimSpace(line[i+len(marker):])
		if cur != nil && whole {
			cur.starts = append(cur.starts, len(cur.text)+1)
			cur.text += " " + body
			continue
		}
		out = append(out, comment{line: n, text: body, starts: []int{0}})
		cur = &out[len(out)-1]
		if !whole {
			cur = nil // a trailing comment runs to its line's end only
		}
	}
	return out
}

type comment struct {
	line   int    // of the run's first line
	text   string // the run's lines joined by spaces
	starts []int  // where each line of the run begins in text
}

// lineAt is the source line holding text[i].
func (c comment) lineAt(i int) int {
	n := 0
	for k, s := range c.starts {
		if s <= i {
			n = k
		}
	}
	return c.line + n
}

// checkCitations reports the documentation a source file's comments cite
// that does not exist: a missing page, or a section no heading of it names.
func (c docs) checkCitations(root, rel string) ([]Problem, error) {
	src, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	var out []Problem
	add := func(line int, msg string) { out = append(out, Problem{File: rel, Line: line, Msg: msg}) }
	for _, cm := range comments(rel, src) {
		for _, re := range []*regexp.Regexp{quotedSection, namedSection} {
			for _, m := range re.FindAllStringSubmatchIndex(cm.text, -1) {
				page, title := cm.text[m[2]:m[3]], cm.text[m[4]:m[5]]
				if msg := c.section(root, page, title); msg != "" {
					add(cm.lineAt(m[0]), msg)
				}
			}
		}
		for _, m := range docPath.FindAllStringIndex(cm.text, -1) {
			ref := cm.text[m[0]:m[1]]
			// Resolved as a link from a file at the root would be.
			if msg := c.resolve(root, filepath.Join(root, "README.md"), ref); msg != "" {
				add(cm.lineAt(m[0]), "cites "+ref+": "+msg)
			}
		}
	}
	return out, nil
}

// section checks that page has a heading named title, compared without
// regard to case, as a reader scanning the page would find it.
func (c docs) section(root, page, title string) string {
	if page == "README" {
		page = "README.md"
	}
	d, err := c.get(filepath.Join(root, page))
	if err != nil {
		return fmt.Sprintf("cites %s, %q: the page does not exist", page, title)
	}
	for _, h := range d.headings {
		if strings.EqualFold(strings.TrimSpace(h), strings.TrimSpace(title)) {
			return ""
		}
	}
	return fmt.Sprintf("cites %s, %q: the page has no such section (its headings: %s)",
		page, title, strings.Join(d.headings, "; "))
}
