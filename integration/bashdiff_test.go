//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
)

// TestCommandCheckerAgreesWithBash is the differential test of the
// Bash-tool policy: for a generated corpus of commands, every command the
// checker allows is run by the sandbox's real bash, exactly as a sandbox runs
// it (bashcheck.BashArgv) plus -x, and every simple command bash executed must
// be one the checker approved: its program among the approved programs, and
// no variable assignment unless a bare Bash entry allowed assignments.
func TestCommandCheckerAgreesWithBash(t *testing.T) {
	t.Parallel()
	corpus := bashCorpus()
	// The third set checks the exec path's rewriting: commands and entries
	// resolved for a skill (placeholders, skill-relative scripts) before the
	// check, as sandboxrun.CheckCommand does; bash must still run only what
	// the checker approved of the resolved text.
	refs := &bashcheck.SkillRefs{Name: "s", Folder: "s-dir", Script: func(rel string) (string, bool) {
		if rel == "scripts/fill.py" || rel == "scripts/run.sh" {
			return "/skills/s/" + rel, true
		}
		return "", false
	}}
	toolsets := []struct {
		tools string
		refs  *bashcheck.SkillRefs
	}{
		{"Bash(git status:*) Bash(echo:*) Bash(cat:*) Bash(printf:*) Bash(true) Bash(ls:*)", nil},
		{"Bash", nil},
		{"Bash(python3 scripts/fill.py:*) Bash(scripts/run.sh:*) Bash(echo:*) Bash(cat:*) Bash(python3 {baseDir}/scripts/*.py) Bash(bash ${CLAUDE_PLUGIN_ROOT}/scripts/* *)", refs},
	}
	type job struct {
		Argv  []string `json:"argv"`
		Stubs []string `json:"stubs"`
	}
	type approved struct {
		tools    string
		command  string
		programs []string
		assigns  bool
		job      int // index in jobs of the bash run that checks it
	}
	var jobs []job
	var want []approved
	seen := map[string]bool{}
	// A command that two tool sets allow with the same argv and the same
	// approved programs runs in bash once: its one trace is checked
	// against each tool set's approval.
	jobOf := map[string]int{}
	for _, set := range toolsets {
		tools := set.tools
		ts, err := bashcheck.ParseAllowedTools(tools)
		require.NoError(t, err)
		if set.refs != nil {
			ts = ts.ForSkill(*set.refs)
		}
		for _, cmd := range corpus {
			if set.refs != nil {
				// Only what names the skill's files can be rewritten;
				// the rest is the first set's business.
				if !strings.Contains(cmd, "scripts/") && !strings.Contains(cmd, "{baseDir}") && !strings.Contains(cmd, "CLAUDE_") {
					continue
				}
				cmd = set.refs.Resolve(cmd)
			}
			if seen[tools+"\x00"+cmd] {
				continue
			}
			seen[tools+"\x00"+cmd] = true
			a, err := ts.Approve(cmd)
			if err != nil {
				require.ErrorIs(t, err, policy.ErrDenied)
				continue
			}
			argv := slices.Clone(a.Argv)
			c := slices.Index(argv, "-c")
			require.Positive(t, c, "BashArgv has no -c: %q", argv)
			argv = slices.Insert(argv, c, "-x")
			key := fmt.Sprintf("%q %q", argv, a.Programs)
			j, ok := jobOf[key]
			if !ok {
				j = len(jobs)
				jobOf[key] = j
				jobs = append(jobs, job{Argv: argv, Stubs: a.Programs})
			}
			want = append(want, approved{tools: tools, command: cmd, programs: a.Programs, assigns: tools == "Bash", job: j})
		}
	}
	t.Logf("corpus: %d commands, %d allowed under %d tool sets, %d distinct bash runs", len(corpus), len(want), len(toolsets), len(jobs))
	require.Greater(t, len(want), 500, "the corpus should exercise many allowed commands")

	// The jobs run in sandboxes of the longest timeout a sandbox may have,
	// each with every CPU of the engine's host: the sandbox runs nothing
	// but the test's own driver, and a cap of one CPU left the other idle
	// whenever the rest of the suite waited on the engine. The driver
	// stops taking jobs after bashDiffBudget and returns what it ran; the
	// rest go to the next sandbox. So a busy host slows the test down
	// (more sandboxes) rather than failing it on the sandbox's timeout;
	// each sandbox must make progress, so a stuck driver still fails.
	info, err := runner.Client().Info(context.Background())
	require.NoError(t, err)
	traces := make([]*bashTrace, len(jobs))
	todo := make([]int, len(jobs))
	for i := range todo {
		todo[i] = i
	}
	for sandboxes := 1; len(todo) > 0; sandboxes++ {
		batch := todo[:min(bashDiffBatch, len(todo))]
		in := struct {
			Budget float64 `json:"budget"`
			Jobs   []job   `json:"jobs"`
		}{Budget: bashDiffBudget.Seconds()}
		for _, j := range batch {
			in.Jobs = append(in.Jobs, jobs[j])
		}
		stdin, err := json.Marshal(in)
		require.NoError(t, err)
		spec := pySpec(t, bashDriver)
		spec.Stdin = stdin
		spec.Limits.Timeout = 10 * time.Minute
		spec.Limits.OutputBytes = 64 << 20
		spec.Limits.CPUs = float64(info.NCPU)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		res, err := runner.Run(ctx, spec)
		cancel()
		require.NoError(t, err)
		requireNoContainer(t, runner, spec.RunID)
		require.Equal(t, 0, res.ExitCode, "driver failed: %s", res.Stderr)
		var got []*bashTrace
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
		require.Len(t, got, len(batch))
		var rest []int
		for k, j := range batch {
			if got[k] == nil {
				rest = append(rest, j)
				continue
			}
			traces[j] = got[k]
		}
		require.Less(t, len(rest), len(batch), "sandbox %d ran none of its %d jobs in %s", sandboxes, len(batch), bashDiffBudget)
		todo = append(rest, todo[len(batch):]...)
		if len(todo) > 0 {
			t.Logf("sandbox %d ran %d jobs; %d left", sandboxes, len(batch)-len(rest), len(todo))
		}
	}

	failures := 0
	for _, w := range want {
		tr := traces[w.job]
		executed, assigned, err := parseXtrace(tr.Trace)
		if err != nil {
			t.Errorf("tools %q, command %q: cannot read bash's trace %q: %v", w.tools, w.command, tr.Trace, err)
			failures++
			continue
		}
		for _, prog := range executed {
			if !slices.Contains(w.programs, prog) {
				t.Errorf("tools %q, command %q: bash ran %q, which the checker never approved (approved %q); trace:\n%s", w.tools, w.command, prog, w.programs, tr.Trace)
				failures++
			}
		}
		if assigned != "" && !w.assigns {
			t.Errorf("tools %q, command %q: bash assigned %q although the entries allow no assignment; trace:\n%s", w.tools, w.command, assigned, tr.Trace)
			failures++
		}
		if failures > 20 {
			t.Fatal("too many disagreements; stopping")
		}
	}
}

