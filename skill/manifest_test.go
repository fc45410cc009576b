package skill

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNameRules(t *testing.T) {
	tests := []struct {
		name    string
		value   string // YAML scalar as written
		want    string // normalised name
		problem string // substring of the validate error, "" when valid
	}{
		{"simple", "pdf-processing", "pdf-processing", ""},
		{"single char", "a", "a", ""},
		{"digits", "v2-tool-3", "v2-tool-3", ""},
		{"leading digit", "1password", "1password", ""},
		{"64 chars", strings.Repeat("a", 64), strings.Repeat("a", 64), ""},
		{"unicode lowercase", "café-outils", "café-outils", ""},
		{"cjk letters", "技能", "技能", ""},
		{"cyrillic lowercase", "навык", "навык", ""},
		{"number as name", "123", "123", ""},
		{"surrounding blanks trimmed", `"  demo  "`, "demo", ""},
		{"65 chars", strings.Repeat("a", 65), "", "65 characters; the spec allows at most 64"},
		{"65 runes of 2 bytes", strings.Repeat("é", 65), "", "65 characters"},
		{"uppercase", "PDF-Processing", "", `must be lowercase; use "pdf-processing"`},
		{"unicode uppercase", "Café", "", "must be lowercase"},
		{"cyrillic uppercase", "Навык", "", "must be lowercase"},
		{"leading hyphen", "-pdf", "", "must not start or end with a hyphen"},
		{"trailing hyphen", "pdf-", "", "must not start or end with a hyphen"},
		{"double hyphen", "pdf--processing", "", "must not contain `--`"},
		{"underscore", "pdf_processing", "", `contains "_"`},
		{"space", `"pdf processing"`, "", `contains " "`},
		{"slash", "a/b", "", `contains "/"`},
		{"dot dot", "..", "", `contains "."`},
		{"empty string", `""`, "", "`name` is empty"},
		{"blank string", `"   "`, "", "`name` is empty"},
		{"null", "", "", "`name` is missing"},
		{"list", "[a, b]", "", "`name` is a YAML list"},
		{"mapping", "{a: b}", "", "`name` is a YAML mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, probs := decodeFront(t, "name: "+tt.value+"\ndescription: d\n")
			// Name rules never make a skill unusable: they are warnings
			// that loading reports, and errors in validate (either mode).
			require.Empty(t, messages(probs, sevFatal))
			require.Empty(t, messages(probs, sevStrict), "a name rule is an error in validate even without --strict")
			errs := messages(probs, sevError)
			if tt.problem == "" {
				require.Empty(t, errs)
				require.Equal(t, tt.want, m.Name)
				return
			}
			requireOneContaining(t, errs, tt.problem)
			for _, p := range probs {
				if p.sev == sevError {
					require.True(t, p.loud, "%q is reported when the skill loads", p.msg)
				}
			}
		})
	}
}

func TestNameNFKC(t *testing.T) {
	// U+FB01 (the "fi" ligature) normalises to "fi"; full-width letters to
	// ASCII. The reference validator compares NFKC forms, so these are
	// valid, but sandboxrun says to write the normal form.
	tests := []struct{ value, want string }{
		{"\ufb01le-tool", "file-tool"},
		{"ｄｅｍｏ", "demo"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			m, probs := decodeFront(t, "name: "+tt.value+"\ndescription: d\n")
			require.Empty(t, messages(probs, sevFatal))
			require.Equal(t, tt.want, m.Name)
			requireOneContaining(t, messages(probs, sevWarn), "not NFKC-normalised")
		})
	}
	// Full-width capitals normalise to ASCII capitals, which break the rule.
	_, probs := decodeFront(t, "name: ＤＥＭＯ\ndescription: d\n")
	requireOneContaining(t, messages(probs, sevError), `must be lowercase; use "demo"`)
}

func TestDescriptionRules(t *testing.T) {
	tests := []struct {
		name  string
		value string
		sev   severity
		want  string // "" when valid
	}{
		{"ok", "Extracts text. Use for PDFs.", 0, ""},
		{"1024 runes", strings.Repeat("é", 1024), 0, ""},
		{"number is text", "42", 0, ""},
		{"1025 runes", strings.Repeat("é", 1025), sevError, "1025 characters; the spec allows at most 1024"},
		{"missing", "", sevFatal, "`description` is missing"},
		{"empty", `""`, sevFatal, "`description` is blank"},
		{"blank", `"  \t "`, sevFatal, "`description` is blank"},
		{"list", "[a]", sevFatal, "`description` is a YAML list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, probs := decodeFront(t, "name: demo\ndescription: "+tt.value+"\n")
			if tt.want == "" {
				require.Empty(t, messages(probs, sevFatal))
				require.Empty(t, messages(probs, sevError))
				return
			}
			requireOneContaining(t, messages(probs, tt.sev), tt.want)
		})
	}
}

func TestCompatibilityAndLicense(t *testing.T) {
	tests := []struct {
		name  string
		front string
		sev   severity
		want  string
	}{
		{"compat 500", "compatibility: " + strings.Repeat("x", 500) + "\n", 0, ""},
		{"compat 501", "compatibility: " + strings.Repeat("x", 501) + "\n", sevError, "`compatibility` is 501 characters; the spec allows at most 500"},
		{"compat 501 runes", "compatibility: " + strings.Repeat("ü", 501) + "\n", sevError, "501 characters"},
		{"compat list", "compatibility: [a]\n", sevFatal, "`compatibility` is a YAML list"},
		{"license", "license: Apache-2.0\n", 0, ""},
		{"license mapping", "license: {a: b}\n", sevFatal, "`license` is a YAML mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, probs := decodeFront(t, minimalFront+tt.front)
			if tt.want == "" {
				require.Empty(t, messages(probs, sevFatal))
				require.Empty(t, messages(probs, sevError))
				return
			}
			requireOneContaining(t, messages(probs, tt.sev), tt.want)
		})
	}
}

