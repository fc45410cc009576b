package sandbox

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

func TestFinish(t *testing.T) {
	type want struct {
		exit      int
		success   bool
		signal    string
		timedOut  bool
		oom       bool
		stdout    string
		stderr    string
		output    string
		errSubstr string
		outTrunc  bool
		outBytes  int64
	}
	tests := []struct {
		name   string
		stdout string
		stderr string
		cap    int64
		o      Outcome
		want   want
	}{
		{
			name: "success", stdout: "hi\n",
			o:    Outcome{Report: &frame.Report{ExitCode: 0, StdoutBytes: 3, UserCPUMS: 5, SystemCPUMS: 2, PeakRSSKB: 900}},
			want: want{exit: 0, success: true, stdout: "hi\n", outBytes: 3},
		},
		{
			name: "json output", stdout: `{"sum": 3}` + "\n",
			o:    Outcome{Report: &frame.Report{StdoutBytes: 11}},
			want: want{exit: 0, success: true, stdout: "{\"sum\": 3}\n", output: `{"sum": 3}`, outBytes: 11},
		},
		{
			name: "exit 1", stderr: "boom\n",
			o:    Outcome{Report: &frame.Report{ExitCode: 1}},
			want: want{exit: 1, stderr: "boom\n", errSubstr: "exit status 1"},
		},
		{
			name: "sigsegv",
			o:    Outcome{Report: &frame.Report{ExitCode: -1, Signal: 11}},
			want: want{exit: -11, signal: "SIGSEGV", errSubstr: "killed by signal SIGSEGV"},
		},
		{
			name: "sigkill small rss is not oom",
			o:    Outcome{Report: &frame.Report{ExitCode: -1, Signal: 9, PeakRSSKB: 10 << 10}},
			want: want{exit: -9, signal: "SIGKILL", errSubstr: "SIGKILL"},
		},
		{
			name: "oom from engine",
			o:    Outcome{OOMKilled: true, Report: &frame.Report{ExitCode: -1, Signal: 9}},
			want: want{exit: -9, signal: "SIGKILL", oom: true, errSubstr: "out of memory"},
		},
		{
			name: "oom inferred from rss near the limit",
			o:    Outcome{Report: &frame.Report{ExitCode: -1, Signal: 9, PeakRSSKB: 60 << 10}},
			want: want{exit: -9, signal: "SIGKILL", oom: true, errSubstr: "out of memory"},
		},
		{
			name: "oom of a grandchild still fails the run",
			o:    Outcome{OOMKilled: true, Report: &frame.Report{ExitCode: 0}},
			want: want{exit: 0, oom: true, errSubstr: "out of memory"},
		},
		{
			name: "timeout", stderr: "working",
			o:    Outcome{Report: &frame.Report{ExitCode: -1, Signal: 15, TimedOut: true, PeakRSSKB: 60 << 10}},
			want: want{exit: 124, timedOut: true, stderr: "working\nTimeout: script exceeded 2s limit and was killed\n", errSubstr: "timed out after 2s"},
		},
		{
			name: "backstop",
			o:    Outcome{Backstop: true},
			want: want{exit: 124, timedOut: true, stderr: "Timeout: script exceeded 2s limit and was killed\n", errSubstr: "did not report in time"},
		},
		{
			name: "cancelled",
			o:    Outcome{Cancelled: true},
			want: want{exit: -9, signal: "SIGKILL", errSubstr: "cancelled"},
		},
		{
			name: "init oom killed",
			o:    Outcome{OOMKilled: true},
			want: want{exit: -9, signal: "SIGKILL", oom: true, errSubstr: "out of memory"},
		},
		{
			name: "no report",
			o:    Outcome{InitExit: 2, InitLog: "sandbox-init: bad job"},
			want: want{exit: -1, errSubstr: "status 2) without reporting a result: sandbox-init: bad job"},
		},
		{
			name: "command not found",
			o:    Outcome{Report: &frame.Report{ExitCode: 127, Error: "exec: python9: not found"}},
			want: want{exit: 127, errSubstr: "python9: not found"},
		},
		{
			name: "truncated by init", stdout: "abc", cap: 3,
			o:    Outcome{Report: &frame.Report{StdoutBytes: 5000, StdoutTruncated: true}},
			want: want{exit: 0, success: true, stdout: "abc", outTrunc: true, outBytes: 5000},
		},
		{
			name: "truncated by host", stdout: "abcdef", cap: 3,
			o:    Outcome{Report: &frame.Report{StdoutBytes: 6}},
			want: want{exit: 0, success: true, stdout: "abc", outTrunc: true, outBytes: 6},
		},
		{
			name: "invalid utf-8", stdout: "ok \xff\xfe\n",
			o:    Outcome{Report: &frame.Report{StdoutBytes: 6}},
			want: want{exit: 0, success: true, stdout: "ok \ufffd\ufffd\n", outBytes: 6},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := goldenSpec()
			spec.Limits.Timeout = 2 * time.Second
			spec.Limits.MemoryBytes = 64 << 20
			res := NewResult(&spec)
			limit := tt.cap
			if limit == 0 {
				limit = 1 << 20
			}
			out := &Output{stdout: newCapture(limit), stderr: newCapture(limit)}
			_, _ = out.stdout.Write([]byte(tt.stdout))
			_, _ = out.stderr.Write([]byte(tt.stderr))
			tt.o.Duration = 1500 * time.Millisecond
			out.Finish(res, tt.o)

			w := tt.want
			require.Equal(t, w.exit, res.ExitCode, "exit_code")
			require.Equal(t, w.success, res.Success, "success")
			require.Equal(t, w.signal, res.Signal, "signal")
			require.Equal(t, w.timedOut, res.TimedOut, "timed_out")
			require.Equal(t, w.oom, res.OOMKilled, "oom_killed")
			require.Equal(t, w.stdout, res.Stdout)
			require.Equal(t, w.stderr, res.Stderr)
			require.Equal(t, w.outTrunc, res.StdoutTruncated)
			require.Equal(t, w.outBytes, res.StdoutBytes)
			if w.output == "" {
				require.Nil(t, res.Output)
			} else {
				require.Equal(t, w.output, string(res.Output))
			}
			if w.errSubstr == "" {
				require.Empty(t, res.Error)
			} else {
				require.Contains(t, res.Error, w.errSubstr)
			}
			require.Equal(t, int64(1500), res.DurationMS)
			require.Equal(t, 2.0, res.Limits.TimeoutSec)
			_, err := json.Marshal(res)
			require.NoError(t, err)
		})
	}
}

func TestResultJSONFieldNames(t *testing.T) {
	spec := goldenSpec()
	res := NewResult(&spec)
	(&Output{stdout: newCapture(10), stderr: newCapture(10)}).Finish(res, Outcome{Report: &frame.Report{}})
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"id", "skill", "command", "exit_code", "success", "stdout", "stderr",
		"stdout_truncated", "stderr_truncated", "stdout_bytes", "stderr_bytes", "output", "timed_out",
		"oom_killed", "signal", "duration_ms", "limits", "image", "runtime"} {
		require.Contains(t, m, k)
	}
	require.Nil(t, m["output"])
	require.Equal(t, 30.0, m["limits"].(map[string]any)["timeout_s"])
}

func TestSignalName(t *testing.T) {
	require.Equal(t, "SIGSEGV", signalName(11))
	require.Equal(t, "SIGKILL", signalName(9))
	require.Equal(t, "SIG99", signalName(99))
}
