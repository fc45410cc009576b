package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox/frame"
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

// awaitJob reads the job but gives up when init is told to stop first: a
// warm container can wait a long time for its job and must still honour
// docker stop promptly.
func awaitJob(r io.Reader, sigs <-chan os.Signal) (*frame.Job, error) {
	type result struct {
		job *frame.Job
		err error
	}
	ch := make(chan result, 1)
	go func() {
		job, err := readJob(r)
		ch <- result{job, err}
	}()
	select {
	case res := <-ch:
		return res.job, res.err
	case sig := <-sigs:
		return nil, fmt.Errorf("%w by %v before a job arrived", errTerminated, sig)
	}
}

// readJob decodes and validates exactly one JSON job. It does not wait for
// end of input: the host may keep stdin open.
func readJob(r io.Reader) (*frame.Job, error) {
	return readJobLimit(r, maxJobBytes)
}

func readJobLimit(r io.Reader, limit int64) (*frame.Job, error) {
	dec := json.NewDecoder(&limitReader{r: r, n: limit})
	// Unknown fields mean host and runner image disagree on the protocol;
	// silently ignoring one could drop a limit.
	dec.DisallowUnknownFields()
	var job frame.Job
	if err := dec.Decode(&job); err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("%w: stdin closed before a job arrived: the host must write one JSON job", errBadJob)
		case errors.Is(err, errJobTooLarge):
			return nil, fmt.Errorf("%w: %w: over %d bytes: keep the child's stdin under %d bytes", errBadJob, errJobTooLarge, limit, maxStdinBytes)
		default:
			return nil, fmt.Errorf("%w: decode job: %w: the host must write one JSON job (an unknown field means host and runner image are different versions: rebuild the image)", errBadJob, err)
		}
	}
	if err := validate(&job); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadJob, err)
	}
	return &job, nil
}

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
