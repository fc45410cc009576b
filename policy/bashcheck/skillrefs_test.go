package bashcheck

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/syntax"
)

// testRefs is a skill named "pdf" in a host folder "pdf-tools" whose
// scripts are fill.py, a b.py and run.sh.
func testRefs() SkillRefs {
	scripts := map[string]bool{"scripts/fill.py": true, "scripts/a b.py": true, "scripts/run.sh": true}
	return SkillRefs{
		Name:   "pdf",
		Folder: "pdf-tools",
		Script: func(rel string) (string, bool) {
			if !scripts[rel] {
				return "", false
			}
			return "/skills/pdf/" + rel, true
		},
	}
}

func TestExpandPlaceholders(t *testing.T) {
	r := testRefs()
	tests := []struct{ in, want string }{
		{"python3 {baseDir}/scripts/fill.py", "python3 /skills/pdf/scripts/fill.py"},
		{"python3 ${CLAUDE_PLUGIN_ROOT}/scripts/fill.py", "python3 /skills/pdf/scripts/fill.py"},
		{"python3 $CLAUDE_PLUGIN_ROOT/scripts/fill.py", "python3 /skills/pdf/scripts/fill.py"},
		{"python3 ${CLAUDE_PLUGIN_ROOT}/skills/pdf-tools/scripts/fill.py", "python3 /skills/pdf/scripts/fill.py"},
		{"python3 $CLAUDE_PLUGIN_ROOT/skills/pdf-tools/scripts/fill.py", "python3 /skills/pdf/scripts/fill.py"},
		{"python3 ${CLAUDE_SKILL_DIR}/scripts/fill.py", "python3 /skills/pdf/scripts/fill.py"},
		// Another skill of the plugin is not this skill's folder.
		{"cat ${CLAUDE_PLUGIN_ROOT}/skills/pdf-tools-extra/x", "cat /skills/pdf/skills/pdf-tools-extra/x"},
		// A longer variable name is another variable.
		{"echo $CLAUDE_PLUGIN_ROOTS", "echo $CLAUDE_PLUGIN_ROOTS"},
		{"echo ${CLAUDE_PLUGIN_ROOT_X}", "echo ${CLAUDE_PLUGIN_ROOT_X}"},
		{"echo $HOME", "echo $HOME"},
		{"no placeholders", "no placeholders"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Equal(t, tt.want, r.ExpandPlaceholders(tt.in))
		})
	}
}

func TestResolveScriptWords(t *testing.T) {
	r := testRefs()
	tests := []struct{ in, want string }{
		{"python scripts/fill.py form.pdf", "python /skills/pdf/scripts/fill.py form.pdf"},
		{"python3 ./scripts/fill.py", "python3 /skills/pdf/scripts/fill.py"},
		{"bash scripts/run.sh x", "bash /skills/pdf/scripts/run.sh x"},
		{"sh scripts/run.sh", "sh /skills/pdf/scripts/run.sh"},
		{"node scripts/fill.py", "node /skills/pdf/scripts/fill.py"},
		{"scripts/run.sh --flag", "/skills/pdf/scripts/run.sh --flag"},
		{"python 'scripts/a b.py'", "python '/skills/pdf/scripts/a b.py'"},
		{"python scripts/a\\ b.py", "python '/skills/pdf/scripts/a b.py'"},
		{"python \"scripts/fill.py\" x", "python /skills/pdf/scripts/fill.py x"},
		{"cat in.csv | python scripts/fill.py && python scripts/fill.py -v; echo ok",
			"cat in.csv | python /skills/pdf/scripts/fill.py && python /skills/pdf/scripts/fill.py -v; echo ok"},
		{"if true; then python scripts/fill.py; fi", "if true; then python /skills/pdf/scripts/fill.py; fi"},
		// Not the skill's script, or not in a position that runs it: as written.
		{"python scripts/other.py", "python scripts/other.py"},
		{"python -u scripts/fill.py", "python -u scripts/fill.py"},
		{"cat scripts/fill.py", "cat scripts/fill.py"},
		{"python x.py scripts/fill.py", "python x.py scripts/fill.py"},
		{"python scripts/../scripts/fill.py", "python /skills/pdf/scripts/fill.py"},
		{"python scripts/../SKILL.md", "python scripts/../SKILL.md"},
		{"python $D/scripts/fill.py", "python $D/scripts/fill.py"},
		{"python scripts/*.py", "python scripts/*.py"},
		{"python myscripts/fill.py", "python myscripts/fill.py"},
		// Input the checker refuses as a whole stays byte for byte.
		{"python scripts/fill.py \\\nx", "python scripts/fill.py \\\nx"},
		{"python scripts/fill.py 'unclosed", "python scripts/fill.py 'unclosed"},
		{"python scripts/fill.py\r", "python scripts/fill.py\r"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Equal(t, tt.want, r.ResolveScriptWords(tt.in))
		})
	}
	require.Equal(t, "python scripts/fill.py", SkillRefs{Name: "pdf"}.ResolveScriptWords("python scripts/fill.py"),
		"without a script resolver nothing is rewritten")
}

