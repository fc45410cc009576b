package skill

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

func TestValidateStrictVersusDefault(t *testing.T) {
	tests := []struct {
		name         string
		front        string
		defaultValid bool
		strictValid  bool
		warning      string // expected in default mode ("" for none)
	}{
		{"spec conformant", minimalFront + "metadata:\n  max_memory: \"256\"\n", true, true, ""},
		{"top-level exec field", minimalFront + "max_memory: 256\n", true, false, "top-level `max_memory` is not in the Agent Skills spec; move it under `metadata:` as `max_memory: \"256\"`"},
		{"unknown field", minimalFront + "author: me\n", true, false, "top-level field `author` is not in the Agent Skills spec"},
		{"bad exec value", minimalFront + "metadata:\n  max_memory: \"8\"\n", false, false, ""},
		{"spec rule", minimalFront + "compatibility: " + strings.Repeat("x", 501) + "\n", false, false, ""},
		{"non-string metadata", minimalFront + "metadata:\n  version: 1.0\n", true, false, "`metadata.version` is not a string (YAML reads 1.0 as a number)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), "demo", doc(tt.front, "# Demo\n"), nil)
			def := Validate(dir, false)
			strict := Validate(dir, true)
			require.Equal(t, tt.defaultValid, def.Valid, "default: %+v", def)
			require.Equal(t, tt.strictValid, strict.Valid, "strict: %+v", strict)
			require.Equal(t, "demo", def.Name)
			require.Equal(t, dir, def.Path)
			if tt.warning != "" {
				requireOneContaining(t, def.Warnings, tt.warning)
				requireOneContaining(t, strict.Errors, tt.warning)
				require.Empty(t, def.Errors)
			}
		})
	}
}

// TestValidateNameErrorsWithoutStrict: a name other hosts refuse is an error
// in validate with or without strict, as in the spec's reference validator,
// while loading the skill (list, run) still works and only warns.
func TestValidateNameErrorsWithoutStrict(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct {
		name, folder, skillName string
		want                    string // a fragment of the one error naming the problem
		runsAs                  string // the name Load gives the skill
	}{
		{"capitals", "MySkill", "MySkill", `must be lowercase; use "myskill"`, "MySkill"},
		{"underscore", "my_skill", "my_skill", `contains "_"`, "my_skill"},
		{"double hyphen", "my--skill", "my--skill", "must not contain `--`", "my--skill"},
		{"70 characters", long, long, "70 characters; the spec allows at most 64", long},
		{"differs from folder", "demo", "other", `does not match the folder name "demo"`, "other"},
		{"cannot be a folder", "demo", `"my demo"`, `cannot be a folder name in the sandbox; sandboxrun uses the folder name "demo"`, "demo"},
		{"missing", "demo", `""`, "`name` is empty", "demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), tt.folder, doc("name: "+tt.skillName+"\ndescription: d\n", ""), nil)
			for _, strict := range []bool{false, true} {
				r := Validate(dir, strict)
				require.False(t, r.Valid, "strict=%v: %+v", strict, r)
				requireOneContaining(t, r.Errors, tt.want)
				for _, w := range r.Warnings {
					require.NotContains(t, w, tt.want, "strict=%v: a name problem is an error, not a warning", strict)
				}
			}
			s, err := Load(dir)
			require.NoError(t, err, "the skill still loads")
			require.Equal(t, tt.runsAs, s.Manifest.Name)
			requireOneContaining(t, s.Warnings(), tt.want)
			require.Error(t, s.Strict())
		})
	}
}

func TestValidateFolderName(t *testing.T) {
	nfc := "café"
	nfd := norm.NFD.String(nfc)
	require.NotEqual(t, nfc, nfd)
	tests := []struct {
		name, folder, skillName string
		valid                   bool
	}{
		{"match", "demo", "demo", true},
		{"mismatch", "other", "demo", false},
		{"nfkc equal forms", nfd, nfc, true},
		{"nfkc ligature", "\ufb01le", "file", true},
		{"nfkc mismatch", "cafe", nfc, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), tt.folder, doc("name: "+tt.skillName+"\ndescription: d\n", ""), nil)
			for _, strict := range []bool{false, true} {
				r := Validate(dir, strict)
				require.Equal(t, tt.valid, r.Valid, "strict=%v: %+v", strict, r)
				if !tt.valid {
					requireOneContaining(t, r.Errors, "does not match the folder name")
				}
			}
		})
	}
}

