package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

const (
	// maxStdinBytes bounds the child's stdin carried in the job; it leaves
	// headroom over sandboxrun's 10 MiB cap on JSON arguments.
	maxStdinBytes = 16 << 20
	// maxJobBytes is maxStdinBytes once base64-encoded, plus 1 MiB for argv,
	// env and the JSON around them.
	maxJobBytes = (maxStdinBytes+2)/3*4 + 1<<20
)

var (
	// errBadJob marks a job init refuses to run.
	errBadJob = errors.New("bad job")
	// errTerminated is returned when init is told to stop before a job
	// arrives.
	errTerminated = errors.New("terminated")
	// errJobTooLarge is what limitReader returns past maxJobBytes, so a
	// hostile or runaway host cannot make init allocate without bound.
	errJobTooLarge = errors.New("job too large")
)

// messages reads what the host writes on stdin: an optional Prelude, then
// one Job, each a JSON value. It stops at the end of the job: the host may
// keep stdin open.
type messages struct {
	dec   *json.Decoder
	src   io.Reader
	limit int64
}

func newMessages(r io.Reader, limit int64) *messages {
	return &messages{dec: json.NewDecoder(&limitReader{r: r, n: limit}), src: r, limit: limit}
}

// rest is what stdin holds after the last message decoded: the side
// channel of a job that has one. Only read it once next has returned.
func (m *messages) rest() io.Reader { return io.MultiReader(m.dec.Buffered(), m.src) }

// next decodes the next value: a prelude (job nil) or a validated job.
func (m *messages) next() (*frame.Job, *frame.Prelude, error) {
	var raw json.RawMessage
	if err := m.dec.Decode(&raw); err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return nil, nil, fmt.Errorf("%w: stdin closed before a job arrived: the host must write one JSON job", errBadJob)
		case errors.Is(err, errJobTooLarge):
			return nil, nil, fmt.Errorf("%w: %w: over %d bytes: keep the child's stdin under %d bytes", errBadJob, errJobTooLarge, m.limit, maxStdinBytes)
		default:
			return nil, nil, fmt.Errorf("%w: decode job: %w: the host must write one JSON job", errBadJob, err)
		}
	}
	if bytes.HasPrefix(raw, []byte(`{"prestart":`)) { // as the host marshals it
		var p frame.Prelude
		if err := strict(raw, &p); err != nil {
			return nil, nil, fmt.Errorf("%w: decode prelude: %w", errBadJob, err)
		}
		return nil, &p, nil
	}
	var job frame.Job
	if err := strict(raw, &job); err != nil {
		return nil, nil, fmt.Errorf("%w: decode job: %w: the host must write one JSON job (an unknown field means host and runner image are different versions: rebuild the image)", errBadJob, err)
	}
	if err := validate(&job); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errBadJob, err)
	}
	if err := checkView(&job); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errBadJob, err)
	}
	return &job, nil, nil
}

// strict decodes one JSON value refusing unknown fields: they mean host and
// runner image disagree on the protocol, and silently ignoring one could
// drop a limit.
func strict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// await reads the next message but gives up when init is told to stop
// first: a warm container can wait a long time for its job and must still
// honour docker stop promptly.
func (m *messages) await(sigs <-chan os.Signal) (*frame.Job, *frame.Prelude, error) {
	type result struct {
		job     *frame.Job
		prelude *frame.Prelude
		err     error
	}
	ch := make(chan result, 1)
	go func() {
		job, p, err := m.next()
		ch <- result{job, p, err}
	}()
	select {
	case res := <-ch:
		return res.job, res.prelude, res.err
	case sig := <-sigs:
		return nil, nil, fmt.Errorf("%w by %v before a job arrived", errTerminated, sig)
	}
}

// readJobLimit reads exactly one job, with no prelude before it.
func readJobLimit(r io.Reader, limit int64) (*frame.Job, error) {
	job, p, err := newMessages(r, limit).next()
	if err == nil && p != nil {
		err = fmt.Errorf("%w: a prelude where a job was expected", errBadJob)
	}
	return job, err
}

func readJob(r io.Reader) (*frame.Job, error) { return readJobLimit(r, maxJobBytes) }

// validate refuses what would otherwise fail obscurely later (a NUL in argv
// makes exec fail with EINVAL) or silently (a zero output cap relays
// nothing).
func validate(job *frame.Job) error {
	if len(job.Argv) == 0 || job.Argv[0] == "" {
		return errors.New("argv is empty: give at least the program to run")
	}
	for _, a := range job.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argv element %q contains a NUL byte: exec cannot pass it", a)
		}
	}
	seen := make(map[string]bool, len(job.Env))
	for _, kv := range job.Env {
		key, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || key == "":
			return fmt.Errorf("env entry %q is not KEY=VALUE", kv)
		case strings.IndexByte(kv, 0) >= 0:
			return fmt.Errorf("env entry for %s contains a NUL byte: exec cannot pass it", key)
		case seen[key]:
			// libc getenv takes the first, Python's os.environ the last:
			// which one the child sees would depend on its language.
			return fmt.Errorf("env sets %s twice: send each variable once", key)
		}
		seen[key] = true
	}
	if strings.IndexByte(job.Dir, 0) >= 0 {
		return fmt.Errorf("cwd %q contains a NUL byte", job.Dir)
	}
	if len(job.Stdin) > maxStdinBytes {
		return fmt.Errorf("stdin is %d bytes: keep it under %d bytes", len(job.Stdin), maxStdinBytes)
	}
	if job.GraceMS < 0 {
		return fmt.Errorf("grace_ms is %d: give 0 (SIGKILL right after SIGTERM) or more", job.GraceMS)
	}
	if job.OutputCap <= 0 {
		return fmt.Errorf("output_cap is %d: give the per-stream byte limit (sandboxrun's default is 10 MiB)", job.OutputCap)
	}
	return nil
}

// millis converts a millisecond count from the job, saturating instead of
// overflowing into a negative duration.
func millis(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// limitReader reads at most n bytes, then fails with errJobTooLarge (unlike
// io.LimitReader's EOF, which the decoder would report as a truncated job).
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errJobTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