// bashDiffBatch is how many commands one sandbox is given: a few minutes'
// work on a quiet 2-CPU host.
const bashDiffBatch = 12000

// bashDiffBudget is how long the driver takes new jobs, well within the
// sandbox's 10-minute timeout: a job takes at most 3 s (its own bound),
// and the sandbox must start and hand back its output, on a loaded host.
const bashDiffBudget = 5 * time.Minute

// bashTrace is one job's outcome as the driver reports it; a job it had
// no time for is null.
type bashTrace struct {
	Trace   string `json:"trace"`
	Stderr  string `json:"stderr"`
	Timeout bool   `json:"timeout"`
}

var assignRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\+?=`)

// parseXtrace reads bash's -x trace: one record per traced command, each
// starting with PS4 ("+ ", the '+' repeated per nesting level). A record
// whose single-quoted argument holds a newline spans several lines, so lines
// are joined until they parse. It returns the program names executed and
// the first variable assignment seen.
func parseXtrace(trace string) (programs []string, assigned string, err error) {
	var rec string
	flush := func() error {
		if rec == "" {
			return nil
		}
		// A record is one simple command's words as bash quotes them.
		// Parsed after ": " so that a word such as "done" or "x=1" is read
		// as an argument, never as a keyword or an assignment.
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(": "+rec), "")
		if err != nil {
			return err
		}
		if len(f.Stmts) != 1 {
			return fmt.Errorf("record %q is not one command", rec)
		}
		call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) < 2 {
			return fmt.Errorf("record %q is not a simple command", rec)
		}
		rec = ""
		words := call.Args[1:]
		// bash traces each assignment alone as name=value, the name
		// unquoted; a program whose name looks like one ("x=" run as a
		// command with no arguments) reads the same and counts as one.
		if lit, ok := words[0].Parts[0].(*syntax.Lit); ok && len(words) == 1 && assignRe.MatchString(lit.Value) {
			if assigned == "" {
				assigned = lit.Value
			}
			return nil
		}
		// Fields does quote removal; without a ReadDir it never globs.
		prog, err := expand.Fields(&expand.Config{}, words[0])
		if err != nil || len(prog) != 1 {
			return fmt.Errorf("program word %v: %w", prog, err)
		}
		programs = append(programs, prog[0])
		return nil
	}
	for _, line := range strings.SplitAfter(trace, "\n") {
		if line == "" {
			continue
		}
		if rec == "" {
			body := strings.TrimLeft(line, "+")
			if len(body) == len(line) {
				// The rest of a skipped [[ ]] record whose operand held a
				// newline: every traced command starts with PS4.
				continue
			}
			if !strings.HasPrefix(body, " ") {
				return nil, "", fmt.Errorf("line %q does not start with PS4", line)
			}
			body = body[1:]
			// Loop and case headers trace as "for x in …" and "case x in",
			// [[ ]] with its operands unquoted; none is a command.
			if strings.HasPrefix(body, "for ") || strings.HasPrefix(body, "select ") ||
				strings.HasPrefix(body, "case ") || strings.HasPrefix(body, "[[ ") {
				continue
			}
			rec = body
		} else {
			rec += line
		}
		if err := flush(); err != nil {
			var pe syntax.ParseError
			if errors.As(err, &pe) && pe.Incomplete {
				continue
			}
			if syntax.IsIncomplete(err) {
				continue
			}
			return nil, "", err
		}
	}
	if rec != "" {
		return nil, "", fmt.Errorf("trace ends inside a record: %q", rec)
	}
	return programs, assigned, nil
}

// bashDriver runs each job's argv (four at a time, none started after its
// budget: those are null) with the trace on a file, PATH reduced to
// stubs (symlinks to /bin/true) for the programs the checker approved, so an
// unapproved program that bash tries to run shows in the trace and nothing
// real is run.
const bashDriver = `
import concurrent.futures, json, os, subprocess, sys, tempfile, time
given = json.load(sys.stdin)
jobs, deadline = given["jobs"], time.monotonic() + given["budget"]
stubs = tempfile.mkdtemp()
for job in jobs:
    for name in job["stubs"] or []:
        if "/" in name or name in (".", ".."):
            continue
        p = os.path.join(stubs, name)
        if not os.path.lexists(p):
            os.symlink("/bin/true", p)
