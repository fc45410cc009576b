package bashcheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustTools(t testing.TB, s string) Tools {
	t.Helper()
	ts, err := ParseAllowedTools(s)
	require.NoError(t, err)
	return ts
}

func TestCheckCommandAllowed(t *testing.T) {
	tests := []struct {
		name, tools, cmd string
	}{
		// Prefix specs.
		{"prefix exact words", "Bash(git status:*)", "git status"},
		{"program alone", "Bash(git:*)", "git"},
		{"spec example", "Bash(python:*),Bash(jq:*),Read,Write", "python {baseDir}/scripts/extract.py --input data.csv --output results.json"},
		{"spec example sandbox path", "Bash(python:*)", "python /skills/data-analysis/scripts/extract.py --input data.csv"},
		{"prefix with args", "Bash(git status:*)", "git status --short"},
		{"program prefix", "Bash(git:*)", "git commit -m 'x y'"},
		{"quoted prefix word", "Bash(git status:*)", `"git" 'status' -s`},
		{"escaped prefix word", "Bash(git status:*)", `g\it stat\us`},
		{"quoted spec word", `Bash(echo "hello world":*)`, `echo 'hello world' again`},
		{"expansion after prefix", "Bash(jq:*)", `jq . "$FILE"`},
		{"glob after prefix", "Bash(ls:*)", "ls *.csv"},
		{"tilde after prefix", "Bash(ls:*)", "ls ~/x"},
		{"default expansion after prefix", "Bash(echo:*)", `echo "${NAME:-world}" ${#NAME} ${NAME%.csv} ${NAME//a/b} ${NAME^^}`},
		// Exact specs.
		{"exact", "Bash(npm test)", "npm test"},
		{"exact quoted", "Bash(npm test)", "npm 'test'"},
		// python and python3.
		{"python spec python3 cmd", "Bash(python:*)", "python3 scripts/x.py --in a.csv"},
		{"python3 spec python cmd", "Bash(python3:*)", "python {baseDir}/scripts/x.py"},
		{"python exact", "Bash(python -V)", "python3 -V"},
		// Bare Bash.
		{"bare Bash any program", "Bash", "rm -rf /tmp/x"},
		{"bare Bash expansion args", "Bash", `printf '%s\n' "$@"`},
		// Lists and pipelines.
		{"pipeline", "Bash(git:*), Bash(head:*)", "git log | head -5"},
		{"pipe all", "Bash(git:*), Bash(head:*)", "git log |& head"},
		{"and list", "Bash(git:*), Bash(jq:*)", "git status && jq . x.json"},
		{"or list", "Bash(git:*), Bash(jq:*)", "git status || jq . x.json"},
		{"semicolons", "Bash(git:*), Bash(jq:*)", "git status; jq . x.json;"},
		{"newlines", "Bash(git:*), Bash(jq:*)", "git status\njq . x.json\n"},
		{"negation", "Bash(git:*)", "! git diff --quiet"},
		{"subshell", "Bash(git:*)", "(git status)"},
		{"block", "Bash(git:*)", "{ git status; git log; }"},
		{"if", "Bash(test:*), Bash(echo:*)", "if test -f x; then echo yes; elif test -d x; then echo dir; else echo no; fi"},
		{"while", "Bash(read:*), Bash(echo:*)", `while read -r line; do echo "$line"; done < in.txt`},
		{"until", "Bash(false:*), Bash(true:*)", "until true; do false; done"},
		{"for with bare Bash", "Bash", `for f in *.csv a b; do echo "$f"; done`},
		{"for with bare and scoped", "Bash, Bash(echo:*)", `for f in a b; do echo "$f"; done`},
		{"case", "Bash(echo:*)", `case "$X" in a|b*) echo ab;; *) echo other;; esac`},
		{"test clause", "Bash(jq:*)", `[[ -f out.json && "$X" == a* ]] && jq . out.json`},
		{"test clause regex", "Bash(echo:*)", `[[ $X =~ ^[0-9]+$ ]] || echo no`},
		{"time", "Bash(git:*)", "time git status"},
		{"comment ignored", "Bash(git:*)", "git status # show it"},
		// Assignments: only a bare Bash entry allows them.
		{"assignment prefix with bare Bash", "Bash", "FOO=1 BAR=\"$X\" python3 x.py"},
		{"assignment only with bare Bash", "Bash", "FOO=1"},
		{"append assignment with bare Bash", "Bash", "FOO+=1; HOME=/workspace git status"},
		{"assignment with bare and scoped", "Bash(git status:*), Bash", "GIT_EXTERNAL_DIFF=x git status"},
		{"expansion argument is no assignment", "Bash(git status:*)", `git status "$f" X=1`},
		// Redirections.
		{"redirect out", "Bash(git:*)", "git log > /tmp/log.txt 2>&1"},
		{"redirect append and in", "Bash(jq:*)", "jq . < in.json >> out.json 2>/dev/null"},
		{"redirect all", "Bash(jq:*)", "jq . in.json &> out.txt"},
		{"heredoc", "Bash(cat:*)", "cat <<EOF\nhello $USER\nEOF\n"},
		{"quoted heredoc", "Bash(cat:*)", "cat <<'EOF'\n$(not run)\nEOF\n"},
		{"here string", "Bash(jq:*)", `jq . <<< "$JSON"`},
		{"redirect only", "Bash(git:*)", "> empty.txt"},
		{"fd dup", "Bash(git:*)", "git status 3>&1 1>&2 2>&3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, mustTools(t, tt.tools).CheckCommand(tt.cmd))
		})
	}
}

