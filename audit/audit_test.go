package audit_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

const secret = "hunter2-s3cr3t-token"

func TestNewAuditRecordNeverHoldsArguments(t *testing.T) {
	args := []byte(`{"password": "` + secret + `"}`)
	spec := sandbox.Spec{
		Skill: "hello", Argv: []string{"python3", "/skills/hello/scripts/echo.py"},
		Stdin: args, Image: "sandboxrun/runner:test",
		Limits: policy.Limits{Timeout: 30 * time.Second, MemoryBytes: 512 << 20, CPUs: 1, Pids: 256},
	}
	sum := sha256.Sum256(args)

	finished := &sandbox.Result{
		ID: "run-from-result", Skill: "hello", ExitCode: -9, Signal: "SIGKILL",
		OOMKilled: true, DurationMS: 42, Image: "img:1", ImageID: "sha256:abc",
		StdoutTruncated: true, Stdout: "echo " + secret, Stderr: secret,
		Output: json.RawMessage(`{"password":"` + secret + `"}`),
	}
	tests := []struct {
		name   string
		res    *sandbox.Result
		runErr error
		check  func(t *testing.T, rec audit.Record)
	}{
		{"finished run", finished, nil, func(t *testing.T, rec audit.Record) {
			require.Equal(t, "run-from-result", rec.RunID)
			require.Equal(t, -9, rec.ExitCode)
			require.Equal(t, "SIGKILL", rec.Signal)
			require.True(t, rec.OOMKilled)
			require.Equal(t, int64(42), rec.DurationMS)
			require.Equal(t, "img:1", rec.Image)
			require.Equal(t, "sha256:abc", rec.ImageID)
			require.True(t, rec.StdoutTruncated)
			require.Empty(t, rec.Error)
		}},
		{"no result", nil, errors.New("create sandbox container: boom"), func(t *testing.T, rec audit.Record) {
			require.Equal(t, "create sandbox container: boom", rec.Error)
			require.Equal(t, spec.Image, rec.Image, "the image asked for")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now().UTC()
			rec := audit.NewRecord(spec, "scripts/echo.py", args, tt.res, tt.runErr)
			require.Equal(t, "hello", rec.Skill)
			require.Equal(t, "scripts/echo.py", rec.Script)
			require.Equal(t, []string{"python3", "/skills/hello/scripts/echo.py"}, rec.Argv)
			require.Equal(t, len(args), rec.ArgsBytes)
			require.Equal(t, hex.EncodeToString(sum[:]), rec.ArgsSHA256)
			require.Equal(t, spec.Limits, rec.Limits)
			require.False(t, rec.Time.Before(before.Add(-time.Second)))
			require.Equal(t, time.UTC, rec.Time.Location())
			tt.check(t, rec)

			line, err := json.Marshal(rec)
			require.NoError(t, err)
			require.NotContains(t, string(line), secret, "neither the arguments nor the output reach the audit log")
			require.NotContains(t, string(line), "password")
			var fields map[string]any
			require.NoError(t, json.Unmarshal(line, &fields))
			for _, k := range []string{"time", "run_id", "skill", "argv", "args_bytes", "args_sha256", "exit_code", "signal", "timed_out", "oom_killed", "duration_ms", "limits", "image", "stdout_truncated", "stderr_truncated"} {
				require.Contains(t, fields, k)
			}
		})
	}

	t.Run("empty arguments", func(t *testing.T) {
		rec := audit.NewRecord(sandbox.Spec{Skill: "x", RunID: "r1"}, "", nil, nil, nil)
		require.Equal(t, 0, rec.ArgsBytes)
		require.Equal(t, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", rec.ArgsSHA256)
		require.Equal(t, "r1", rec.RunID)
		require.Empty(t, rec.Error)
	})
}

func TestAuditLogConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(path)
	require.NoError(t, err)

	const writers, perWriter = 16, 25
	// A long argv makes each line large enough that interleaved writes
	// would show up as broken JSON.
	long := strings.Repeat("a", 8<<10)
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				spec := sandbox.Spec{RunID: fmt.Sprintf("w%d-%d", w, i), Skill: "hello", Argv: []string{"python3", long}}
				errs <- log.Append(audit.NewRecord(spec, "scripts/x.py", []byte(`{}`), nil, nil))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the audit log is private to its owner")

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	seen := map[string]bool{}
	for sc.Scan() {
		var rec audit.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "line %d", len(seen)+1)
		require.False(t, seen[rec.RunID], "duplicate %s", rec.RunID)
		seen[rec.RunID] = true
	}
	require.NoError(t, sc.Err())
	require.Len(t, seen, writers*perWriter)
}

func TestAuditLogAppendsToExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"run_id":"old"}`+"\n"), 0o600))
	for _, id := range []string{"a", "b"} {
		log, err := audit.Open(path)
		require.NoError(t, err)
		require.NoError(t, log.Append(audit.NewRecord(sandbox.Spec{RunID: id}, "", nil, nil, nil)))
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 3)
	require.Contains(t, lines[0], `"old"`)
	require.Contains(t, lines[2], `"run_id":"b"`)
}

func TestOpenAuditLogErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
	}{
		{"a directory", dir},
		{"missing parent", filepath.Join(dir, "no", "such", "audit.jsonl")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, err := audit.Open(tt.path)
			require.Nil(t, log)
			require.ErrorContains(t, err, "open audit log")
		})
	}
}