work = tempfile.mkdtemp()
def one(i):
    if time.monotonic() > deadline:
        return None
    job = jobs[i]
    tr = os.path.join(work, "trace%d" % i)
    fd = os.open(tr, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    env = {"PATH": stubs, "PS4": "+ ", "BASH_XTRACEFD": str(fd), "HOME": work, "LANG": "C.UTF-8"}
    timeout = False
    try:
        p = subprocess.run(["/bin/bash"] + job["argv"][1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env, cwd=work, pass_fds=(fd,), timeout=3)
        err = p.stderr
    except subprocess.TimeoutExpired as e:
        timeout, err = True, e.stderr or b""
    os.lseek(fd, 0, 0)
    trace = os.read(fd, 1 << 16)
    os.close(fd)
    os.unlink(tr)
    return {"trace": trace.decode("utf-8", "replace"), "stderr": err[:2000].decode("utf-8", "replace"), "timeout": timeout}
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    out = list(pool.map(one, range(len(jobs))))
json.dump(out, sys.stdout)
`

// bashCorpus is the fuzz seeds' shapes plus mutations: every payload
// inserted at every distinct insertion point of every base command (see
// insertionPoints), and random pairs of insertions, generated from a fixed
// seed so failures repeat.
func bashCorpus() []string {
	bases := []string{
		"git status", "git status --short", "echo hi", "cat file", "printf '%s\\n' a b",
		"git status | cat", "echo a && echo b || true", "(echo x)", "{ echo x; }",
		"if git status; then echo y; fi", "cat <<EOF\nbody $HOME\nEOF", "cat <<'EOF'\n$(id)\nEOF",
		"cat <<-EOF\n\tbody\n\tEOF", "echo \"$HOME\"", "echo 'single'", "echo $'ansi\\n'",
		"echo @(a|b) !(c)", "echo a # comment", "case x in x) echo y;; esac", "[[ -n x ]] && echo y",
		"echo ${X:-d}", "echo {a,b}", "echo a\\ b", "cat < /dev/null > /tmp/x 2>&1",
		"echo \"a 'b' c\"", "ls -la /workspace", "echo `echo`", "git status; echo done",
		"echo <<<here", "echo \"$X\"'$Y'", "true", "echo a\necho b", "echo \\$(id)",
		"echo '\\' x", "echo \"\\\"\"", "! git status", "time echo x", "echo x |& cat",
		"cat <<A <<B\na\nA\nb\nB", "cat <<'E O'\nx\nE O", "cat <<\"EOF\" | cat\n$x `y`\nEOF",
		"cat <<EOF; echo after\n$(echo)\nEOF", "cat <<-'X'\n\t$(id)\n\tX", "cat<<EOF\nEOF",
		"case $x in a|b) echo 1;; *) echo 2;; esac", "case x in (x) echo;; esac",
		"[[ $x == a* ]] && echo", "[[ -f /etc/x && ! -d y ]] || echo", "[[ x =~ ^a(b|c)$ ]] && echo",
		"echo ${x#*/} ${x%%.*} ${x/a/b} ${x^^} ${#x}", "echo \"${x:-$HOME}\"", "echo $((1))",
		"for f in a b; do echo $f; done", "if ! git status; then :; fi",
		"echo a 2>&1 >/dev/null", "echo a &>/dev/null", "cat < /dev/null 3<&0", "echo {1..3}",
		"echo $'a\\'b' c", "echo $\"x\"", "echo a#b #c", "echo \\#x", "{ echo a; } > /tmp/o",
		"(cd /tmp && ls)", "ls -- -x", "echo ~root ~/x", "echo *.txt ?.md [ab]", "echo \\\\n",
		"python3 scripts/fill.py in.csv", "scripts/run.sh x | cat", "python3 {baseDir}/scripts/fill.py",
		"python3 ./scripts/fill.py && echo ok", "bash ${CLAUDE_PLUGIN_ROOT}/scripts/run.sh -v",
	}
	payloads := []string{
		"\\\n", "\r", "\r\n", "\n", "#", "'", "\"", "$(", "`", "\\", ";id;", "$\\\n(id)",
		"\nid\n", "<<EOF\n", " ", "!(id)", "$[", "${", "\t", "&", "|", ")", "(", "$'", "\\'",
		"\nEOF\nid\n", " #\nid", "<(id)", ">(id)", "{", "}", "$((", "\x01", "\x7f", "=", "~", "*",
		"$'\\n'", "$'\\'", "'\\''", ";;", "\t#", "\nX\nid\n", "<<-", "<<<", "$\"", "${x:-", "@(",
		"!(", "`id`", "$(id)", "\\\"", ";", "&&", "||", "\n\n", "\\ ", "[[", "]]", "((", "))",
		"\u00a0", "\u2028", "é", "\\é", "$'\\xc3'",
	}
	var corpus []string
	for _, b := range bases {
		corpus = append(corpus, b)
		for _, p := range payloads {
			for _, i := range insertionPoints(b) {
				corpus = append(corpus, b[:i]+p+b[i:])
			}
		}
	}
	r := rand.New(rand.NewPCG(8, 2026))
	for range 6000 {
		s := bases[r.IntN(len(bases))]
		for range 2 {
			i := r.IntN(len(s) + 1)
			s = s[:i] + payloads[r.IntN(len(payloads))] + s[i:]
		}
		corpus = append(corpus, s)
	}
	return corpus
}

