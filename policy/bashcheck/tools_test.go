package bashcheck

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAllowedTools(t *testing.T) {
	bash := func(spec string) Tool { return Tool{Name: "Bash", Spec: spec, HasSpec: true} }
	tests := []struct {
		name string
		in   string
		want Tools
	}{
		{"empty", "", nil},
		{"blank", "  ,\n ", nil},
		{"single bare", "Read", Tools{{Name: "Read"}}},
		{"comma separated", "Bash(git:*),Bash(jq:*),Read,Write",
			Tools{bash("git:*"), bash("jq:*"), {Name: "Read"}, {Name: "Write"}}},
		{"space separated", "Bash(python:*) Read Write",
			Tools{bash("python:*"), {Name: "Read"}, {Name: "Write"}}},
		{"mixed separators", "Read, Bash(git status:*),\tGrep\nGlob",
			Tools{{Name: "Read"}, bash("git status:*"), {Name: "Grep"}, {Name: "Glob"}}},
		{"space inside parentheses kept", "Bash(git status:*) Bash(git diff:*)",
			Tools{bash("git status:*"), bash("git diff:*")}},
		{"spec trimmed", "Bash( git log:* )", Tools{bash("git log:*")}},
		{"exact spec", "Bash(npm test)", Tools{bash("npm test")}},
		{"bare Bash", "Bash", Tools{{Name: "Bash"}}},
		{"Claude Code's Bash(*) is Bash", "Bash(*)", Tools{{Name: "Bash"}}},
		{"Claude Code's trailing space star", "Bash(git diff *)", Tools{bash("git diff *")}},
		{"path pattern", "Bash(python3 scripts/*.py)", Tools{bash("python3 scripts/*.py")}},
		{"baseDir placeholder", "Bash(python3 {baseDir}/scripts/fill.py:*)", Tools{bash("python3 {baseDir}/scripts/fill.py:*")}},
		{"plugin root placeholder", "Bash(python ${CLAUDE_PLUGIN_ROOT}/skills/pdf/scripts/*)", Tools{bash("python ${CLAUDE_PLUGIN_ROOT}/skills/pdf/scripts/*")}},
		{"quoted spec with paren", `Bash(echo ")":*)`, Tools{bash(`echo ")":*`)}},
		{"unknown tool kept", "Execute, Frobnicate(x y)",
			Tools{{Name: "Execute"}, {Name: "Frobnicate", Spec: "x y", HasSpec: true}}},
		{"non-Bash nested parens", "Read(a(b)c)", Tools{{Name: "Read", Spec: "a(b)c", HasSpec: true}}},
		{"mcp tool", "mcp__github__create_issue", Tools{{Name: "mcp__github__create_issue"}}},
		{"duplicate commas", "Read,,Write,", Tools{{Name: "Read"}, {Name: "Write"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAllowedTools(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			again, err := ParseAllowedTools(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again, "String() must round-trip")
		})
	}
}

func TestParseAllowedToolsMalformed(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantEntry string
		wantCol   int
	}{
		{"unclosed paren", "Read, Bash(git status:*", "Bash(git status:*", 7},
		{"unclosed nested", "Bash(a (b)", "Bash(a (b)", 1},
		{"stray close paren", "Read)", "Read)", 1},
		{"leading close paren", "Read )", ")", 6},
		{"empty spec", "Bash()", "Bash()", 1},
		{"blank spec", "Write,Bash(  )", "Bash(  )", 7},
		{"text after spec", "Bash(git:*)x", "Bash(git:*)x", 1},
		{"digit start", "9Read", "9Read", 1},
		{"garbage", "Read, @!", "@!", 7},
		{"quote in name", `"Read"`, `"Read"`, 1},
		{"unterminated quote", `Bash(echo "x:*)`, `Bash(echo "x:*)`, 1},
		{"bash only wildcard", "Bash(:*)", "Bash(:*)", 1},
		{"bash glob word", "Bash(ls *.txt)", "Bash(ls *.txt)", 1},
		{"bash wildcard between words", "Bash(git * main)", "Bash(git * main)", 1},
		{"bash wildcard glued to a program", "Bash(ls*)", "Bash(ls*)", 1},
		{"bash bracket pattern", "Bash(cat scripts/[ab].py)", "Bash(cat scripts/[ab].py)", 1},
		{"bash unknown placeholder", "Bash(python ${OTHER_ROOT}/x.py)", "Bash(python ${OTHER_ROOT}/x.py)", 1},
		{"bash wildcard mid", "Bash(git*:*)", "Bash(git*:*)", 1},
		{"bash expansion", "Bash($X:*)", "Bash($X:*)", 1},
		{"bash command substitution", "Bash(echo $(id):*)", "Bash(echo $(id):*)", 1},
		{"bash two commands", "Bash(git status; rm:*)", "Bash(git status; rm:*)", 1},
		{"bash pipeline", "Bash(git log | head)", "Bash(git log | head)", 1},
		{"bash redirect", "Bash(git log > x)", "Bash(git log > x)", 1},
		{"bash assignment", "Bash(X=1 git:*)", "Bash(X=1 git:*)", 1},
		{"bash bad syntax", "Bash(echo 'x:*)", "Bash(echo 'x:*)", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAllowedTools(tt.in)
			require.Error(t, err)
			require.Nil(t, got)
			require.ErrorIs(t, err, ErrAllowedTools)
			var ate *AllowedToolsError
			require.True(t, errors.As(err, &ate))
			require.Equal(t, tt.wantEntry, ate.Entry)
			require.Equal(t, tt.wantCol, ate.Offset+1)
			require.Contains(t, err.Error(), fmt.Sprintf("%q", tt.wantEntry))
			require.NotEmpty(t, ate.Reason)
		})
	}
}

