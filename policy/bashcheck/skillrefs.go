package bashcheck

import (
	"cmp"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/sandboxrun/sandboxrun/internal/layout"
)

// SkillRefs resolves what SKILL.md bodies and allowed-tools write for the
// skill's own files, so a command or a Bash(...) entry names them as the
// sandbox sees them: /skills/<name>/....
//
// Two kinds of references are resolved:
//
//   - placeholders for the skill's folder: {baseDir} (the Agent Skills
//     convention), ${CLAUDE_SKILL_DIR}, ${CLAUDE_PLUGIN_ROOT} and
//     $CLAUDE_PLUGIN_ROOT (Claude Code's). The plugin root is the folder above
//     skills/<folder>; only the skill's own folder is mounted, so
//     ${CLAUDE_PLUGIN_ROOT}/skills/<folder> and ${CLAUDE_PLUGIN_ROOT} both
//     become /skills/<name>. These are replaced as text.
//   - a skill-relative script as the program or as the first argument of an
//     interpreter: scripts/x.py, ./scripts/x.py, python scripts/x.py (also
//     python3, bash, sh, node). These are found on the parsed command and
//     only when the skill has that script (ResolveScriptWords).
//
// Both run before the policy check, which then judges the resolved command:
// the check and bash always see the same text.
type SkillRefs struct {
	// Name is the skill's name; its folder is /skills/<Name> in the sandbox.
	Name string
	// Folder is the base name of the skill's folder on the host.
	Folder string
	// Script returns the sandbox path of the skill's script at rel (a
	// slash path under scripts/), or false when the skill has none there.
	// Nil resolves no script words.
	Script func(rel string) (string, bool)
}

// placeholderCheckDir stands in for the skill's folder when an allowed-tools
// entry is checked without knowing its skill.
const placeholderCheckDir = "skill"

// expandSkillDir replaces the skill-folder placeholders in s with
// /skills/<name>. folder is the skill folder's host base name, for the
// plugin layout's ${CLAUDE_PLUGIN_ROOT}/skills/<folder>.
func expandSkillDir(s, name, folder string) string {
	if !strings.ContainsAny(s, "{$") {
		return s
	}
	dir := layout.SkillDir(name)
	s = strings.ReplaceAll(s, layout.BaseDirPlaceholder, dir)
	s = strings.ReplaceAll(s, "${CLAUDE_SKILL_DIR}", dir)
	for _, root := range []string{"${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT"} {
		if folder != "" {
			s = replaceWhole(s, root+"/skills/"+folder, dir, isFolderByte)
		}
		s = replaceWhole(s, root, dir, isVarNameByte)
	}
	return s
}

// replaceWhole replaces old with repl where the byte after old does not
// continue it (inWord reports the bytes that would).
func replaceWhole(s, old, repl string, inWord func(byte) bool) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		b.WriteString(s[:i])
		if end < len(s) && inWord(s[end]) {
			b.WriteString(old)
		} else {
			b.WriteString(repl)
		}
		s = s[end:]
	}
}

func isVarNameByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// isFolderByte is what may continue a folder name: a name byte, '.', '-' or
// any byte of a non-ASCII character.
func isFolderByte(c byte) bool {
	return isVarNameByte(c) || c == '.' || c == '-' || c >= 0x80
}

// ExpandPlaceholders replaces the skill-folder placeholders in s.
func (r SkillRefs) ExpandPlaceholders(s string) string {
	return expandSkillDir(s, r.Name, r.Folder)
}

// Resolve is the command as it will run: placeholders expanded, then script
// words resolved.
func (r SkillRefs) Resolve(command string) string {
	return r.ResolveScriptWords(r.ExpandPlaceholders(command))
}

// scriptInterpreters run the file named by their first argument.
var scriptInterpreters = map[string]bool{"python3": true, "bash": true, "sh": true, "node": true}

