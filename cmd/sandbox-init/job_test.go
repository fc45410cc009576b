package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

func validJob() frame.Job {
	return frame.Job{
		Argv: []string{"python3", "-c", "print(1)"}, Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"},
		Dir: "/", Stdin: []byte(`{"a":1}`), TimeoutMS: 1000, GraceMS: 100, OutputCap: 1 << 20,
	}
}

func TestReadJob(t *testing.T) {
	good, err := json.Marshal(validJob())
	require.NoError(t, err)

	t.Run("valid at exactly the limit", func(t *testing.T) {
		job, err := readJobLimit(bytes.NewReader(good), int64(len(good)))
		require.NoError(t, err)
		require.Equal(t, validJob(), *job)
	})
	t.Run("valid", func(t *testing.T) {
		job, err := readJob(bytes.NewReader(good))
		require.NoError(t, err)
		require.Equal(t, validJob(), *job)
	})
	t.Run("does not wait for end of input", func(t *testing.T) {
		// A reader that fails after the job proves init stops reading at
		// the end of the JSON value (the host may keep stdin open).
		r := io.MultiReader(bytes.NewReader(good), failingReader{})
		job, err := readJob(r)
		require.NoError(t, err)
		require.Equal(t, validJob().Argv, job.Argv)
	})

	tests := []struct {
		name  string
		input string
		is    error
		says  string
	}{
		{"empty stdin", "", errBadJob, "stdin closed before a job arrived"},
		{"not json", "hello", errBadJob, "decode job"},
		{"truncated", `{"argv":["x"]`, errBadJob, "unexpected EOF"},
		{"unknown field", `{"argv":["x"],"output_cap":1,"privileged":true}`, errBadJob, "unknown field"},
		{"wrong type", `{"argv":"x"}`, errBadJob, "decode job"},
		{"invalid after decode", `{"argv":[],"output_cap":1}`, errBadJob, "argv is empty"},
		{"too large", `{"argv":["x"],"stdin":"` + strings.Repeat("A", 4096) + `"}`, errJobTooLarge, "over 4000 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The real limit is exercised end to end in TestBadJobInput.
			job, err := readJobLimit(strings.NewReader(tc.input), 4000)
			require.ErrorIs(t, err, tc.is)
			require.ErrorIs(t, err, errBadJob)
			require.ErrorContains(t, err, tc.says)
			require.Nil(t, job)
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*frame.Job)
		says   string // empty: valid
	}{
		{"valid", func(*frame.Job) {}, ""},
		{"no timeout is allowed", func(j *frame.Job) { j.TimeoutMS = 0 }, ""},
		{"zero grace is allowed", func(j *frame.Job) { j.GraceMS = 0 }, ""},
		{"empty env is allowed", func(j *frame.Job) { j.Env = nil }, ""},
		{"empty cwd is allowed", func(j *frame.Job) { j.Dir = "" }, ""},
		{"no argv", func(j *frame.Job) { j.Argv = nil }, "argv is empty"},
		{"empty program", func(j *frame.Job) { j.Argv = []string{""} }, "argv is empty"},
		{"NUL in argv", func(j *frame.Job) { j.Argv = append(j.Argv, "a\x00b") }, "NUL byte"},
		{"env without =", func(j *frame.Job) { j.Env = append(j.Env, "JUSTKEY") }, "not KEY=VALUE"},
		{"env empty key", func(j *frame.Job) { j.Env = append(j.Env, "=v") }, "not KEY=VALUE"},
		{"env NUL", func(j *frame.Job) { j.Env = append(j.Env, "K=a\x00b") }, "NUL byte"},
		{"env twice", func(j *frame.Job) { j.Env = append(j.Env, "PATH=/x") }, "sets PATH twice"},
		{"NUL in cwd", func(j *frame.Job) { j.Dir = "/a\x00" }, "NUL byte"},
		{"stdin too large", func(j *frame.Job) { j.Stdin = make([]byte, maxStdinBytes+1) }, "keep it under"},
		{"negative grace", func(j *frame.Job) { j.GraceMS = -1 }, "grace_ms is -1"},
		{"zero output cap", func(j *frame.Job) { j.OutputCap = 0 }, "output_cap is 0"},
		{"negative output cap", func(j *frame.Job) { j.OutputCap = -5 }, "output_cap is -5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := validJob()
			tc.modify(&job)
			err := validate(&job)
			if tc.says == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.says)
		})
	}
}

func TestAwaitJobStopsOnSignal(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })

	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGTERM
	job, pre, err := awaitJob(newMessages(r, maxJobBytes), sigs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorIs(t, err, errTerminated)
	require.ErrorContains(t, err, "before a job arrived")
	require.Nil(t, job)
	require.Nil(t, pre)
}

func TestMillisSaturates(t *testing.T) {
	require.Equal(t, 1500*time.Millisecond, millis(1500))
	require.Equal(t, time.Duration(math.MaxInt64), millis(math.MaxInt64))
	require.Positive(t, millis(math.MaxInt64/1000))
}