func TestCheckCommandDenied(t *testing.T) {
	tests := []struct {
		name, tools, cmd string
		part             string // offending part; "" = whole command refused
		suggest          string
		reason           string // substring of Reason
	}{
		// Not matched by any entry.
		{"other subcommand", "Bash(git status:*)", "git commit -m x", "git commit -m x", "Bash(git commit:*)", "not allowed"},
		{"word prefix is not string prefix", "Bash(git status:*)", "git statusx", "git statusx", "Bash(git statusx:*)", "not allowed"},
		{"program only differs", "Bash(git status:*)", "rm -rf /", "rm -rf /", "Bash(rm:*)", "not allowed"},
		{"exact needs exact", "Bash(npm test)", "npm test --watch", "npm test --watch", "Bash(npm test:*)", "not allowed"},
		{"exact shorter", "Bash(npm test)", "npm", "npm", "Bash(npm:*)", "not allowed"},
		{"exact with expansion", "Bash(echo hi)", "echo $X", "echo $X", "Bash(echo:*)", "expansions"},
		{"prefix word is expansion", "Bash(git status:*)", "git $SUB", "git $SUB", "Bash(git:*)", "expansions"},
		{"prefix word is glob", "Bash(git status:*)", "git stat*", "git stat*", "Bash(git:*)", "not allowed"},
		{"path is another program", "Bash(git:*)", "/usr/bin/git status", "/usr/bin/git status", "Bash(/usr/bin/git:*)", "not allowed"},
		{"python is not python2", "Bash(python:*)", "python2 x.py", "python2 x.py", "Bash(python2:*)", "not allowed"},
		{"no tools at all", "", "git status", "git status", "Bash(git:*)", "no Bash entry"},
		{"only non-Bash tools", "Read, Write", "ls", "ls", "Bash(ls:*)", "no Bash entry"},
		{"no tools assignment only", "Read", "X=1", "X=1", "", "no Bash entry"},
		{"no tools assignment prefix", "", "GIT_DIR=x git status", "GIT_DIR=x", "", "without a scope"},
		{"no tools for loop", "", "for HOME in x; do git status; done", "for HOME in x", "", "without a scope"},
		{"no tools assignment after program", "", "git log; HOME=x git status", "git log", "Bash(git:*)", "no Bash entry"},
		// Every part of a list must be allowed.
		{"pipeline second", "Bash(git:*)", "git log | sh", "sh", "Bash(sh:*)", "not allowed"},
		{"and list second", "Bash(git:*)", "git status && rm -rf x", "rm -rf x", "Bash(rm:*)", "not allowed"},
		{"or list second", "Bash(git:*)", "git status || curl x", "curl x", "Bash(curl:*)", "not allowed"},
		{"semicolon second", "Bash(git:*)", "git status; rm x", "rm x", "Bash(rm:*)", "not allowed"},
		{"newline second", "Bash(git:*)", "git status\nrm x", "rm x", "Bash(rm:*)", "not allowed"},
		{"subshell inner", "Bash(git:*)", "(git status; rm x)", "rm x", "Bash(rm:*)", "not allowed"},
		{"if condition", "Bash(echo:*)", "if rm x; then echo y; fi", "rm x", "Bash(rm:*)", "not allowed"},
		{"if else branch", "Bash(echo:*)", "if echo; then echo; else rm x; fi", "rm x", "Bash(rm:*)", "not allowed"},
		{"while body", "Bash(true:*)", "while true; do rm x; done", "rm x", "Bash(rm:*)", "not allowed"},
		{"for body", "Bash", "for f in a; do eval $f; done", "eval $f", "", "never allowed"},
		{"case body", "Bash(echo:*)", "case x in x) rm x;; esac", "rm x", "Bash(rm:*)", "not allowed"},
		{"time body", "Bash(echo:*)", "time rm x", "rm x", "Bash(rm:*)", "not allowed"},
		// Substitutions.
		{"command substitution arg", "Bash(echo:*)", "echo $(id)", "$(id)", "", "command substitution"},
		{"backticks", "Bash(echo:*)", "echo `id`", "`id`", "", "command substitution"},
		{"substitution in quotes", "Bash(echo:*)", `echo "a $(id) b"`, "$(id)", "", "command substitution"},
		{"substitution even with bare Bash", "Bash", "echo $(id)", "$(id)", "", "command substitution"},
		{"substitution in assignment", "Bash(echo:*)", "X=$(id) echo", "$(id)", "", "command substitution"},
		{"substitution in redirect", "Bash(echo:*)", "echo > $(id)", "$(id)", "", "command substitution"},
		{"substitution in heredoc", "Bash(cat:*)", "cat <<EOF\n$(id)\nEOF\n", "$(id)", "", "command substitution"},
		{"substitution in default", "Bash(echo:*)", "echo ${X:-$(id)}", "$(id)", "", "command substitution"},
		{"substitution in for items", "Bash(echo:*)", "for x in $(ls); do echo; done", "$(ls)", "", "command substitution"},
		{"substitution in case word", "Bash(echo:*)", "case $(id) in *) echo;; esac", "$(id)", "", "command substitution"},
		{"substitution in test", "Bash(echo:*)", "[[ -f $(id) ]]", "$(id)", "", "command substitution"},
		{"process substitution", "Bash(diff:*)", "diff <(ls a) <(ls b)", "<(ls a)", "", "process substitution"},
		{"output process substitution", "Bash(tee:*)", "tee >(sh)", ">(sh)", "", "process substitution"},
		// Hidden code.
		{"eval", "Bash", "eval 'rm x'", "eval 'rm x'", "", "never allowed"},
		{"trap", "Bash", "trap 'rm x' EXIT; ls", "trap 'rm x' EXIT", "", "never allowed"},
		{"hash -p", "Bash(git:*) Bash(hash:*)", "hash -p /workspace/x git; git status", "hash -p /workspace/x git", "", "never allowed"},
		{"enable -f", "Bash", "enable -f /workspace/x.so foo", "enable -f /workspace/x.so foo", "", "never allowed"},
		{"mapfile callback", "Bash(mapfile:*)", "mapfile -C 'rm x' -c 1 arr < f", "mapfile -C 'rm x' -c 1 arr < f", "", "never allowed"},
		{"trap via builtin", "Bash", "builtin trap 'rm x' EXIT", "builtin trap 'rm x' EXIT", "", "never allowed"},
		{"eval even if listed", "Bash(eval:*)", "eval ls", "eval ls", "", "never allowed"},
		{"exec", "Bash", "exec ls", "exec ls", "", "never allowed"},
		{"source", "Bash", "source x.sh", "source x.sh", "", "never allowed"},
		{"dot", "Bash", ". x.sh", ". x.sh", "", "never allowed"},
		{"command eval", "Bash", "command eval ls", "command eval ls", "", "never allowed"},
		{"command -p eval", "Bash(command:*)", "command -p eval ls", "command -p eval ls", "", "never allowed"},
		{"builtin source", "Bash", "builtin source x", "builtin source x", "", "never allowed"},
		{"escaped eval", "Bash", `\eval ls`, `\eval ls`, "", "never allowed"},
		{"quoted eval pieces", "Bash", `"ev"'al' ls`, `"ev"'al' ls`, "", "never allowed"},
		{"continued eval", "Bash", "ev\\\nal ls", "", "", "line continuation"},
		{"eval in pipeline", "Bash(git:*)", "git log | eval x", "eval x", "", "never allowed"},
		{"command expansion", "Bash", "command $X", "$X", "", "program name is an expansion"},
		// Program name expansions.
		{"program variable", "Bash", "$X status", "$X", "", "program name is an expansion"},
		{"program quoted variable", "Bash", `"$X" status`, `"$X"`, "", "program name is an expansion"},
		{"program braced", "Bash", "${X} status", "${X}", "", "program name is an expansion"},
		{"program glob", "Bash", "/bin/g?t status", "/bin/g?t", "", "program name is an expansion"},
		{"program brace expansion", "Bash", "{git,rm} x", "{git,rm}", "", "program name is an expansion"},
		{"program tilde", "Bash", "~/bin/tool", "~/bin/tool", "", "program name is an expansion"},
		{"program ansi-c quoted", "Bash", `$'\x72m' x`, `$'\x72m'`, "", "program name is an expansion"},
		// Definitions and arithmetic.
		{"function", "Bash", "f() { rm x; }; f", "f() { rm x; }", "", "function definitions"},
		{"function keyword", "Bash", "function f { ls; }", "function f { ls; }", "", "function definitions"},
		{"arithmetic command", "Bash", "((x = 1))", "((x = 1))", "", "arithmetic"},
		{"arithmetic expansion", "Bash", "echo $((1+2))", "$((1+2))", "", "arithmetic"},
		{"let", "Bash", "let x=1", "let x=1", "", "arithmetic"},
		{"c style for", "Bash", "for ((i=0;i<3;i++)); do ls; done", "for ((i=0;i<3;i++)); do ls; done", "", "arithmetic"},
		{"array subscript", "Bash", "echo ${a[$i]}", "${a[$i]}", "", "arithmetic"},
		{"substring", "Bash", "echo ${a:1:2}", "${a:1:2}", "", "arithmetic"},
		{"numeric test", "Bash", "[[ $x -eq 1 ]]", "$x -eq 1", "", "arithmetic"},
		{"var set test", "Bash", "[[ -v x ]]", "-v x", "", "-v"},
		{"indirect expansion", "Bash", "echo ${!x}", "${!x}", "", "indirect"},
		{"old arithmetic", "Bash", "echo $[1+2]", "$[1+2]", "", "arithmetic"},
		{"nameref test", "Bash", "[[ -R x ]]", "-R x", "", "-R"},
		{"substitution in replacement", "Bash", "echo ${x/$(id)/y}", "$(id)", "", "command substitution"},
		{"prompt transform", "Bash", "echo ${x@P}", "${x@P}", "", "operator"},
		{"assigning expansion", "Bash", "echo ${x:=1}", "${x:=1}", "", "assign"},
		{"array assignment", "Bash", "a=(x y)", "a=(x y)", "", "array"},
		{"indexed assignment", "Bash", "a[0]=x", "a[0]=x", "", "array"},
		{"declare", "Bash", "declare -i x=1", "declare -i x=1", "", "declare"},
		{"export", "Bash(git:*)", "export X=1 && git status", "export X=1", "", "arguments"},
		// Steering variables.
		{"PATH prefix", "Bash(git:*)", "PATH=/tmp git status", "PATH=/tmp", "", "PATH"},
		{"PATH alone", "Bash(git:*)", "PATH=/tmp; git status", "PATH=/tmp", "", "PATH"},
		{"LD_PRELOAD", "Bash(git:*)", "LD_PRELOAD=/tmp/x.so git status", "LD_PRELOAD=/tmp/x.so", "", "LD_PRELOAD"},
		{"BASH_ENV", "Bash", "BASH_ENV=/tmp/x bash -c true", "BASH_ENV=/tmp/x", "", "BASH_ENV"},
		{"IFS", "Bash", "IFS=/ ls", "IFS=/", "", "IFS"},
		{"for over PATH", "Bash", "for PATH in /tmp; do git status; done", "for PATH in /tmp", "", "PATH"},
		{"PATH prefix scoped", "Bash(git status:*)", "PATH=/tmp git status", "PATH=/tmp", "", "finds or loads"},
		// Any assignment under scoped entries: the program reads its environment.
		{"git config prefix", "Bash(git status:*)", `GIT_CONFIG_PARAMETERS="'core.fsmonitor=CMD'" git status`, `GIT_CONFIG_PARAMETERS="'core.fsmonitor=CMD'"`, "", "scoped Bash entries"},
		{"external diff prefix", "Bash(git status:*)", "GIT_EXTERNAL_DIFF=x git status", "GIT_EXTERNAL_DIFF=x", "", "scoped Bash entries"},
		{"second prefix", "Bash(python:*)", "FOO=1 BAR=2 python3 x.py", "FOO=1", "", "scoped Bash entries"},
		{"standalone HOME", "Bash(git status:*)", "HOME=/workspace; git status", "HOME=/workspace", "", "scoped Bash entries"},
		{"standalone only", "Bash(git:*)", "FOO=1", "FOO=1", "", "scoped Bash entries"},
		{"append assignment", "Bash(git status:*)", "HOME+=/x; git status", "HOME+=/x", "", "scoped Bash entries"},
		{"empty assignment", "Bash(git status:*)", "HOME= git status", "HOME=", "", "scoped Bash entries"},
		{"array assignment scoped", "Bash(git status:*)", "HOME=(/workspace); git status", "HOME=(/workspace)", "", "array"},
		{"array append scoped", "Bash(git status:*)", "a+=(x); git status", "a+=(x)", "", "array"},
		{"for loop variable", "Bash(git status:*)", "for HOME in /workspace; do git status; done", "for HOME in /workspace", "", "scoped Bash entries"},
		{"for without items", "Bash(echo:*)", `for f; do echo "$f"; done`, "for f", "", "scoped Bash entries"},
		{"for checks items first", "Bash(echo:*)", "for f in `id`; do echo; done", "`id`", "", "command substitution"},
		{"select scoped", "Bash(git status:*)", "select HOME in /workspace; do git status; done", "select HOME in /workspace; do git status; done", "", "select"},
		{"assignment in pipeline", "Bash(git:*), Bash(head:*)", "git log | HOME=/x head", "HOME=/x", "", "scoped Bash entries"},
		{"assignment in subshell", "Bash(git status:*)", "(HOME=/workspace; git status)", "HOME=/workspace", "", "scoped Bash entries"},
		{"assignment in block", "Bash(git status:*)", "{ GIT_DIR=x git status; }", "GIT_DIR=x", "", "scoped Bash entries"},
		{"assignment in if", "Bash(git status:*)", "if git status; then HOME=/x git status; fi", "HOME=/x", "", "scoped Bash entries"},
		{"assignment in while", "Bash(true:*)", "while true; do X=1; done", "X=1", "", "scoped Bash entries"},
		{"assignment in case", "Bash(echo:*)", "case a in a) X=1 echo;; esac", "X=1", "", "scoped Bash entries"},
		{"for in and list", "Bash(git status:*)", "git status && for HOME in /x; do git status; done", "for HOME in /x", "", "scoped Bash entries"},
		{"for nested in for", "Bash(echo:*)", "for a in 1; do for b in 2; do echo; done; done", "for a in 1", "", "scoped Bash entries"},
		// Jobs and other constructs.
		{"background", "Bash", "sleep 100 &", "sleep 100 &", "", "background"},
		{"background in list", "Bash", "ls; sleep 1 & ls", "sleep 1 &", "", "background"},
		{"coproc", "Bash", "coproc ls", "coproc ls", "", "coproc"},
		{"select", "Bash", "select x in a b; do ls; done", "select x in a b; do ls; done", "", "select"},
		// Redirections.
		{"redirect dev tcp", "Bash(cat:*)", "cat < /dev/tcp/10.0.0.1/80", "< /dev/tcp/10.0.0.1/80", "", "network"},
		{"redirect dev udp out", "Bash(echo:*)", "echo x > /dev/udp/10.0.0.1/53", "> /dev/udp/10.0.0.1/53", "", "network"},
		{"redirect dev tcp sneaky path", "Bash(cat:*)", "cat < /dev/./tcp/h/80", "< /dev/./tcp/h/80", "", "network"},
		{"redirect expanded target", "Bash(echo:*)", "echo x > $OUT", "> $OUT", "", "literal paths"},
		{"named fd", "Bash", "ls {fd}>x", "{fd}>x", "", "named file descriptors"},
		// Whole-command refusals.
		{"empty", "Bash", "   ", "", "", "empty"},
		{"only comment", "Bash", "# nothing", "", "", "nothing to run"},
		{"syntax error", "Bash", "echo 'unterminated", "", "", "not valid bash syntax"},
		{"unbalanced", "Bash", "(ls", "", "", "not valid bash syntax"},
		{"nul byte", "Bash", "ls\x00rm", "", "", "NUL"},
		{"invalid utf8", "Bash", "ls \xff", "", "", "UTF-8"},
		{"too long", "Bash", "echo " + strings.Repeat("a", MaxCommandBytes), "", "", "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustTools(t, tt.tools).CheckCommand(tt.cmd)
			require.Error(t, err)
			require.ErrorIs(t, err, ErrDenied)
			var de *DeniedError
			require.True(t, errors.As(err, &de))
			require.Equal(t, tt.cmd, de.Command)
			require.Equal(t, tt.part, de.Part)
			require.Equal(t, tt.suggest, de.Suggest)
			require.Contains(t, de.Reason, tt.reason)
			if tt.suggest != "" {
				// The suggestion must be an entry that really allows the part.
				require.NoError(t, mustTools(t, tt.suggest).CheckCommand(tt.part))
				require.Contains(t, err.Error(), tt.suggest)
			}
		})
	}
}

