package bashcheck

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func FuzzParseAllowedTools(f *testing.F) {
	for _, seed := range []string{
		"", "Read", "Bash(git status:*),Bash(jq:*),Read,Write", "Bash(python:*) Read Write",
		"Bash(git status:*) Bash(git diff:*)", "Bash( git log:* )", "Bash(npm test)", "Bash",
		`Bash(echo ")":*)`, "Read(a(b)c)", "mcp__x__y", "Read,,Write,", "Bash(git status:*",
		"Read)", "Bash()", "Bash(x)y", "9Read", "@!", `Bash(echo "x:*)`, "Bash(*)", "Bash(:*)",
		"Bash(ls *.txt)", "Bash($X:*)", "Bash(a; b)", "Bash('it''s':*)", "X(\n)", "Bash(a\\)",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := ParseAllowedTools(s)
		if err != nil {
			var ate *AllowedToolsError
			if !errors.As(err, &ate) || !errors.Is(err, ErrAllowedTools) {
				t.Fatalf("error %v is not an *AllowedToolsError wrapping ErrAllowedTools", err)
			}
			if ate.Offset < 0 || ate.Offset+len(ate.Entry) > len(s) || s[ate.Offset:ate.Offset+len(ate.Entry)] != ate.Entry {
				t.Fatalf("entry %q at %d is not where the error says in %q", ate.Entry, ate.Offset, s)
			}
			return
		}
		again, err := ParseAllowedTools(ts.String())
		if err != nil {
			t.Fatalf("String() %q of a parsed list does not parse: %v", ts.String(), err)
		}
		if len(again) != len(ts) {
			t.Fatalf("round trip changed %v into %v", ts, again)
		}
		for i := range ts {
			if ts[i] != again[i] {
				t.Fatalf("round trip changed %v into %v", ts[i], again[i])
			}
			one, err := ParseAllowedTools(ts[i].String())
			if err != nil || len(one) != 1 || one[0] != ts[i] {
				t.Fatalf("entry %v does not round-trip alone: %v %v", ts[i], one, err)
			}
		}
	})
}

func FuzzCheckCommand(f *testing.F) {
	seeds := []struct{ tools, cmd string }{
		{"Bash(git status:*)", "git status --short"},
		{"Bash(git status:*)", "git commit -m x"},
		{"Bash(python:*)", "python3 scripts/x.py"},
		{"Bash(git:*), Bash(head:*)", "git log | head -5 && git status; (git diff)"},
		{"Bash", "echo $(id)"},
		{"Bash", "eval 'x'"},
		{"Bash", "$X status"},
		{"Bash(echo:*)", "for f in *; do echo \"$f\"; done"},
		{"Bash(cat:*)", "cat <<EOF\n$USER\nEOF\n"},
		{"Bash(jq:*)", "jq . < in.json > out.json 2>&1"},
		{"Bash(echo:*)", "[[ -f x ]] && echo ${X:-y}"},
		{"", "ls"},
		{"Read", "X=1"},
		{"Bash", "f() { ls; }"},
		{"Bash(npm test)", "npm test"},
		{"Bash(echo:*)", "case $x in a) echo;; esac"},
		{"Bash", "if a; then b; elif c; then d; else e; fi"},
		{"Bash(git:*)", "PATH=/tmp git status"},
		{"Bash(git status:*)", "HOME=/workspace; GIT_DIR=x git status"},
		{"Bash(git status:*)", "for HOME in /workspace; do git status; done"},
		{"", "X+=1 git status | (Y=2 jq .)"},
		{"Bash", "echo > /dev/tcp/h/1"},
		{"Bash", "time ! { a | b; } 2>/dev/null"},
	}
	for _, s := range seeds {
		f.Add(s.tools, s.cmd)
	}
	f.Fuzz(func(t *testing.T, toolsText, cmd string) {
		ts, err := ParseAllowedTools(toolsText)
		if err != nil {
			ts = Tools{{Name: "Bash", Spec: "git status:*", HasSpec: true}, {Name: "Bash", Spec: "python:*", HasSpec: true}}
		}
		err = ts.CheckCommand(cmd)
		if err == nil {
			// Adding a bare Bash entry can only allow more.
			if err := append(ts, Tool{Name: "Bash"}).CheckCommand(cmd); err != nil {
				t.Fatalf("allowed with %v but denied with bare Bash added: %v", ts, err)
			}
			if err := (Tools{}).CheckCommand(cmd); err == nil {
				t.Fatalf("%q allowed without any Bash entry", cmd)
			}
			return
		}
		var de *DeniedError
		if !errors.As(err, &de) || !errors.Is(err, ErrDenied) {
			t.Fatalf("error %v is not a *DeniedError wrapping ErrDenied", err)
		}
		if de.Command != cmd || de.Reason == "" || !strings.Contains(cmd, de.Part) {
			t.Fatalf("malformed denial %#v for %q", de, cmd)
		}
		if de.Suggest == "" {
			return
		}
		sts, err := ParseAllowedTools(de.Suggest)
		if err != nil {
			t.Fatalf("suggestion %q does not parse: %v", de.Suggest, err)
		}
		// A part quoted out of a here-document with an empty body does not
		// parse on its own; every other part must be allowed by the suggestion.
		if _, perr := newShellParser().Parse(strings.NewReader(de.Part), ""); perr != nil {
			return
		}
		if err := sts.CheckCommand(de.Part); err != nil {
			t.Fatalf("suggestion %q does not allow %q: %v", de.Suggest, de.Part, err)
		}
	})
}

