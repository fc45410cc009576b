package told

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
)

// ServerFile is what a remote caller is told of a host path that is none
// of the places it knows.
const ServerFile = "a file of the server"

// Names say the host's places as a remote caller knows them: each place
// added by what the caller calls it (the skill's folder by its mount point,
// the workspace as /workspace, the sessions folder by what it is), and any
// other host path as a file of the server. Name is the where.Namer that
// renders the Service's messages for a caller; the messages keep their
// paths as values (where.Path), so nothing is rewritten.
type Names struct {
	places []place
	log    *slog.Logger
}

// place is one host folder or file, in each form a message may hold it.
type place struct {
	forms []string // absolute, then with links resolved when that differs
	shown string
}

// New is an empty set of names, logging to log what a check catches.
func New(log *slog.Logger) *Names { return &Names{log: log} }

// Add names host (and the path it resolves to) shown. A place added before
// the places that hold it names what is under it: the first that holds a
// path names it. An empty host adds nothing.
func (c *Names) Add(host, shown string) {
	if host == "" {
		return
	}
	abs, err := filepath.Abs(host)
	if err != nil {
		return
	}
	p := place{forms: []string{abs}, shown: shown}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		p.forms = append(p.forms, real)
	}
	c.places = append(c.places, p)
}

// Name is the where.Namer: host as the caller is told it.
func (c *Names) Name(host string) string {
	abs, err := filepath.Abs(host)
	if err != nil {
		return ServerFile
	}
	for _, p := range c.places {
		for _, form := range p.forms {
			if abs == form {
				return p.shown
			}
			if rest, ok := strings.CutPrefix(abs, form+string(filepath.Separator)); ok {
				return p.shown + "/" + filepath.ToSlash(rest)
			}
		}
	}
	return ServerFile
}

// Say renders a message composed with where for the caller. Should the
// text still hold a host folder (a message written with a path as plain
// text, which is a bug), the caller is told only that, and the operator's
// log has the message: a check, not a rewrite.
func (c *Names) Say(operator string, told string) string {
	for _, p := range c.places {
		for _, form := range p.forms {
			if holdsPath(told, form) && !c.isShown(form) {
				c.log.Warn("a remote answer named a host folder; the caller was told less", "err", operator)
				return "the server's message named one of its own folders, so it went to the operator's log instead"
			}
		}
	}
	return told
}

// holdsPath reports whether text names the path p or a path under it: no
// letter of a name runs into p before it (a slash may: file:///srv/x), and
// p is followed by the end, a slash or a character no name goes on with
// (after any full stops). A path that only begins like p (/work for /w) is
// another path.
func holdsPath(text, p string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], p)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(p)
		before := start == 0 || text[start-1] == '/' || !isPathByte(text[start-1])
		// Dots that end a sentence ("… under /srv/x.") are not part of
		// the name; dots that go on into one (/srv/x.txt) are.
		k := end
		for k < len(text) && text[k] == '.' {
			k++
		}
		after := k == len(text) || text[k] == '/' || !isPathByte(text[k])
		if before && after {
			return true
		}
		i = start + 1
	}
}

func isPathByte(b byte) bool {
	return b == '/' || b == '.' || b == '_' || b == '-' || b == '~' ||
		'0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b >= 0x80
}

// isShown reports whether a host path's text is part of what the caller
// is told anyway: skills kept at /skills on the host, say, whose folders
// the sandbox shows under the same names. Such a path hides nothing.
func (c *Names) isShown(form string) bool {
	for _, p := range c.places {
		if p.shown == form || strings.HasPrefix(p.shown, form+"/") {
			return true
		}
	}
	return false
}

// Err is err as the caller is told it: its message rendered through the
// names, its chain kept for errors.Is and errors.As, and a skill's load
// errors, whose fields a front end shows apart from the message, found
// with their paths told the same way. A command denial needs no telling:
// its fields quote the caller's own command.
func (c *Names) Err(err error) error {
	t := &toldError{msg: c.Say(err.Error(), where.Render(err, c.Name)), err: err}
	var pe *skill.ParseError
	if errors.As(err, &pe) {
		copied := *pe
		copied.Path = c.Name(pe.Path)
		t.parse = &copied
	}
	var me *skill.ManifestError
	if errors.As(err, &me) {
		copied := *me
		copied.Path = c.Name(me.Path)
		t.manifest = &copied
	}
	return t
}

// Limits are l as the caller is shown them: where each value came from,
// rendered through the names, and the operator's upstream CA file by what
// it is.
func (c *Names) Limits(l policy.Limits) policy.Limits {
	if len(l.Sources) > 0 {
		src := make(map[string]where.Text, len(l.Sources))
		for k, v := range l.Sources {
			src[k] = where.Plain(c.Say(v.String(), v.Render(c.Name)))
		}
		l.Sources = src
	}
	if l.Egress != nil && l.Egress.UpstreamCA != "" {
		eg := *l.Egress
		eg.UpstreamCA = "operator CA"
		l.Egress = &eg
	}
	return l
}

// toldError is an error as a remote caller is told it. What it wraps still
// decides how it is classified; a skill's load errors are found (errors.As)
// with their paths told, so that their fields say no more than the message.
type toldError struct {
	msg      string
	parse    *skill.ParseError    // told; nil when err holds none
	manifest *skill.ManifestError // likewise
	err      error
}

func (e *toldError) Error() string { return e.msg }
func (e *toldError) Unwrap() error { return e.err }

// As hands out the told copies in place of the errors err holds.
func (e *toldError) As(target any) bool {
	switch t := target.(type) {
	case **skill.ParseError:
		*t = e.parse
		return e.parse != nil
	case **skill.ManifestError:
		*t = e.manifest
		return e.manifest != nil
	}
	return false
}