func TestCheckCommandSuggestionKeepsScope(t *testing.T) {
	// With no git entry, the suggestion opens the program; with a scoped git
	// entry, it keeps the subcommand granularity.
	err := mustTools(t, "Bash(jq:*)").CheckCommand("git commit -m x")
	var de *DeniedError
	require.True(t, errors.As(err, &de))
	require.Equal(t, "Bash(git:*)", de.Suggest)

	err = mustTools(t, "Bash(git status:*)").CheckCommand("git -C dir commit")
	require.True(t, errors.As(err, &de))
	require.Equal(t, "Bash(git:*)", de.Suggest, "a flag is not a subcommand")

	err = mustTools(t, "Bash(jq:*)").CheckCommand("'my tool' x")
	require.True(t, errors.As(err, &de))
	require.Equal(t, "Bash('my tool':*)", de.Suggest)
	require.NoError(t, mustTools(t, de.Suggest).CheckCommand("'my tool' x"))
}

func TestCheckCommandIgnoresBrokenSpecs(t *testing.T) {
	// Entries built by hand bypass ParseAllowedTools; a spec that does not
	// parse must allow nothing rather than everything.
	ts := Tools{{Name: "Bash", Spec: "$(id):*", HasSpec: true}, {Name: "Bash", Spec: "", HasSpec: true}}
	require.ErrorIs(t, ts.CheckCommand("id"), ErrDenied)
}

func TestDeniedErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  DeniedError
		want string
	}{
		{"with part and suggestion",
			DeniedError{Command: "git commit", Part: "git commit", Reason: "not allowed", Suggest: "Bash(git commit:*)"},
			`command denied at "git commit": not allowed; to allow it, add Bash(git commit:*) to the skill's allowed-tools`},
		{"whole command",
			DeniedError{Command: "", Reason: "the command is empty"},
			`command denied: the command is empty`},
		{"long part shortened",
			DeniedError{Command: "x", Part: strings.Repeat("é", 100), Reason: "r"},
			`command denied at "` + strings.Repeat("é", 60) + `…": r`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.err.Error())
			require.ErrorIs(t, &tt.err, ErrDenied)
		})
	}
}