// ResolveScriptWords rewrites every simple command of command whose program
// is a skill-relative script (scripts/x.py) or whose program is an
// interpreter and first argument one (python scripts/x.py), when the skill
// has that script, to name it by its sandbox path. Only those words change,
// spliced at their positions in the parsed program and quoted for bash;
// everything else, including a command that does not parse or that the
// checker refuses as a whole, is returned byte for byte.
func (r SkillRefs) ResolveScriptWords(command string) string {
	if r.Script == nil || !strings.Contains(command, layout.ScriptsFolder+"/") || lexicalReason(command) != "" {
		return command
	}
	f, err := newShellParser().Parse(strings.NewReader(command), "")
	if err != nil {
		return command
	}
	type edit struct {
		start, end uint
		text       string
	}
	var edits []edit
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		w := scriptWord(call.Args)
		if w == nil {
			return true
		}
		v, _ := staticWord(w)
		sandboxPath, ok := r.Script(path.Clean(v))
		if !ok {
			return true
		}
		quoted, err := syntax.Quote(sandboxPath, syntax.LangBash)
		if err != nil || !w.Pos().IsValid() || !w.End().IsValid() {
			return true
		}
		edits = append(edits, edit{start: w.Pos().Offset(), end: w.End().Offset(), text: quoted})
		return true
	})
	if len(edits) == 0 {
		return command
	}
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Compare(b.start, a.start) })
	out := command
	for i, e := range edits {
		if e.end > uint(len(out)) || e.start >= e.end || (i > 0 && e.end > edits[i-1].start) {
			return command // overlapping or out of range: leave it to the checker
		}
		out = out[:e.start] + e.text + out[e.end:]
	}
	return out
}

// scriptWord returns the word of a simple command that names a
// skill-relative script, or nil.
func scriptWord(args []*syntax.Word) *syntax.Word {
	prog, ok := staticWord(args[0])
	if !ok {
		return nil
	}
	if isSkillScriptPath(prog) {
		return args[0]
	}
	if len(args) < 2 || !scriptInterpreters[NormProgram(prog)] {
		return nil
	}
	if arg, ok := staticWord(args[1]); ok && isSkillScriptPath(arg) {
		return args[1]
	}
	return nil
}

// isSkillScriptPath accepts scripts/x and ./scripts/x that stay under
// scripts/ once cleaned.
func isSkillScriptPath(p string) bool {
	p = strings.TrimPrefix(p, "./")
	clean := path.Clean(p)
	return strings.HasPrefix(p, layout.ScriptsFolder+"/") && strings.HasPrefix(clean, layout.ScriptsFolder+"/")
}

// ForSkill returns ts with the Bash entries' skill references resolved the
// way commands are: placeholders expanded, and a skill-relative script as
// the program or an interpreter's first argument named by its sandbox path.
// A scripts/ path pattern (python3 scripts/*.py) moves under the skill's
// folder with it. Entries that still do not parse allow nothing, as always.
func (ts Tools) ForSkill(r SkillRefs) Tools {
	out := make(Tools, len(ts))
	for i, t := range ts {
		out[i] = t
		if t.Name != bashTool || !t.HasSpec {
			continue
		}
		out[i].Spec = r.resolveSpec(t.Spec)
	}
	return out
}

// resolveSpec resolves one Bash spec. The suffix that makes it a prefix
// spec is kept aside so the body parses as a command.
func (r SkillRefs) resolveSpec(spec string) string {
	spec = r.ExpandPlaceholders(strings.TrimSpace(spec))
	body, suffix := spec, ""
	for _, s := range []string{prefixSuffix, " *"} {
		if b, ok := strings.CutSuffix(spec, s); ok {
			body, suffix = b, s
			break
		}
	}
	body = r.ResolveScriptWords(body)
	return r.resolvePatternWord(body) + suffix
}

// resolvePatternWord moves a scripts/ path pattern in the program or first
// interpreter argument position under the skill's sandbox folder.
func (r SkillRefs) resolvePatternWord(body string) string {
	f, err := newShellParser().Parse(strings.NewReader(body), "")
	if err != nil || len(f.Stmts) != 1 {
		return body
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return body
	}
	idx := 0
	if prog, ok := staticWord(call.Args[0]); ok && scriptInterpreters[NormProgram(prog)] && len(call.Args) > 1 {
		idx = 1
	}
	w := call.Args[idx]
	pat, ok := pathPattern(w)
	if !ok || !isSkillScriptPath(pat) {
		return body
	}
	resolved := layout.SkillDir(r.Name) + "/" + strings.TrimPrefix(pat, "./")
	return body[:w.Pos().Offset()] + resolved + body[w.End().Offset():]
}
