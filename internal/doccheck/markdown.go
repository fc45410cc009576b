package doccheck

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// Problem is one dead reference, at the line that makes it.
type Problem struct {
	File string // relative to the checked root
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// doc is what the checker needs of one Markdown file.
type doc struct {
	anchors  map[string]bool
	headings []string // heading text as written, for citations by name
	links    []link
}

type link struct {
	dest string
	line int
}

// The same parser GitHub's renderer follows (CommonMark plus tables,
// autolinks and strikethrough), so a link counts exactly when it renders.
var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

func parseDoc(src []byte) *doc {
	d := &doc{anchors: map[string]bool{}}
	root := md.Parser().Parse(text.NewReader(src))
	seen := map[string]int{}
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			title := plainText(n, src)
			d.headings = append(d.headings, title)
			d.anchors[uniqueSlug(Slug(title), seen)] = true
		case *ast.Link:
			d.links = append(d.links, link{dest: string(n.Destination), line: lineOf(n, src)})
		case *ast.Image:
			d.links = append(d.links, link{dest: string(n.Destination), line: lineOf(n, src)})
		}
		return ast.WalkContinue, nil
	})
	return d
}

// plainText is a heading's text as GitHub slugs it: the words of its
// inline children, code spans included, markup left out.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	var walk func(ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Segment.Value(src))
				if c.SoftLineBreak() {
					b.WriteByte(' ')
				}
			case *ast.String:
				b.Write(c.Value)
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

// lineOf is the 1-based line of an inline node: that of the first line of
// the block holding it (inline nodes carry no position of their own).
func lineOf(n ast.Node, src []byte) int {
	for p := n; p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			return 1 + bytes.Count(src[:p.Lines().At(0).Start], []byte("\n"))
		}
	}
	return 0
}

// Slug is the anchor GitHub gives a heading: lower case, every character
// but letters, digits, marks, '_', '-' and ' ' dropped, each space a '-'.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// uniqueSlug numbers a repeated heading's anchor as GitHub does: x, x-1, x-2.
func uniqueSlug(s string, seen map[string]int) string {
	n, dup := seen[s]
	seen[s] = n + 1
	if !dup {
		return s
	}
	return fmt.Sprintf("%s-%d", s, n)
}

// docs parses Markdown files once each, by path.
type docs map[string]*doc

func (c docs) get(path string) (*doc, error) {
	if d, ok := c[path]; ok {
		return d, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := parseDoc(src)
	c[path] = d
	return d, nil
}

// checkLinks reports the relative links of one Markdown file that lead
// nowhere: a missing file or folder, or an anchor no heading of the
// target makes.
func (c docs) checkLinks(root, rel string) ([]Problem, error) {
	path := filepath.Join(root, rel)
	d, err := c.get(path)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, l := range d.links {
		if msg := c.resolve(root, path, l.dest); msg != "" {
			out = append(out, Problem{File: rel, Line: l.line, Msg: msg})
		}
	}
	return out, nil
}

func (c docs) resolve(root, from, dest string) string {
	u, err := url.Parse(dest)
	if err != nil {
		return fmt.Sprintf("link %q does not parse: %v", dest, err)
	}
	if u.Scheme != "" || u.Host != "" {
		return "" // outside the repository: not this test's to fetch
	}
	target := from
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") {
			target = filepath.Join(root, u.Path)
		} else {
			target = filepath.Join(filepath.Dir(from), u.Path)
		}
		if _, err := os.Stat(target); err != nil {
			return fmt.Sprintf("link %q: %s does not exist", dest, relTo(root, target))
		}
	}
	if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
		return "" // an anchor into code (#L10) is GitHub's, not a heading
	}
	d, err := c.get(target)
	if err != nil {
		return fmt.Sprintf("link %q: %v", dest, err)
	}
	if !d.anchors[u.Fragment] {
		return fmt.Sprintf("link %q: %s has no heading with anchor #%s", dest, relTo(root, target), u.Fragment)
	}
	return ""
}

func relTo(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}
