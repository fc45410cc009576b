package skill

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// decodeScriptBlock reads the TOML of a script block; first is the file line
// of the block's first content line. The whole document must be valid TOML
// (go-toml decides: multi-line strings, inline tables, [[tool.uv.index]] and
// dates are all fine). Of its keys only dependencies, requires-python and
// the [tool] tables are allowed, as PEP 723 says; the first two are read
// with the line of each value, for messages that point at it.
func decodeScriptBlock(content, path string, first int) (*ScriptMetadata, error) {
	lineErr := func(line int, format string, args ...any) error {
		return &InlineMetadataError{Path: path, Line: first + line - 1, Msg: fmt.Sprintf(format, args...)}
	}
	var doc map[string]any
	if err := toml.Unmarshal([]byte(content), &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, lineErr(row, "%s; the block must be valid TOML", strings.TrimPrefix(de.Error(), "toml: "))
		}
		return nil, &InlineMetadataError{Path: path, Line: first, Msg: fmt.Sprintf("%v; the block must be valid TOML", err)}
	}

	meta := &ScriptMetadata{}
	var p unstable.Parser
	p.Reset([]byte(content))
	table := ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			key, line := dottedKey(&p, e.Key())
			if key != "tool" && !strings.HasPrefix(key, "tool.") {
				return nil, lineErr(line, "unknown table `[%s]`; a script block holds %s", key, knownScriptK)
			}
			table = key
		case unstable.KeyValue:
			key, line := dottedKey(&p, e.Key())
			if table != "" {
				continue // inside [tool...]: not sandboxrun's business
			}
			if err := decodeScriptKey(&p, meta, key, e.Value(), line, lineErr); err != nil {
				return nil, err
			}
		}
	}
	if err := p.Error(); err != nil {
		// Unmarshal accepted the document, so the parser cannot fail.
		return nil, &InlineMetadataError{Path: path, Line: first, Msg: err.Error()}
	}
	for i := range meta.DependencyLines {
		meta.DependencyLines[i] += first - 1
	}
	if meta.RequiresPythonLine > 0 {
		meta.RequiresPythonLine += first - 1
	}
	return meta, nil
}

// decodeScriptKey reads one top-level key of a script block into meta;
// lines in meta are relative to the block (1-based) until the caller
// shifts them.
func decodeScriptKey(p *unstable.Parser, meta *ScriptMetadata, key string, v *unstable.Node, line int,
	lineErr func(int, string, ...any) error) error {
	switch {
	case key == "dependencies":
		if v.Kind != unstable.Array {
			return lineErr(line, "`dependencies` is %s; write a list of requirement strings, e.g. dependencies = [\"requests>=2\"]", tomlKind(v.Kind))
		}
		it := v.Children()
		for it.Next() {
			item := it.Node()
			if item.Kind == unstable.Comment {
				continue
			}
			itemLine := nodeLine(p, item, line)
			if item.Kind != unstable.String {
				return lineErr(itemLine, "`dependencies` has %s; every item must be a requirement string such as \"requests>=2\"", tomlKind(item.Kind))
			}
			dep := string(item.Data)
			if hasControl(dep) {
				return lineErr(itemLine, "a dependency contains a control character; write the requirement as plain text")
			}
			meta.Dependencies = append(meta.Dependencies, dep)
			meta.DependencyLines = append(meta.DependencyLines, itemLine)
		}
	case key == "requires-python":
		if v.Kind != unstable.String {
			return lineErr(line, "`requires-python` is %s; write a version specifier string such as \">=3.10\"", tomlKind(v.Kind))
		}
		spec := string(v.Data)
		if hasControl(spec) || !requiresPythonSpec.MatchString(spec) {
			return lineErr(line, "`requires-python` is %q; write a version specifier such as \">=3.10\" or \">=3.9,<4\"", spec)
		}
		meta.RequiresPython, meta.RequiresPythonLine = strings.TrimSpace(spec), line
	case strings.HasPrefix(key, "tool."):
		// Tool settings (uv, hatch, ...) are not sandboxrun's business.
	default:
		return lineErr(line, "unknown key `%s`; a script block holds %s", key, knownScriptK)
	}
	return nil
}

// dottedKey joins a key's parts with "." and returns the 1-based line of
// its first part.
func dottedKey(p *unstable.Parser, it unstable.Iterator) (string, int) {
	var parts []string
	line := 1
	for it.Next() {
		n := it.Node()
		if len(parts) == 0 {
			line = nodeLine(p, n, 1)
		}
		parts = append(parts, string(n.Data))
	}
	return strings.Join(parts, "."), line
}

// nodeLine is the 1-based line where n starts, or fallback when the parser
// kept no position for it.
func nodeLine(p *unstable.Parser, n *unstable.Node, fallback int) int {
	if n.Raw.Length == 0 && n.Raw.Offset == 0 {
		return fallback
	}
	return p.Shape(n.Raw).Start.Line
}

// tomlKind names a TOML value's kind, with its article, for messages.
func tomlKind(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Bool:
		return "a boolean"
	case unstable.Integer, unstable.Float:
		return "a number"
	case unstable.Array:
		return "a list"
	case unstable.InlineTable, unstable.Table, unstable.ArrayTable:
		return "a table"
	case unstable.LocalDate, unstable.LocalDateTime, unstable.DateTime, unstable.LocalTime:
		return "a date or time"
	}
	return "a " + strings.ToLower(k.String())
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}