// insertionPoints are the positions of b at which a payload is inserted:
// one per lexical context, where a context is the text before the position
// with each run of word characters ([A-Za-z0-9_]) read as one, and the
// class of the byte after it. Two positions inside the same word of the
// same base ("st|atus", "sta|tus") differ only in which letters end up on
// either side of the payload, which neither the checker nor bash reads
// differently (a split program name is unapproved either way, a split
// keyword is no keyword either way); every boundary between a word and
// anything else, and every position among quotes, operators, expansions
// and heredoc text, keeps a context of its own. Inserting at every byte
// instead ran about a third more commands through bash, each one a repeat
// of a context kept here, and made this the longest test of the suite.
func insertionPoints(b string) []int {
	word := func(c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
	}
	var points []int
	seen := map[string]bool{}
	var prefix []byte // b[:i] with each run of word characters as one 'w'
	for i := 0; i <= len(b); i++ {
		next := "end"
		if i < len(b) {
			next = string(b[i])
			if word(b[i]) {
				next = "w"
			}
		}
		if key := string(prefix) + "\x00" + next; !seen[key] {
			seen[key] = true
			points = append(points, i)
		}
		if i < len(b) {
			switch {
			case !word(b[i]):
				prefix = append(prefix, b[i])
			case i == 0 || !word(b[i-1]):
				prefix = append(prefix, 'w')
			}
		}
	}
	return points
}