func TestMetadataMap(t *testing.T) {
	tests := []struct {
		name  string
		front string
		sev   severity
		want  string
		meta  map[string]string
	}{
		{"strings", "metadata:\n  author: me\n  version: \"1.0\"\n", 0, "", map[string]string{"author": "me", "version": "1.0"}},
		{"empty map", "metadata: {}\n", 0, "", map[string]string{}},
		{"null", "metadata:\n", 0, "", nil},
		// YAML's numbers and booleans keep their text; only the spec's
		// letter is broken, so they are warnings (errors in strict mode).
		{"number value", "metadata:\n  version: 1.0\n", sevStrict, "`metadata.version` is not a string (YAML reads 1.0 as a number)", map[string]string{"version": "1.0"}},
		{"bool value", "metadata:\n  beta: true\n", sevStrict, `quote it: ` + "`beta: \"true\"`", map[string]string{"beta": "true"}},
		{"null value", "metadata:\n  beta:\n", sevStrict, "`metadata.beta` is not a string", map[string]string{"beta": ""}},
		{"list value", "metadata:\n  tags: [a, b]\n", sevError, "`metadata.tags` is a YAML list; the spec allows only string values, write it as `tags: \"a b\"`", map[string]string{}},
		{"map value", "metadata:\n  x: {a: b}\n", sevError, "`metadata.x` is a YAML mapping", map[string]string{}},
		{"int key", "metadata:\n  1: one\n", sevError, "key `metadata.1` must be a string", map[string]string{"1": "one"}},
		{"duplicate key", "metadata:\n  a: x\n  a: y\n", sevFatal, "`metadata.a` is given twice", map[string]string{"a": "x"}},
		{"not a map", "metadata: just text\n", sevFatal, "`metadata` is a YAML scalar; it must be a mapping", nil},
		{"list", "metadata: [a]\n", sevFatal, "`metadata` is a YAML list", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, probs := decodeFront(t, minimalFront+tt.front)
			require.Equal(t, tt.meta, m.Metadata)
			if tt.want == "" {
				require.Empty(t, messages(probs, sevFatal))
				require.Empty(t, messages(probs, sevError))
				return
			}
			requireOneContaining(t, messages(probs, tt.sev), tt.want)
		})
	}
}

func TestTopLevelFields(t *testing.T) {
	tests := []struct {
		name  string
		front string
		want  string // the strict-mode problem, "" for none
	}{
		{"spec only", "license: MIT\ncompatibility: x\nallowed-tools: Read\nmetadata: {a: b}\n", ""},
		{"unknown scalar", "tags: demo\n", "top-level field `tags` is not in the Agent Skills spec; move it under `metadata:` as `tags: \"demo\"`"},
		{"unknown list", "tags: [a, b]\n", "as `tags: \"a b\"`"},
		{"exec field", "max_memory: 256\n", "top-level `max_memory` is not in the Agent Skills spec; move it under `metadata:` as `max_memory: \"256\"`"},
		{"exec list", "python_packages: [pandas, numpy]\n", "as `python_packages: \"pandas numpy\"`"},
		{"exec in both places", "version: \"1.0\"\nmetadata:\n  version: \"1.0\"\n", "top-level `version` repeats `metadata.version`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, probs := decodeFront(t, minimalFront+tt.front)
			require.Empty(t, messages(probs, sevFatal))
			strict := messages(probs, sevStrict)
			if tt.want == "" {
				require.Empty(t, strict)
				return
			}
			requireOneContaining(t, strict, tt.want)
		})
	}
	_, probs := decodeFront(t, minimalFront+"name: other\n")
	requireOneContaining(t, messages(probs, sevFatal), "`name` is given twice (also on line 2)")
}

func TestAllowedTools(t *testing.T) {
	tests := []struct {
		name  string
		value string
		raw   string
		tools int
		sev   severity
		want  string
	}{
		{"string", "Bash(git status:*) Read", "Bash(git status:*) Read", 2, 0, ""},
		{"commas", "Read, Write", "Read, Write", 2, 0, ""},
		{"list", "[\"Bash(python3:*)\", Read]", "Bash(python3:*) Read", 2, 0, ""},
		{"block list", "\n  - Read\n  - Grep\n", "Read Grep", 2, 0, ""},
		{"empty", `""`, "", 0, 0, ""},
		{"unknown tool", "Read Frobnicate", "Read Frobnicate", 2, sevWarn, "unknown tool `Frobnicate`"},
		{"wrong case", "bash", "bash", 1, sevWarn, "did you mean `Bash`?"},
		{"unbalanced", "Bash(git status:*", "", 0, sevFatal, "`allowed-tools` does not parse"},
		{"mapping", "{a: b}", "", 0, sevFatal, "`allowed-tools` is a YAML mapping"},
		{"list of lists", "[[a]]", "", 0, sevFatal, "list items must be strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, probs := decodeFront(t, minimalFront+"allowed-tools: "+tt.value+"\n")
			require.Len(t, m.AllowedTools, tt.tools)
			if tt.raw != "" {
				require.Equal(t, tt.raw, m.AllowedToolsRaw)
			}
			if tt.want == "" {
				require.Empty(t, messages(probs, sevFatal))
				require.Empty(t, messages(probs, sevWarn))
				return
			}
			requireOneContaining(t, messages(probs, tt.sev), tt.want)
		})
	}
}