// FuzzApprove is the unit half of the differential test in integration/:
// whatever the checker allows is free of the input classes bash and the
// parser read differently, lists its programs deterministically, and means
// the same programs when the parser's own re-print of it is checked again.
func FuzzApprove(f *testing.F) {
	for _, seed := range []string{
		"git status", "git status \"$\\\n(id)\"", "cat <<EOF\n$X\nEOF", "echo @(a|b>(id))",
		"echo ${X:-<(id)}", "git status # x \\\nid", "git status\r\nid", "cat <<E'O'F\nx\nEOF",
		"echo a; (git status) | cat && { echo b; }", "if git status; then echo; fi",
		"echo $'\\x41' \"$HOME\" 'x' e\\ f", "case x in y) echo;; esac", "! git status",
	} {
		f.Add(seed)
	}
	ts := Tools{
		{Name: "Bash", Spec: "git status:*", HasSpec: true}, {Name: "Bash", Spec: "echo:*", HasSpec: true},
		{Name: "Bash", Spec: "cat:*", HasSpec: true},
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		a, err := ts.Approve(cmd)
		if err != nil {
			return
		}
		if reason := lexicalReason(cmd); reason != "" {
			t.Fatalf("%q allowed although %s", cmd, reason)
		}
		again, err := ts.Approve(cmd)
		if err != nil || !slices.Equal(a.Programs, again.Programs) {
			t.Fatalf("%q: second check differs: %v %v", cmd, again.Programs, err)
		}
		for _, p := range a.Programs {
			if p != "git" && p != "echo" && p != "cat" {
				t.Fatalf("%q: approved program %q that no entry names", cmd, p)
			}
		}
		file, err := newShellParser().Parse(strings.NewReader(cmd), "")
		if err != nil {
			t.Fatalf("%q allowed but does not parse: %v", cmd, err)
		}
		var buf strings.Builder
		if err := syntax.NewPrinter().Print(&buf, file); err != nil {
			t.Fatalf("print %q: %v", cmd, err)
		}
		if re, err := ts.Approve(buf.String()); err == nil && !slices.Equal(re.Programs, a.Programs) {
			t.Fatalf("%q and its re-print %q approve different programs: %v vs %v", cmd, buf.String(), a.Programs, re.Programs)
		}
	})
}
