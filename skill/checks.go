package skill

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
)

// Body size guidance from the spec: the whole body is loaded into the
// agent's context on activation, so it should stay short.
const (
	maxBodyLines   = 500
	maxBodyTokens  = 5000
	charsPerToken  = 4
	scriptsDirName = "scripts"
)

// scriptRef finds scripts/... paths in a body: bare, after ./, after
// {baseDir}/ or after /skills/<name>/, when they start a word (so
// "myscripts/x" and "docs/scripts/x" are not references).
var scriptRef = regexp.MustCompile("(?:^|[\\s`'\"(\\[<=:])" +
	`(?:\./|\{baseDir\}/|/skills/([^/\s]+)/)?` +
	"(scripts/[^\\s`'\"()\\[\\]<>{}*?|;&$,]*)")

// checkBody reports body references to missing scripts and an oversized body.
func checkBody(s *Skill) []problem {
	var probs []problem
	body := s.Body
	seen := map[string]bool{}
	for _, m := range scriptRef.FindAllStringSubmatchIndex(body, -1) {
		if m[2] >= 0 && body[m[2]:m[3]] != s.Manifest.Name {
			continue // another skill's folder
		}
		if m[5] < len(body) && strings.ContainsRune("*?{[", rune(body[m[5]])) {
			continue // a glob or template, not one path
		}
		ref := strings.TrimRight(body[m[4]:m[5]], ".:!/")
		if ref == scriptsDirName || seen[ref] {
			continue
		}
		seen[ref] = true
		line := s.BodyLine + strings.Count(body[:m[4]], "\n")
		if msg := checkScriptRef(s, ref); !msg.IsZero() {
			sev := sevError
			if looksLikeExample(ref, lineAround(body, m[4])) {
				// Instructions show the shape of a command or a folder
				// tree with made-up names; a reader sees no broken promise.
				sev = sevWarn
				msg = where.Sprintf("%s (it reads like an example; if it is one, ignore this)", msg)
			}
			probs = append(probs, problem{sev: sev, line: line, msg: msg})
		}
	}

	if !utf8.ValidString(body) {
		probs = append(probs, problem{sev: sevWarn, line: s.BodyLine, msg: where.Plain("the body is not valid UTF-8; agents will see replacement characters, save the file as UTF-8")})
	}
	lines := strings.Count(body, "\n")
	if body != "" && !strings.HasSuffix(body, "\n") {
		lines++
	}
	if lines > maxBodyLines {
		probs = append(probs, problem{sev: sevWarn, msg: where.Sprintf(
			"the body is %d lines; keep it under %d and move detail into references/", lines, maxBodyLines)})
	}
	if tokens := utf8.RuneCountInString(body) / charsPerToken; tokens > maxBodyTokens {
		probs = append(probs, problem{sev: sevWarn, msg: where.Sprintf(
			"the body is about %d tokens (%d characters); keep it under %d tokens and move detail into references/", tokens, utf8.RuneCountInString(body), maxBodyTokens)})
	}
	return probs
}

// exampleStems are file names (without extension) that stand for "your
// script here" rather than a file the skill ships.
var exampleStems = []string{
	"example", "sample", "your", "my_", "my-", "foo", "bar", "baz", "xxx", "placeholder",
	"template", "something", "whatever", "name", "custom", "new_", "new-", "demo",
}

// exampleCues on the line mark what follows as an illustration.
var exampleCues = []string{"e.g.", "for example", "example:", "such as", "├", "└", "│", "..."}

// looksLikeExample reports whether a scripts/ path the skill does not have
// reads as an illustration: a made-up name, an all-capitals placeholder,
// or a line that introduces an example or draws a folder tree.
func looksLikeExample(ref, line string) bool {
	stem := strings.TrimSuffix(path.Base(ref), path.Ext(ref))
	lower := strings.ToLower(stem)
	for _, w := range exampleStems {
		if strings.Contains(lower, w) {
			return true
		}
	}
	if stem != "" && strings.ToUpper(stem) == stem && strings.ToLower(stem) != stem {
		return true // scripts/NAME.py
	}
	if lower == "script" || lower == "x" || len(lower) <= 1 {
		return true
	}
	lineLower := strings.ToLower(line)
	for _, c := range exampleCues {
		if strings.Contains(lineLower, c) {
			return true
		}
	}
	return false
}

