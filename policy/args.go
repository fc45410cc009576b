package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/sandboxrun/sandboxrun/internal/size"
)

// MaxArgsBytes caps the JSON arguments of one execution (docs/policy.md, "Limits and where they come from").
const MaxArgsBytes = 10 << 20

// ErrBadArgs is wrapped by every refusal of ParseArgs.
var ErrBadArgs = errors.New("invalid JSON arguments")

// ParseArgs checks the JSON arguments for a script and returns them compacted.
// They must be one JSON object of at most MaxArgsBytes; empty or blank input
// means no arguments and gives {}.
func ParseArgs(data []byte) (json.RawMessage, error) {
	if len(data) > MaxArgsBytes {
		return nil, fmt.Errorf("%w: %d bytes is over the %s limit; pass large data as a file in the workspace and its path in the arguments", ErrBadArgs, len(data), size.Format(MaxArgsBytes))
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	lead := len(data) - len(trimmed)
	trimmed = bytes.TrimRight(trimmed, " \t\r\n")
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !utf8.Valid(trimmed) {
		return nil, fmt.Errorf("%w: the arguments are not valid UTF-8; JSON text must be UTF-8", ErrBadArgs)
	}
	// Unmarshal's validity scan reports the failing offset (Compact's does
	// not); a RawMessage target keeps it from building a value tree.
	var raw json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			// Offset counts the bytes read, so it is the 1-based position of
			// the offending byte.
			return nil, fmt.Errorf("%w: not JSON at byte %d (%w); pass a JSON object such as {\"input\": \"data.csv\"}", ErrBadArgs, int64(lead)+syn.Offset, syn)
		}
		return nil, fmt.Errorf("%w: not JSON (%w); pass a JSON object such as {\"input\": \"data.csv\"}", ErrBadArgs, err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, trimmed); err != nil {
		return nil, fmt.Errorf("%w: compacting: %w", ErrBadArgs, err)
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: got %s, not an object; wrap the value in an object, e.g. {\"value\": ...}", ErrBadArgs, jsonKind(trimmed[0]))
	}
	return json.RawMessage(out.Bytes()), nil
}

// jsonKind names the JSON value that starts with c (the value is valid).
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
