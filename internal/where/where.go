package where

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Path marks a host file or folder in a message. Printed with %s or %v it
// is the path itself, the operator's reading.
type Path string

// String is the path as given.
func (p Path) String() string { return string(p) }

// A Namer says what one reader is told of a host path.
type Namer func(host string) string

// Operator is the operator's Namer: every path as it is.
func Operator(host string) string { return host }

// Text is a message with its host paths, and the errors and texts it
// quotes, kept as values. Its zero value is the empty message. In JSON, and
// with %s, it is the operator's text.
type Text struct {
	format string
	args   []any
}

// Sprintf composes a Text the way fmt.Sprintf does. Args that are a
// [Path], a Text or an error are rendered for the reader when the Text is.
func Sprintf(format string, args ...any) Text { return Text{format: format, args: args} }

// Plain is s as a Text with no path in it.
func Plain(s string) Text { return Text{format: "%s", args: []any{s}} }

// String is the operator's text.
func (t Text) String() string { return t.Render(Operator) }

// Render is the text as n's reader is told it.
func (t Text) Render(n Namer) string {
	if t.format == "" {
		return ""
	}
	return fmt.Sprintf(t.format, renderArgs(t.args, n)...)
}

// IsZero reports whether t is the empty message.
func (t Text) IsZero() bool { return t.format == "" }

// MarshalText writes the operator's text, so a Text encodes as the string
// it would print.
func (t Text) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads a text as it was encoded; what were paths are then
// plain text.
func (t *Text) UnmarshalText(b []byte) error {
	*t = Plain(string(b))
	return nil
}

// Error is an error whose message is a Text: Error is the operator's
// message, Render any reader's. It wraps what its %w verbs name, as an
// error from fmt.Errorf does.
type Error struct {
	text    Text
	wrapped error // fmt.Errorf of the same format, for Unwrap
}

// Errorf is fmt.Errorf with its host paths kept as values: mark each with
// Path. Errors among the args (wrapped with %w or quoted with %v) are
// rendered for the reader too.
func Errorf(format string, args ...any) error {
	return &Error{
		text:    Text{format: wrapAsValue(format), args: args},
		wrapped: fmt.Errorf(format, args...), //nolint:err113 // the caller's format, wrapped as written
	}
}

// Error is the operator's message: fmt.Errorf's, word for word.
func (e *Error) Error() string { return e.wrapped.Error() }

// Render is the message as n's reader is told it.
func (e *Error) Render(n Namer) string { return e.text.Render(n) }

// Unwrap returns what the format's %w verbs named.
func (e *Error) Unwrap() []error { return unwrapped(e.wrapped) }

// renderer is an error, or a value with a message, that can say itself to
// a reader.
type renderer interface{ Render(Namer) string }

// Render is err's message as n's reader is told it. Errors that compose
// their message (Error, Text, and the typed errors that implement
// Render(Namer)) say themselves; a path error names its file through n;
// an error that only wraps others, as fmt.Errorf's do, has each wrapped
// error's message, which it holds verbatim, said through n. Any other
// error's message is its own: such an error must not name a host path.
func Render(err error, n Namer) string {
	if err == nil {
		return ""
	}
	switch e := err.(type) { //nolint:errorlint // this error itself: what it wraps is rendered below, one link at a time
	case renderer:
		return e.Render(n)
	case *fs.PathError:
		return e.Op + " " + n(e.Path) + ": " + Render(e.Err, n)
	case *os.LinkError:
		return e.Op + " " + n(e.Old) + " " + n(e.New) + ": " + Render(e.Err, n)
	}
	msg := err.Error()
	for _, inner := range unwrapped(err) {
		said := inner.Error()
		if said == "" {
			continue
		}
		if told := Render(inner, n); told != said {
			msg = strings.Replace(msg, said, told, 1)
		}
	}
	return msg
}

func unwrapped(err error) []error {
	switch w := err.(type) { //nolint:errorlint // the links of this error alone, not of its chain
	case interface{ Unwrap() error }:
		if inner := w.Unwrap(); inner != nil {
			return []error{inner}
		}
	case interface{ Unwrap() []error }:
		return w.Unwrap()
	}
	return nil
}

func renderArgs(args []any, n Namer) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case Path:
			out[i] = n(string(v))
		case ForOperator:
			out[i] = v.Others
			if isOperator(n) {
				out[i] = v.Operator
			}
		case Text:
			out[i] = v.Render(n)
		case error:
			out[i] = Render(v, n)
		default:
			out[i] = a
		}
	}
	return out
}

// wrapAsValue is format with each %w verb (flags, width and all) as %v,
// which fmt.Sprintf takes; "%%w" is a percent sign and a w, and stays.
func wrapAsValue(format string) string {
	if !strings.Contains(format, "w") {
		return format
	}
	b := []byte(format)
	for i := 0; i < len(b); i++ {
		if b[i] != '%' {
			continue
		}
		// Flags, argument indexes, width and precision come before the verb.
		j := i + 1
		for j < len(b) && strings.IndexByte("+-# 0123456789.*[]", b[j]) >= 0 {
			j++
		}
		if j < len(b) && b[j] == 'w' {
			b[j] = 'v'
		}
		i = j
	}
	return string(b)
}

// ForOperator is advice only the operator can follow (a flag of the CLI, a
// folder of the host to pass) with what any other reader is told in its
// place. Printed with %s or %v it is the operator's.
type ForOperator struct{ Operator, Others string }

// String is the operator's advice.
func (f ForOperator) String() string { return f.Operator }

// probe is a host path no Namer knows of.
const probe = "/\x00where-probe"

// isOperator reports whether n's reader is the operator: a reader told a
// host path as it is, who is on the host. Every other reader has host
// paths named for them, and is no user of the host's CLI.
func isOperator(n Namer) bool { return n(probe) == probe }

// JoinPaths is the paths as one Text, sep between them.
func JoinPaths(paths []string, sep string) Text {
	args := make([]any, len(paths))
	for i, p := range paths {
		args[i] = Path(p)
	}
	return Text{format: strings.TrimSuffix(strings.Repeat("%s"+strings.ReplaceAll(sep, "%", "%%"), len(paths)), strings.ReplaceAll(sep, "%", "%%")), args: args}
}
