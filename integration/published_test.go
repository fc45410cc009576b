//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/policy"
)

// The tests here run skills the way published collections ship them, from
// the fixture collection in testdata/collection: plugin and .claude layouts,
// scripts that take command-line arguments and read the user's files,
// instructions that say `python scripts/x.py`, Claude Code's allowed-tools
// forms, a PEP 723 block written for uv, a git repository as workspace.

// collection is the fixture collection's absolute path.
func collection(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/collection")
	require.NoError(t, err)
	return dir
}

// workspace writes files into a fresh folder the sandbox user can read.
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return dir
}

const salesCSV = "region,units,revenue\nnorth,3,30.5\nsouth,5,20\neast,1,99\n"

func TestCLICollectionLayouts(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	r := cli(t, coll, nil, "", "--skills", coll, "list", "--format", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var entries []struct{ Name, Location string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &entries))
	locations := map[string]string{}
	for _, e := range entries {
		rel, err := filepath.Rel(coll, e.Location)
		require.NoError(t, err)
		locations[e.Name] = rel
	}
	require.Equal(t, map[string]string{
		"csv-summary":  "plugins/data-tools/skills/csv-summary/SKILL.md",
		"form-filler":  "plugins/data-tools/skills/form-filler/SKILL.md",
		"repo-status":  "plugins/dev-tools/skills/repo-status/SKILL.md",
		"table-report": ".claude/skills/table-report/SKILL.md",
		"Word-Count":   "categories/text/word-count/SKILL.md",
	}, locations)
	require.Contains(t, r.stderr, `warning: `+filepath.Join(coll, "categories/text/word-count/SKILL.md")+`: line 2: `+"`name`"+` "Word-Count" must be lowercase`,
		"a name that breaks a spec rule is listed, with a warning")

	r = cli(t, coll, nil, "", "--skills", coll, "--strict", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "Word-Count", "--strict leaves it out")
	require.NotContains(t, r.stdout, "csv-summary", "--strict leaves out non-string metadata too")
	require.Contains(t, r.stderr, "skipping (--strict)")

	// validate finds the same skills; data files in scripts/ and example
	// paths in a body are no errors, a name other hosts refuse is one
	// (without --strict too) although the skill lists and runs.
	r = cli(t, coll, nil, "", "validate", coll)
	require.Equal(t, 1, r.code, r.stdout)
	require.Equal(t, 4, strings.Count(r.stdout, ": valid ("), r.stdout)
	require.Contains(t, r.stdout, ": INVALID (Word-Count)")
	require.Contains(t, r.stdout, "  error: line 2: `name` \"Word-Count\" must be lowercase")
	require.Contains(t, r.stdout, "scripts/your_stat.py`, which does not exist")
	require.NotContains(t, r.stdout, "labels.json")

	t.Run("found by folder name, runnable despite the name", func(t *testing.T) {
		ws := workspace(t, map[string]string{"notes.txt": "one two three\nfour\n"})
		r := cli(t, ws, nil, "", "--skills", coll, "run", "--workspace", ws, "word-count", "scripts/count.py", "--", "notes.txt")
		require.Equal(t, 0, r.code, r.stderr)
		require.JSONEq(t, `{"notes.txt": {"words": 4, "lines": 2, "chars": 19}}`, r.stdout)
		require.Contains(t, r.stderr, "must be lowercase")

		r = cli(t, ws, nil, "", "--skills", coll, "--strict", "run", "--workspace", ws, "word-count", "scripts/count.py", "--", "notes.txt")
		require.Equal(t, 2, r.code, r.stderr)
		require.Contains(t, r.stderr, "--strict refuses")
		requireNoSkillContainers(t, "Word-Count")
	})

	t.Run("several roots; the same name twice is reported", func(t *testing.T) {
		other := t.TempDir()
		require.NoError(t, os.Chmod(other, 0o755))
		dup := copyExample(t, "hello", other, "csv-summary")
		roots := coll + string(os.PathListSeparator) + other
		r := cli(t, coll, []string{"SANDBOXRUN_SKILLS=" + roots}, "", "list")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stderr, dup+`: skill name "csv-summary" is already used by `+filepath.Join(coll, "plugins/data-tools/skills/csv-summary"))
		require.Equal(t, 1, strings.Count(r.stdout, "csv-summary"))

		r = cli(t, coll, nil, "", "--skills", roots, "show", "csv-summary")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Summarise the numeric columns", "the first root wins")
		require.Contains(t, r.stderr, "is shadowed by")
		r = cli(t, coll, nil, "", "--skills", roots, "show", "hello")
		require.Equal(t, 2, r.code, "the copy is named csv-summary, so hello is not there: %s", r.stderr)
	})
}