func TestValidateBodyReferences(t *testing.T) {
	files := map[string]string{
		"scripts/run.py":      "print(1)\n",
		"scripts/lib/util.py": "x = 1\n",
	}
	tests := []struct {
		name  string
		body  string
		error string // "" when valid
	}{
		{"bare", "Run `python3 scripts/run.py`.\n", ""},
		{"base dir", "Run {baseDir}/scripts/run.py now.\n", ""},
		{"sandbox path", "Run /skills/demo/scripts/run.py\n", ""},
		{"dot slash", "Run ./scripts/run.py\n", ""},
		{"markdown link", "See [the script](scripts/run.py).\n", ""},
		{"subfolder", "Uses scripts/lib/util.py\n", ""},
		{"folder itself", "Everything is in scripts/ here.\n", ""},
		{"glob", "Any of scripts/*.py or scripts/run*.py\n", ""},
		{"other skill", "Compare /skills/other/scripts/missing.py\n", ""},
		{"not at word start", "See myscripts/missing.py and docs/scripts/missing.py\n", ""},
		{"missing bare", "intro\n\nRun scripts/missing.py.\n", "line 7: the body references `scripts/missing.py`, which does not exist"},
		{"missing base dir", "Run `{baseDir}/scripts/nope.sh`\n", "`scripts/nope.sh`, which does not exist"},
		{"missing sandbox path", "Run /skills/demo/scripts/gone.js\n", "`scripts/gone.js`, which does not exist"},
		{"escapes", "Run scripts/../../etc/passwd\n", "leads out of scripts/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, tt.body), files)
			r := Validate(dir, true)
			if tt.error == "" {
				require.True(t, r.Valid, "%+v", r)
				return
			}
			require.False(t, r.Valid)
			requireOneContaining(t, r.Errors, tt.error)
		})
	}
	// Each missing path is reported once.
	dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, "scripts/convert.py\nscripts/convert.py\n"), nil)
	require.Len(t, Validate(dir, false).Errors, 1)

	// Paths that read as illustrations are warnings, also in strict mode.
	for _, body := range []string{
		"Add your own, e.g. scripts/convert.py\n",
		"```\nmy-skill/\n└── scripts/fill.py\n```\n",
		"Run scripts/your_script.py\n",
		"Run scripts/example.py\n",
		"Run scripts/NAME.py\n",
		"Copy scripts/template.sh\n",
	} {
		t.Run("example "+body, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, body), files)
			r := Validate(dir, true)
			require.True(t, r.Valid, "%+v", r)
			requireOneContaining(t, r.Warnings, "which does not exist")
			requireOneContaining(t, r.Warnings, "reads like an example")
		})
	}
}

func TestValidateInterpreters(t *testing.T) {
	tests := []struct {
		name    string
		front   string
		files   map[string]string
		invalid string // the script named in the error, "" when valid
	}{
		{"known extensions", minimalFront, map[string]string{
			"scripts/a.py": "", "scripts/b.sh": "", "scripts/c.js": "", "scripts/d.mjs": "", "scripts/e.bash": ""}, ""},
		{"no interpreter", minimalFront, map[string]string{"scripts/tool.rb": "puts 1\n"}, "scripts/tool.rb has no interpreter"},
		{"data files need none", minimalFront, map[string]string{
			"scripts/notes.txt": "hello\n", "scripts/config.json": "{}", "scripts/table.csv": "a,b\n",
			"scripts/README.md": "# x\n", "scripts/report.html.j2": "{{ x }}", "scripts/schema.yaml": "a: 1\n",
			"scripts/requirements.txt": "tabulate\n", "scripts/LICENSE": "MIT\n"}, ""},
		{"runtime override", minimalFront + "metadata:\n  runtime: python3\n", map[string]string{"scripts/tool": "print(1)\n"}, ""},
		{"subfolders not entry points", minimalFront, map[string]string{"scripts/data/table.csv": "a,b\n"}, ""},
		{"hidden files skipped", minimalFront, map[string]string{"scripts/.DS_Store": "x"}, ""},
		{"no scripts folder", minimalFront, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), "demo", doc(tt.front, ""), tt.files)
			r := Validate(dir, false)
			if tt.invalid == "" {
				require.True(t, r.Valid, "%+v", r)
				return
			}
			requireOneContaining(t, r.Errors, tt.invalid)
		})
	}

	t.Run("shebang", func(t *testing.T) {
		dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, ""), map[string]string{
			"scripts/tool": "#!/usr/bin/env python3\nprint(1)\n"})
		r := Validate(dir, true)
		require.True(t, r.Valid, "%+v", r)
	})
	// The runner's path guard applies: what it would refuse to run is an
	// error here too.
	t.Run("dangling symlink", func(t *testing.T) {
		dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, ""), map[string]string{"scripts/ok.py": ""})
		require.NoError(t, os.Symlink("nowhere.py", filepath.Join(dir, "scripts", "dangling.py")))
		requireOneContaining(t, Validate(dir, false).Errors, "scripts/dangling.py cannot be run")
	})
	t.Run("symlink out of scripts", func(t *testing.T) {
		dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, "Run scripts/link.py\n"), map[string]string{"elsewhere.py": "", "scripts/ok.py": ""})
		require.NoError(t, os.Symlink("../elsewhere.py", filepath.Join(dir, "scripts", "link.py")))
		errs := Validate(dir, false).Errors
		requireOneContaining(t, errs, "scripts/link.py cannot be run")
		requireOneContaining(t, errs, "the body references `scripts/link.py`, which sandboxrun will not run")
	})
	t.Run("setuid", func(t *testing.T) {
		dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, ""), map[string]string{"scripts/s.sh": ""})
		require.NoError(t, os.Chmod(filepath.Join(dir, "scripts", "s.sh"), 0o755|os.ModeSetuid))
		requireOneContaining(t, Validate(dir, false).Errors, "scripts/s.sh cannot be run")
	})
}