// lineAround returns the line of text that holds offset i.
func lineAround(text string, i int) string {
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		return text[start:]
	}
	return text[start : i+end]
}

// checkScriptRef says what is wrong with a scripts/... path the body
// mentions, or nothing (the zero Text) when nothing is. A file must pass the same path guard the
// runner applies; a folder only has to exist.
func checkScriptRef(s *Skill, ref string) where.Text {
	clean := path.Clean(ref)
	if !strings.HasPrefix(clean, scriptsDirName+"/") {
		return where.Sprintf("the body references `%s`, which leads out of scripts/; refer to scripts by their path inside scripts/", ref)
	}
	fi, err := os.Stat(filepath.Join(s.Dir, filepath.FromSlash(clean)))
	switch {
	case err != nil:
		return where.Sprintf("the body references `%s`, which does not exist; add the file or fix the path", ref)
	case fi.IsDir():
		return where.Text{}
	}
	if _, err := policy.ResolveScript(s.Dir, guardName(s), clean); err != nil {
		return where.Sprintf("the body references `%s`, which sandboxrun will not run: %v", ref, err)
	}
	return where.Text{}
}

// dataExtensions are files scripts read, not run: configuration, tables,
// documents, templates, images.
var dataExtensions = map[string]bool{
	".json": true, ".jsonl": true, ".csv": true, ".tsv": true, ".txt": true, ".md": true,
	".markdown": true, ".rst": true, ".yaml": true, ".yml": true, ".toml": true, ".ini": true,
	".cfg": true, ".conf": true, ".xml": true, ".xsd": true, ".html": true, ".htm": true,
	".css": true, ".svg": true, ".png": true, ".jpg": true, ".jpeg": true, ".gif": true,
	".pdf": true, ".docx": true, ".xlsx": true, ".pptx": true, ".j2": true, ".jinja": true,
	".jinja2": true, ".tmpl": true, ".tpl": true, ".template": true, ".mustache": true,
	".hbs": true, ".sql": true, ".lock": true, ".pyc": true, ".pyi": true, ".typed": true,
}

// isDataFile reports whether a file in scripts/ is data rather than an entry
// point: by extension, or a README, LICENSE or requirements file.
func isDataFile(name string) bool {
	if dataExtensions[strings.ToLower(path.Ext(name))] {
		return true
	}
	upper := strings.ToUpper(name)
	return strings.HasPrefix(upper, "README") || strings.HasPrefix(upper, "LICENSE") || strings.HasPrefix(upper, "REQUIREMENTS")
}

// guardName is the skill name to give policy's path guard. The guard only
// uses it to build sandbox paths, so while the name itself is invalid (and
// already reported) a stand-in keeps the file checks running.
func guardName(s *Skill) string {
	if len(nameRuleViolations(s.Manifest.Name)) == 0 {
		return s.Manifest.Name
	}
	return "skill"
}

// checkScripts checks that every file directly in scripts/ can be run: it is
// (or links to) a regular file and has an interpreter. Subfolders hold
// helpers and data that scripts import or read, so they are not entry points
// and are not checked; hidden files and data files (isDataFile) are skipped.
func checkScripts(s *Skill) []problem {
	dir := filepath.Join(s.Dir, scriptsDirName)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []problem{{sev: sevError, msg: where.Sprintf("cannot read scripts/: %v", err)}}
	}
	var probs []problem
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() || isDataFile(e.Name()) {
			continue
		}
		rel := scriptsDirName + "/" + e.Name()
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.IsDir() {
			continue // a symlink to a folder: like a subfolder, not an entry point
		}
		script, err := policy.ResolveScript(s.Dir, guardName(s), rel)
		if err != nil {
			probs = append(probs, problem{sev: sevError, msg: where.Sprintf("%s cannot be run: %v", rel, err)})
			continue
		}
		if _, err := policy.Interpreter(s.Manifest.Runtime, script.HostPath); err != nil {
			probs = append(probs, problem{sev: sevError, msg: where.Sprintf("%s has no interpreter: %v", rel, err)})
		}
	}
	return probs
}