// TestCLIArgparseSkillReadsWorkspaceFile: a script that takes argparse
// options and reads the file they name from the user's folder.
func TestCLIArgparseSkillReadsWorkspaceFile(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	odd := "we ird $(id);.csv"
	ws := workspace(t, map[string]string{"sales.csv": salesCSV, odd: salesCSV})
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := cli(t, ws, nil, "", "--skills", coll, "run", "--audit-log", audit, "csv-summary", "scripts/summarize.py", "--",
		"--input", "sales.csv", "--top", "2", "--sort", "revenue")
	require.Equal(t, 0, r.code, r.stderr)
	var out struct {
		File    string
		Columns map[string]map[string]float64
		Top     []map[string]string
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Equal(t, "sales.csv", out.File)
	require.InDelta(t, 149.5, out.Columns["revenue"]["total"], 1e-9, "labels come from scripts/labels.json")
	require.Equal(t, []string{"east", "north"}, []string{out.Top[0]["region"], out.Top[1]["region"]})

	// The audit log keeps the caller's arguments out, as it keeps the JSON.
	line, err := os.ReadFile(audit)
	require.NoError(t, err)
	require.NotContains(t, string(line), "sales.csv")
	var rec struct {
		Argv       []string `json:"argv"`
		ScriptArgs int      `json:"script_args"`
		Digest     string   `json:"script_args_sha256"`
	}
	require.NoError(t, json.Unmarshal(line, &rec))
	require.Equal(t, []string{"python3", "/skills/csv-summary/scripts/summarize.py"}, rec.Argv)
	require.Equal(t, 6, rec.ScriptArgs)
	require.Len(t, rec.Digest, 64)

	// Arguments are argv entries, never shell text; JSON on stdin as well.
	r = cli(t, ws, nil, "", "--skills", coll, "run", "--args", `{"ignored": true}`, "csv-summary", "scripts/summarize.py", "--",
		"--input", odd, "--column", "units")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"file": "`+odd+`"`)
	require.Contains(t, r.stdout, `"units": {"rows": 3`)
	require.NotContains(t, r.stdout, "revenue\": {")

	// Words after SCRIPT without -- are a usage error naming the fix.
	r = cli(t, ws, nil, "", "--skills", coll, "run", "csv-summary", "scripts/summarize.py", "sales.csv")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "go after --")

	// python --file takes them too, as sys.argv[1:].
	code := filepath.Join(t.TempDir(), "snippet.py")
	require.NoError(t, os.WriteFile(code, []byte("import sys, json; print(json.dumps(sys.argv))"), 0o644))
	r = cli(t, ws, nil, "", "--skills", coll, "python", "csv-summary", "--file", code, "--", "a b", "--x")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `["-", "a b", "--x"]`, r.stdout)
	requireNoSkillContainers(t, "csv-summary")
}

// TestCLISkillRelativeCommands: instructions say `python scripts/fill.py
// form.txt`. On the exec path the script word resolves to the skill's
// folder while the file stays the user's; --cwd skill starts in the skill.
func TestCLISkillRelativeCommands(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	ws := workspace(t, map[string]string{"form.txt": "Name: {{name}}\nCity: {{city}}\n"})
	r := cli(t, ws, nil, "", "--skills", coll, "exec", "form-filler", "--", "python scripts/fill.py --fields form.txt")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"cwd": "/workspace", "fields": ["city", "name"]}`, r.stdout)

	r = cli(t, ws, nil, "", "--skills", coll, "exec", "form-filler", "--", `python scripts/fill.py form.txt --set name=Ada --set "city=New York" | cat`)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Name: Ada\nCity: New York\n", r.stdout)

	r = cli(t, ws, nil, "", "--skills", coll, "run", "--cwd", "skill", "form-filler", "scripts/fill.py", "--", "--fields", "assets/blank-form.txt")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"cwd": "/skills/form-filler", "fields": ["city", "name"]}`, r.stdout)

	r = cli(t, ws, nil, "", "--skills", coll, "exec", "--cwd", "skill", "form-filler", "--", "cat assets/blank-form.txt")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Name: {{name}}\nCity: {{city}}\n", r.stdout)

	// The check judges the resolved command: what is not allowed stays so.
	for _, cmd := range []string{
		"python scripts/fill.py form.txt; rm -rf /workspace",
		"python scripts/fill.py $(id)",
		"python scripts/missing.py",
		"python3 /skills/form-filler/scripts/../SKILL.md",
	} {
		r = cli(t, ws, nil, "", "--skills", coll, "exec", "form-filler", "--", cmd)
		require.Equal(t, 2, r.code, "%s: %s", cmd, r.stderr)
		require.Contains(t, r.stderr, "command denied")
	}
	requireNoSkillContainers(t, "form-filler")
}

// TestCLIClaudeCodeAllowedTools: Bash(...) entries written with
// ${CLAUDE_PLUGIN_ROOT}, {baseDir}, a path wildcard and a trailing " *"
// load, resolve to the skill's sandbox folder and allow what they say.
func TestCLIClaudeCodeAllowedTools(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	r := cli(t, coll, nil, "", "--skills", coll, "show", "--json", "form-filler")
	require.Equal(t, 0, r.code, r.stderr)
	var act struct {
		AllowedTools []struct{ Name, Spec string } `json:"allowed_tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &act))
	var specs []string
	for _, tool := range act.AllowedTools {
		specs = append(specs, tool.Name+"("+tool.Spec+")")
	}
	require.Equal(t, []string{
		"Bash(python3 /skills/form-filler/scripts/*)",
		"Bash(python /skills/form-filler/scripts/fill.py *)",
		"Bash(python /skills/form-filler/scripts/check.py:*)",
		"Bash(cat:*)",
		"Read()",
	}, specs)

	ws := workspace(t, map[string]string{"filled.txt": "Name: Ada\nCity: {{city}}\n"})
	for _, cmd := range []string{
		"python3 scripts/check.py filled.txt",
		"python3 {baseDir}/scripts/check.py filled.txt",
		"python ${CLAUDE_PLUGIN_ROOT}/skills/form-filler/scripts/check.py filled.txt",
	} {
		r = cli(t, ws, nil, "", "--skills", coll, "exec", "form-filler", "--", cmd)
		require.Equal(t, 1, r.code, "%s: the script runs and reports: %s", cmd, r.stderr)
		require.Contains(t, r.stderr, "unfilled: city")
	}
	r = cli(t, ws, nil, "", "--skills", coll, "exec", "--dry-run", "form-filler", "--", "python3 /skills/form-filler/scripts/sub/x.py")
	require.Equal(t, 2, r.code, "a path wildcard does not reach into subfolders: %s", r.stdout)
	requireNoSkillContainers(t, "form-filler")
}

// TestCLIPEP723ForUv: a script whose PEP 723 block carries uv's settings
// ([[tool.uv.index]], inline tables, multi-line strings) builds and runs;
// the block's dependency is met by the skill's Debian package, offline.
func TestCLIPEP723ForUv(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	ws := workspace(t, map[string]string{"data.csv": salesCSV})
	r := cli(t, ws, nil, "", "--skills", coll, "run", "table-report", "scripts/table.py", "--", "data.csv")
	require.Equal(t, 0, r.code, r.stderr)
	if i := strings.Index(r.stderr, "] built sandboxrun/skill-table-report:"); i >= 0 {
		removeImageOnCleanup(t, strings.Fields(r.stderr[i+len("] built "):])[0])
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 5, r.stdout)
	require.Regexp(t, `^\| region +\| +units \| +revenue \|$`, lines[0])
	require.Regexp(t, `^\| east +\| +1 \| +99 +\|$`, lines[4])
	requireNoSkillContainers(t, "table-report")
}

// TestCLIGitWorkspace: git works on the user's repository although the
// sandbox user owns none of its files.
func TestCLIGitWorkspace(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	ws := workspace(t, map[string]string{"notes.txt": "first\n"})
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", ws, "-c", "user.name=Test", "-c", "user.email=test@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	gitRun("init", "-q")
	gitRun("add", "notes.txt")
	gitRun("commit", "-q", "-m", "first note")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("first\nsecond\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "new.txt"), []byte("x\n"), 0o644))

	r := cli(t, ws, nil, "", "--skills", coll, "exec", "repo-status", "--", "git status --short && git log --oneline -1 --format=%s")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, " M notes.txt\n?? new.txt\nfirst note\n", r.stdout)
	require.NotContains(t, r.stderr, "dubious ownership")

	r = cli(t, ws, nil, "", "--skills", coll, "exec", "repo-status", "--", "git diff --stat")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "notes.txt | 1 +")
	requireNoSkillContainers(t, "repo-status")
}

// TestCLIImageReusedWithoutPackageSources: an image built from a wheelhouse
// is what a later run or build uses without naming the wheelhouse: package
// sources are not part of the image's identity.
func TestCLIImageReusedWithoutPackageSources(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	name := fmt.Sprintf("it-offline-%d", os.Getpid())
	depsSkill(t, root, name, "metadata:\n  python_packages: \"tinypkg==0.1\"\n", map[string]string{
		"scripts/greet.py": "import sys, tinypkg\nprint(tinypkg.greet(sys.argv[1]))\n",
	})
	wheels := wheelhouse(t)
	r := cli(t, root, nil, "", "--skills", root, "build", "--find-links", wheels, name)
	require.Equal(t, 0, r.code, r.stderr)
	i := strings.Index(r.stderr, "] built sandboxrun/skill-")
	require.GreaterOrEqual(t, i, 0, r.stderr)
	ref := strings.Fields(r.stderr[i+len("] built "):])[0]
	removeImageOnCleanup(t, ref)

	r = cli(t, root, []string{"PIP_FIND_LINKS=", "PIP_INDEX_URL="}, "", "--skills", root, "run", name, "scripts/greet.py", "--", "offline")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "hello offline\n", r.stdout)
	require.NotContains(t, r.stderr, "building", "the run uses the image built with --find-links")

	r = cli(t, root, nil, "", "--skills", root, "build", name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, name+": "+ref+" up to date")
}

// TestDocumentsProfile builds the documents runner profile (once per runner:
// later runs find it up to date) and runs, under a policy that picks it, a
// script that imports the document libraries without declaring packages.
func TestDocumentsProfile(t *testing.T) {
	t.Parallel()
	ctx := buildCtx(t)
	img, err := testImages.BuildProfile(ctx, images.ProfileOptions{
		Runner: runner.Image(), Profile: policy.ProfileDocuments, Version: sandboxrun.Version, Progress: progress{t},
	})
	require.NoError(t, err)
	want, err := images.ProfileRef(runner.Image(), policy.ProfileDocuments)
	require.NoError(t, err)
	require.Equal(t, want, img.Ref)

	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("profile: documents\n"), 0o644))
	code := `import os, shutil, pypdf, openpyxl, docx, pandas, yaml, PIL, reportlab
wb = openpyxl.Workbook(); wb.active["A1"] = 42; wb.save("/tmp/x.xlsx")
print(pandas.read_excel("/tmp/x.xlsx", header=None).iloc[0, 0], bool(shutil.which("pdftotext")), os.getuid())`
	coll := collection(t)
	r := cli(t, coll, nil, "", "--skills", coll, "python", "--policy", pol, "--json", "csv-summary", "--code", code)
	require.Equal(t, 0, r.code, r.stderr)
	var pr struct{ Stdout string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &pr))
	require.Equal(t, "42 True 65532\n", pr.Stdout)

	r = cli(t, coll, nil, "", "--skills", coll, "python", "--json", "csv-summary", "--code", "import pypdf")
	require.Equal(t, 1, r.code, "the plain runner has none of them: %s", r.stdout)
	requireNoSkillContainers(t, "csv-summary")
}
