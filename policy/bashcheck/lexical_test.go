package bashcheck

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckCommandAmbiguousInput covers the input classes on which bash and
// the checker's parser can read different programs: each must be refused as
// a whole, whatever the entries allow.
func TestCheckCommandAmbiguousInput(t *testing.T) {
	tests := []struct {
		name, cmd, reason string
	}{
		{"continuation in double quotes", "git status \"$\\\n(id)\"", "line continuation"},
		{"continuation in single quotes", "git status '$\\\n(id)'", "line continuation"},
		{"continuation after comment", "git status # x \\\nid", "line continuation"},
		{"continuation in heredoc delimiter", "cat <<EO\\\nF\nx\nEOF\nid\nEOF", "line continuation"},
		{"continuation in heredoc body", "cat <<EOF\n$\\\n(id)\nEOF", "line continuation"},
		{"continuation inside word", "git sta\\\ntus", "line continuation"},
		{"continuation at end", "git status \\\n", "line continuation"},
		{"crlf", "git status\r\nid", "carriage return"},
		{"lone cr", "git status\rid", "carriage return"},
		{"cr in heredoc delimiter", "cat <<EOF\r\nx\r\nEOF\r\n", "carriage return"},
		{"ctlesc", "git status \x01", "control character 0x01"},
		{"ctlnul", "git status \x7f", "control character 0x7f"},
		{"escape", "git status \x1b[0m", "control character 0x1b"},
		{"vertical tab", "git status\vid", "control character 0x0b"},
		{"nul", "git status\x00; id", "NUL"},
		{"deep parens", strings.Repeat("( ", MaxCommandDepth+1) + "git status" + strings.Repeat(")", MaxCommandDepth+1), "nests"},
		{"deep ifs", strings.Repeat("if git status; then ", MaxCommandDepth+1) + "git status" + strings.Repeat("; fi", MaxCommandDepth+1), "nests"},
		{"over size", "git status " + strings.Repeat("a", MaxCommandBytes), "limit"},
		{"heredoc delimiter expansion", "cat <<$X\nid\n$X", "heredoc"},
		{"heredoc delimiter mixed quoting", "cat <<E'O'F\nx\nEOF", "here-document delimiter"},
		{"heredoc delimiter backslash", "cat <<E\\OF\nx\nEOF", "here-document delimiter"},
		{"heredoc delimiter dollar quote", "cat <<$'EOF'\nx\nEOF", "here-document delimiter"},
	}
	ts := mustTools(t, "Bash(git status:*) Bash(cat:*)")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, tools := range []Tools{ts, mustTools(t, "Bash")} {
				err := tools.CheckCommand(tt.cmd)
				require.ErrorIs(t, err, ErrDenied)
				require.ErrorContains(t, err, tt.reason)
			}
		})
	}
}

func TestCheckCommandPlainFormsStillAllowed(t *testing.T) {
	ts := mustTools(t, "Bash(git status:*) Bash(cat:*) Bash(echo:*)")
	for _, cmd := range []string{
		"git status --short\ngit status",
		"cat <<EOF\nhello $USER\nEOF",
		"cat <<'EOF'\n$(not run) \\ x\nEOF",
		"cat <<\"END_1\" | cat\nx\nEND_1",
		"cat <<-EOF\n\tx\n\tEOF",
		"echo 'a\\b' \"c\\d\" e\\ f # comment",
		"echo @(a|b) !(c)",
		strings.Repeat("( ", MaxCommandDepth-1) + "git status" + strings.Repeat(")", MaxCommandDepth-1),
	} {
		require.NoError(t, ts.CheckCommand(cmd), "%q", cmd)
	}
}

func TestApproveListsPrograms(t *testing.T) {
	ts := mustTools(t, "Bash(git:*) Bash(cat:*) Bash(echo:*)")
	a, err := ts.Approve("git status | cat && { echo \"x\"; } || (git diff \"$f\")")
	require.NoError(t, err)
	require.Equal(t, []string{"git", "cat", "echo", "git"}, a.Programs)
	require.Equal(t, BashArgv("git status | cat && { echo \"x\"; } || (git diff \"$f\")"), a.Argv)
	require.Equal(t, []string{"bash", "--norc", "--noprofile", "-p", "-O", "extglob", "-c", "ls"}, BashArgv("ls"))
}

// TestCheckCommandCostBounded checks that the worst inputs within the size
// limit are refused without building large trees: the bound is on bytes
// allocated, which is deterministic, not on time.
func TestCheckCommandCostBounded(t *testing.T) {
	ts := mustTools(t, "Bash")
	for name, cmd := range map[string]string{
		"open parens":       strings.Repeat("(", MaxCommandBytes),
		"balanced parens":   strings.Repeat("(", MaxCommandBytes/2-1) + "x" + strings.Repeat(")", MaxCommandBytes/2-1),
		"arithmetic":        "echo $((" + strings.Repeat("(", MaxCommandBytes/2-10) + "1" + strings.Repeat(")", MaxCommandBytes/2-10) + "))",
		"nested substs":     strings.Repeat("\"$(", MaxCommandBytes/3),
		"nested ifs":        strings.Repeat("if a; then ", MaxCommandBytes/22) + strings.Repeat("fi;", MaxCommandBytes/22),
		"over limit parens": strings.Repeat("((((", MaxCommandBytes),
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := ts.CheckCommand(cmd)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, ErrDenied)
			// The refusal happens in the linear pre-scan: a few copies of
			// the input at most, not a tree per byte.
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8*len(cmd)+1<<20), "allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
		})
	}
}

func TestNestingDepth(t *testing.T) {
	for cmd, want := range map[string]int{
		"ls":                              0,
		"(ls)":                            1,
		"{ (ls); }":                       2,
		"if a; then if b; then c; fi; fi": 2,
		"diff a b; iffy; fif":             0,
		"a ) ) ) (b)":                     1,
		"echo '((('":                      3,
	} {
		require.Equal(t, want, nestingDepth(cmd), "%q", cmd)
	}
}