func TestParseAllowedToolsList(t *testing.T) {
	got, err := ParseAllowedToolsList([]string{"Read", "Bash(git status:*) Write"})
	require.NoError(t, err)
	require.Equal(t, Tools{{Name: "Read"}, {Name: "Bash", Spec: "git status:*", HasSpec: true}, {Name: "Write"}}, got)

	_, err = ParseAllowedToolsList([]string{"Read", "Bash("})
	require.ErrorIs(t, err, ErrAllowedTools)
	require.Contains(t, err.Error(), "item 2")
}

func TestToolString(t *testing.T) {
	tests := []struct {
		tool Tool
		want string
	}{
		{Tool{Name: "Read"}, "Read"},
		{Tool{Name: "Bash", Spec: "git status:*", HasSpec: true}, "Bash(git status:*)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, tt.tool.String())
		})
	}
	require.Equal(t, "Read, Bash(jq:*)", Tools{{Name: "Read"}, {Name: "Bash", Spec: "jq:*", HasSpec: true}}.String())
	require.Empty(t, Tools(nil).String())
}

func TestKnownTool(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"Bash", true}, {"Read", true}, {"Write", true}, {"Edit", true}, {"Glob", true},
		{"Grep", true}, {"WebFetch", true}, {"WebSearch", true}, {"Task", true},
		{"mcp__srv__tool", true}, {"mcp__", false}, {"bash", false}, {"Execute", false}, {"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, KnownTool(tt.name))
		})
	}
}

func TestCanonicalTool(t *testing.T) {
	got, ok := CanonicalTool("bash")
	require.True(t, ok)
	require.Equal(t, "Bash", got)
	_, ok = CanonicalTool("Execute")
	require.False(t, ok)
}

func TestGrants(t *testing.T) {
	ts, err := ParseAllowedTools("Bash(git:*), Read, Write(docs/**)")
	require.NoError(t, err)
	tests := []struct {
		name string
		want bool
	}{
		{"Read", true},
		{"Write", false}, // scoped: a whole-mount grant would widen it
		{"Bash", false},  // scoped too; commands go through CheckCommand
		{"Edit", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, ts.Grants(tt.name))
		})
	}
	require.True(t, Tools{{Name: "Write"}}.Grants("Write"))
	require.False(t, Tools(nil).Grants("Write"))
}