// TestSkillRefsCheck runs the whole exec-path decision: the command and the
// Bash entries resolved the same way, then the checker on the result.
func TestSkillRefsCheck(t *testing.T) {
	r := testRefs()
	tests := []struct {
		tools, command string
		allowed        bool
	}{
		{"Bash(python scripts/fill.py:*)", "python scripts/fill.py form.pdf", true},
		{"Bash(python scripts/fill.py:*)", "python3 {baseDir}/scripts/fill.py form.pdf", true},
		{"Bash(python {baseDir}/scripts/fill.py:*)", "python scripts/fill.py form.pdf", true},
		{"Bash(python3 ${CLAUDE_PLUGIN_ROOT}/scripts/fill.py *)", "python scripts/fill.py a b", true},
		{"Bash(python3 ${CLAUDE_PLUGIN_ROOT}/skills/pdf-tools/scripts/*)", "python3 scripts/fill.py -o x.pdf", true},
		{"Bash(python3 ${CLAUDE_PLUGIN_ROOT}/scripts/*.py)", "python3 scripts/fill.py", true},
		{"Bash(python3 ${CLAUDE_PLUGIN_ROOT}/scripts/*.py)", "python3 scripts/fill.py extra", false},
		{"Bash(python3 scripts/*:*)", "python3 scripts/fill.py", true},
		{"Bash(python3 scripts/*:*)", "python3 /skills/pdf/scripts/../../../tmp/x.py", false},
		{"Bash(python3 scripts/*:*)", "python3 /skills/pdf/scripts/sub/x.py", false},
		{"Bash(python3 scripts/*:*)", "python3 scripts/other.py", false}, // not the skill's: runs from the workspace
		{"Bash(scripts/run.sh:*)", "scripts/run.sh go", true},
		{"Bash(scripts/run.sh:*)", "./scripts/run.sh go", true},
		{"Bash(bash scripts/run.sh)", "bash scripts/run.sh", true},
		{"Bash(python scripts/fill.py:*)", "python scripts/fill.py x; rm -rf /", false},
		{"Bash(python scripts/fill.py:*)", "python scripts/fill.py $(id)", false},
		{"Bash(git diff *)", "git diff HEAD", true},
		{"Bash(git diff *)", "git diffx", false},
		{"Bash(git * main)", "git push origin main", false}, // not understood: allows nothing
		{"Bash(*)", "echo anything", true},
	}
	for _, tt := range tests {
		t.Run(tt.tools+"/"+tt.command, func(t *testing.T) {
			ts, unclear, err := ParseAllowedToolsLenient(tt.tools)
			require.NoError(t, err)
			if strings.Contains(tt.tools, "* main") {
				require.Len(t, unclear, 1)
			} else {
				require.Empty(t, unclear)
			}
			err = ts.ForSkill(r).CheckCommand(r.Resolve(tt.command))
			if tt.allowed {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrDenied)
			}
		})
	}
}

