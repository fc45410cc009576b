package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// maxTextStream bounds how much of each output stream the text part of a
// result repeats. Hosts that show a model only the text still see what
// matters; the structured result holds everything the sandbox captured.
const maxTextStream = 32 << 10

// runOutput keeps the Result fields an agent needs. err is a failure after
// the sandbox started (it was killed from outside, the engine failed, the
// client cancelled).
func runOutput(res *sandbox.Result, err error) *RunOutput {
	out := &RunOutput{
		ID:              res.ID,
		Skill:           res.Skill,
		Outcome:         string(sandboxrun.OutcomeOf(res, err)),
		ExitCode:        res.ExitCode,
		Success:         res.Success && err == nil,
		Stdout:          res.Stdout,
		Stderr:          res.Stderr,
		StdoutTruncated: res.StdoutTruncated,
		StderrTruncated: res.StderrTruncated,
		TimedOut:        res.TimedOut,
		OOMKilled:       res.OOMKilled,
		Signal:          res.Signal,
		DurationMS:      res.DurationMS,
		Error:           res.Error,
		Files:           res.Files,
	}
	if err != nil && out.Error == "" {
		out.Error = err.Error()
	}
	var parsed any
	if len(res.Output) > 0 && json.Unmarshal(res.Output, &parsed) == nil {
		out.Output = parsed
	}
	return out
}

// runText is the short, readable form of a run: how it ended, then its
// output.
func runText(o *RunOutput, res *sandbox.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: exit code %d after %d ms", o.Outcome, o.ExitCode, o.DurationMS)
	if o.Error != "" {
		fmt.Fprintf(&b, " (%s)", o.Error)
	}
	b.WriteString("\n")
	writeStream(&b, "stdout", o.Stdout, o.StdoutTruncated, res.StdoutBytes)
	writeStream(&b, "stderr", o.Stderr, o.StderrTruncated, res.StderrBytes)
	b.WriteString(filesText(o.Files))
	return b.String()
}

// filesText says which workspace files a run changed, so a model knows
// what read_file can fetch.
func filesText(files []sandbox.FileChange) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("--- files changed in /workspace ---\n")
	for _, f := range files {
		if f.Change == sandbox.FileDeleted {
			fmt.Fprintf(&b, "%s: deleted\n", f.Path)
			continue
		}
		fmt.Fprintf(&b, "%s: %s (%d bytes)\n", f.Path, f.Change, f.Size)
	}
	return b.String()
}

func pythonText(p *sandboxrun.PythonResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "returncode %d", p.ReturnCode)
	if p.Error != "" {
		fmt.Fprintf(&b, " (%s)", p.Error)
	}
	b.WriteString("\n")
	writeStream(&b, "stdout", p.Stdout, false, int64(len(p.Stdout)))
	writeStream(&b, "stderr", p.Stderr, false, int64(len(p.Stderr)))
	return b.String()
}

// writeStream adds one output stream under a heading, at most
// maxTextStream bytes of it, saying what was left out and why.
func writeStream(b *strings.Builder, name, text string, capped bool, written int64) {
	if text == "" {
		return
	}
	shown := text
	if len(shown) > maxTextStream {
		cut := maxTextStream
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		shown = shown[:cut]
	}
	fmt.Fprintf(b, "--- %s ---\n%s", name, shown)
	if !strings.HasSuffix(shown, "\n") {
		b.WriteString("\n")
	}
	if len(shown) < len(text) {
		fmt.Fprintf(b, "[%d more bytes of %s in the structured result]\n", len(text)-len(shown), name)
	}
	if capped {
		fmt.Fprintf(b, "[%s reached the output cap: the process wrote %d bytes, %d were kept]\n", name, written, len(text))
	}
}
