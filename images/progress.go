package images

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// reporter writes the progress lines a person watching a build follows:
// each step with the time elapsed since the build started, and the output of
// the commands it runs, indented under it.
type reporter struct {
	mu    sync.Mutex // commands write stdout and stderr from two goroutines
	w     io.Writer
	start time.Time
	now   func() time.Time
	// atLineStart tracks whether the next byte of command output begins a
	// line and so needs the indent.
	atLineStart bool
}

func newReporter(w io.Writer, now func() time.Time) *reporter {
	if w == nil {
		w = io.Discard
	}
	if now == nil {
		now = time.Now
	}
	return &reporter{w: w, start: now(), now: now, atLineStart: true}
}

// stepf prints one progress line prefixed by the elapsed time.
func (r *reporter) stepf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.atLineStart {
		// A command left a partial line; do not glue the step onto it.
		_, _ = io.WriteString(r.w, "\n")
		r.atLineStart = true
	}
	_, _ = fmt.Fprintf(r.w, "[%s] %s\n", formatElapsed(r.now().Sub(r.start)), fmt.Sprintf(format, args...))
}

// since formats the time elapsed since t, for "done in ..." messages.
func (r *reporter) since(t time.Time) string { return formatDuration(r.now().Sub(t)) }

// output returns the writer commands stream their output to.
func (r *reporter) output() io.Writer { return commandOutput{r} }

type commandOutput struct{ r *reporter }

const commandIndent = "      "

func (c commandOutput) Write(p []byte) (int, error) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var out bytes.Buffer
	for rest := p; len(rest) > 0; {
		if r.atLineStart {
			out.WriteString(commandIndent)
			r.atLineStart = false
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			out.Write(rest)
			break
		}
		out.Write(rest[:i+1])
		rest = rest[i+1:]
		r.atLineStart = true
	}
	if _, err := r.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// formatElapsed gives a fixed-width stamp so progress lines align.
func formatElapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%5.1fs", d.Seconds())
	}
	return fmt.Sprintf("%2dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
}

func formatDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