func TestForSkillKeepsOtherEntries(t *testing.T) {
	ts, err := ParseAllowedTools("Read Bash(python {baseDir}/scripts/fill.py:*) Bash Write(docs/**)")
	require.NoError(t, err)
	got := ts.ForSkill(testRefs())
	require.Equal(t, Tools{
		{Name: "Read"},
		{Name: "Bash", Spec: "python /skills/pdf/scripts/fill.py:*", HasSpec: true},
		{Name: "Bash"},
		{Name: "Write", Spec: "docs/**", HasSpec: true},
	}, got)
	require.Equal(t, "python {baseDir}/scripts/fill.py:*", ts[1].Spec, "the skill's own list is not changed")
}

func TestUnresolvedPlaceholderAllowsNothing(t *testing.T) {
	ts, err := ParseAllowedTools("Bash(python {baseDir}/scripts/fill.py:*)")
	require.NoError(t, err)
	// Checked without resolving: the spec's {baseDir} is no literal word.
	require.ErrorIs(t, ts.CheckCommand("python {baseDir}/scripts/fill.py"), ErrDenied)
	require.ErrorIs(t, ts.CheckCommand("python /skills/skill/scripts/fill.py"), ErrDenied)
}

// FuzzResolveScriptWords checks that resolving changes nothing but the
// words that name the skill's scripts: the output parses into the same
// simple commands with the same words, except that a skill-relative script
// word became its sandbox path; and resolving again changes nothing.
func FuzzResolveScriptWords(f *testing.F) {
	for _, s := range []string{
		"python scripts/fill.py form.pdf", "scripts/run.sh x | python3 ./scripts/fill.py",
		"python 'scripts/a b.py' && cat scripts/fill.py", "for f in a; do bash scripts/run.sh $f; done",
		"cat <<EOF\nscripts/fill.py\nEOF\npython scripts/fill.py", "python scripts/fill.py $(python scripts/fill.py)",
		"x=1 python scripts/fill.py", "python scripts/../scripts/fill.py > out.txt 2>&1",
	} {
		f.Add(s)
	}
	r := testRefs()
	f.Fuzz(func(t *testing.T, in string) {
		out := r.ResolveScriptWords(in)
		if out == in {
			return
		}
		before, ok := callWords(in)
		if !ok {
			t.Fatalf("%q was rewritten to %q although it does not parse", in, out)
		}
		after, ok := callWords(out)
		if !ok {
			t.Fatalf("%q was rewritten to %q, which does not parse", in, out)
		}
		if len(before) != len(after) {
			t.Fatalf("%q became %q: %d simple commands became %d", in, out, len(before), len(after))
		}
		for i := range before {
			if len(before[i]) != len(after[i]) {
				t.Fatalf("%q became %q: command %d has %d words, was %d", in, out, i, len(after[i]), len(before[i]))
			}
			for j := range before[i] {
				b, a := before[i][j], after[i][j]
				if a == b {
					continue
				}
				if j > 1 || !isSkillScriptPath(b) || a != "/skills/pdf/"+path.Clean(strings.TrimPrefix(b, "./")) {
					t.Fatalf("%q became %q: word %q became %q", in, out, b, a)
				}
			}
		}
		if again := r.ResolveScriptWords(out); again != out {
			t.Fatalf("resolving %q again gave %q", out, again)
		}
	})
}

// callWords lists the words of every simple command in source order, each
// static word's value or "\x00" for one that is not static.
func callWords(command string) ([][]string, bool) {
	if lexicalReason(command) != "" {
		return nil, false
	}
	f, err := newShellParser().Parse(strings.NewReader(command), "")
	if err != nil {
		return nil, false
	}
	var out [][]string
	syntax.Walk(f, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok {
			words := make([]string, len(call.Args))
			for i, w := range call.Args {
				if v, ok := staticWord(w); ok {
					words[i] = v
				} else {
					words[i] = "\x00"
				}
			}
			out = append(out, words)
		}
		return true
	})
	return out, true
}