func TestValidateBodySize(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"500 lines", strings.Repeat("x\n", 500), ""},
		{"501 lines", strings.Repeat("x\n", 501), "the body is 501 lines; keep it under 500"},
		{"about 5000 tokens", strings.Repeat("abcd", 5000), ""},
		{"over 5000 tokens", strings.Repeat("é", 20004), "the body is about 5001 tokens"},
		{"invalid utf-8", "ok \xff\n", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, tt.body), nil)
			r := Validate(dir, true)
			require.True(t, r.Valid, "size is only ever a warning: %+v", r)
			if tt.want == "" {
				require.Empty(t, r.Warnings)
				return
			}
			requireOneContaining(t, r.Warnings, tt.want)
		})
	}
}

func TestValidateUnreadable(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	tests := []struct {
		name, dir, want string
	}{
		{"missing folder", filepath.Join(root, "nope"), "no such file"},
		{"a file", file, "not a directory"},
		{"no SKILL.md", root, "no SKILL.md"},
		{"broken frontmatter", writeSkill(t, root, "bad", "no frontmatter\n", nil), "missing frontmatter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Validate(tt.dir, false)
			require.False(t, r.Valid)
			require.Len(t, r.Errors, 1)
			require.Contains(t, r.Errors[0], tt.want)
		})
	}
}

func TestReportJSON(t *testing.T) {
	dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, ""), nil)
	b, err := json.Marshal([]Report{Validate(dir, true), {Path: "x"}})
	require.NoError(t, err)
	var got []map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	require.Len(t, got, 2)
	for _, r := range got {
		require.ElementsMatch(t, []string{"path", "name", "valid", "errors", "warnings"}, keys(r))
		require.Equal(t, []any{}, r["errors"])
		require.Equal(t, []any{}, r["warnings"])
	}
	require.Equal(t, true, got[0]["valid"])
	require.Equal(t, "demo", got[0]["name"])
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestValidatePath(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, root, "b-skill", doc("name: b-skill\ndescription: d\n", ""), nil)
	writeSkill(t, root, "a-skill", doc("name: a-skill\ndescription: d\n", ""), nil)
	writeSkill(t, root, "broken", doc("name: [\n", ""), nil)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "not-a-skill"), 0o755))

	reports, err := ValidatePath(root, true)
	require.NoError(t, err)
	require.Len(t, reports, 3)
	require.Equal(t, filepath.Join(root, "a-skill"), reports[0].Path)
	require.Equal(t, filepath.Join(root, "b-skill"), reports[1].Path)
	require.False(t, reports[2].Valid)

	one, err := ValidatePath(filepath.Join(root, "a-skill"), true)
	require.NoError(t, err)
	require.Len(t, one, 1)
	require.True(t, one[0].Valid)

	_, err = ValidatePath(filepath.Join(root, "not-a-skill"), false)
	require.ErrorIs(t, err, ErrNoSkills)
	_, err = ValidatePath(filepath.Join(root, "missing"), false)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestExampleSkillsStrict keeps the shipped examples spec-clean: they are
// the README's demo and the integration tests' fixtures.
func TestExampleSkillsStrict(t *testing.T) {
	reports, err := ValidatePath(filepath.Join("..", "skills"), true)
	require.NoError(t, err)
	var names []string
	for _, r := range reports {
		names = append(names, r.Name)
		require.True(t, r.Valid, "%s: %v", r.Path, r.Errors)
		require.Empty(t, r.Warnings, "%s", r.Path)
	}
	require.Subset(t, names, []string{"hello", "data-analysis"})
	entries, err := os.ReadDir(filepath.Join("..", "skills"))
	require.NoError(t, err)
	require.Len(t, reports, len(entries), "every folder in skills/ is a skill")
}

func TestValidateReportsInFileOrder(t *testing.T) {
	front := minimalFront + "max_memory: 64\ntags: x\n"
	dir := writeSkill(t, t.TempDir(), "other", doc(front, "Run scripts/missing.py\n"), nil)
	r := Validate(dir, true)
	require.Len(t, r.Errors, 4, "%q", r.Errors)
	require.True(t, strings.HasPrefix(r.Errors[0], "line 4: top-level `max_memory`"), r.Errors[0])
	require.True(t, strings.HasPrefix(r.Errors[1], "line 5: top-level field `tags`"), r.Errors[1])
	require.True(t, strings.HasPrefix(r.Errors[2], "line 7: the body references"), r.Errors[2])
	require.Contains(t, r.Errors[3], "does not match the folder name")
}
