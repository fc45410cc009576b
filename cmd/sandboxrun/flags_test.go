package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestParseMiB(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"", 0, false},
		{"256", 256, false},
		{" 512 ", 512, false},
		{"256m", 256, false},
		{"256M", 256, false},
		{"256mi", 256, false},
		{"256MiB", 256, false},
		{"1g", 1024, false},
		{"2G", 2048, false},
		{"1Gi", 1024, false},
		{"1gib", 1024, false},
		{"1073741824", 1 << 30, false},
		// The size grammar shared with policy and frontmatter (package
		// size) reads these too; each is a whole number of MiB.
		{"1.5g", 1536, false},
		{"1t", 1 << 20, false},
		{"256 m", 256, false},

		{"abc", 0, true},
		{"0", 0, true},
		{"0m", 0, true},
		{"-1", 0, true},
		{"-1g", 0, true},
		{"256k", 0, true}, // not a whole number of MiB
		{"1.5", 0, true},
		{"m", 0, true},
		{"1073741825", 0, true},
		{"99999999999999999999", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseMiB(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				require.Equal(t, exitRefused, codeOf(err))
				require.Contains(t, err.Error(), fmt.Sprintf("--memory %q", tt.in))
				require.Contains(t, err.Error(), "256m or 1g", "the message shows the accepted forms")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    map[string]string
		wantErr string
	}{
		{"none", nil, nil, ""},
		{"pairs", []string{"A=1", "B_2=two words"}, map[string]string{"A": "1", "B_2": "two words"}, ""},
		{"empty value", []string{"A="}, map[string]string{"A": ""}, ""},
		{"value with =", []string{"URL=a=b=c"}, map[string]string{"URL": "a=b=c"}, ""},
		{"last wins", []string{"A=1", "A=2"}, map[string]string{"A": "2"}, ""},
		{"no =", []string{"A=1", "FOO"}, nil, `--env "FOO": expected K=V`},
		{"empty name", []string{"=x"}, nil, `--env "=x": expected K=V`},
		{"empty", []string{""}, nil, `--env "": expected K=V`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEnv(tt.in)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Equal(t, exitRefused, codeOf(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestReadArgs(t *testing.T) {
	tests := []struct {
		name    string
		flags   execFlags
		stdin   string
		want    string
		wantErr string
	}{
		{"none", execFlags{}, "ignored", "", ""},
		{"inline", execFlags{args: `{"a":1}`}, "ignored", `{"a":1}`, ""},
		{"stdin", execFlags{args: "-"}, `{"b":2}`, `{"b":2}`, ""},
		{"both", execFlags{args: "{}", argsFile: "x.json"}, "", "", "exclusive"},
		{"stdin bounded", execFlags{args: "-"}, strings.Repeat("x", policy.MaxArgsBytes+10), strings.Repeat("x", policy.MaxArgsBytes+1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.flags.readArgs(strings.NewReader(tt.stdin))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Equal(t, exitRefused, codeOf(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name string
		res  sandbox.Result
		want int
	}{
		{"success", sandbox.Result{ExitCode: 0, Success: true}, 0},
		{"exit 1", sandbox.Result{ExitCode: 1}, 1},
		{"exit 3 passes through", sandbox.Result{ExitCode: 3}, 3},
		{"exit 255", sandbox.Result{ExitCode: 255}, 255},
		{"timeout", sandbox.Result{ExitCode: 124, TimedOut: true}, 124},
		{"timeout killed by signal", sandbox.Result{ExitCode: -9, Signal: "SIGKILL", TimedOut: true}, 124},
		{"SIGKILL", sandbox.Result{ExitCode: -9, Signal: "SIGKILL"}, 137},
		{"SIGSEGV", sandbox.Result{ExitCode: -11, Signal: "SIGSEGV"}, 139},
		{"SIGTERM", sandbox.Result{ExitCode: -15, Signal: "SIGTERM"}, 143},
		{"OOM kill", sandbox.Result{ExitCode: -9, Signal: "SIGKILL", OOMKilled: true}, 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, exitStatus(&tt.res))
		})
	}
}

func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exitOK},
		{"explicit code", withCode(exitEnv, errors.New("x")), exitEnv},
		{"silent", silentExit(exitTimeout), exitTimeout},
		{"wrapped explicit code", fmt.Errorf("outer: %w", silentExit(137)), 137},
		{"usage", usageError("bad"), exitRefused},
		{"refused by the library", fmt.Errorf("prepare: %w", sandboxrun.ErrRefused), exitRefused},
		{"invalid spec", fmt.Errorf("run: %w", sandbox.ErrInvalidSpec), exitRefused},
		{"docker unreachable", fmt.Errorf("create: %w", sandbox.ErrUnavailable), exitEnv},
		{"image missing", fmt.Errorf("run: %w", sandbox.ErrImageNotFound), exitEnv},
		{"workspace not shareable", sandbox.ErrWorkspace, exitEnv},
		{"interrupted", fmt.Errorf("run: %w", context.Canceled), 130},
		{"anything else", errors.New("boom"), exitEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, codeOf(tt.err))
		})
	}
}

func TestExplain(t *testing.T) {
	limits := policy.Limits{TimeoutSec: 10, MemoryBytes: 128 << 20, OutputBytes: 1024}
	tests := []struct {
		name string
		res  sandbox.Result
		want []string
	}{
		{"clean exit says nothing", sandbox.Result{ExitCode: 1, Limits: limits}, nil},
		{"timeout", sandbox.Result{ExitCode: 124, TimedOut: true, Limits: limits}, []string{"timed out after 10s", "max_execution_time"}},
		{"oom", sandbox.Result{ExitCode: -9, Signal: "SIGKILL", OOMKilled: true, Limits: limits}, []string{"128MiB", "max_memory"}},
		{"signal", sandbox.Result{ExitCode: -11, Signal: "SIGSEGV", Limits: limits}, []string{"killed by SIGSEGV"}},
		{"truncated", sandbox.Result{StdoutTruncated: true, StdoutBytes: 5000, Limits: limits}, []string{"truncated at 1024 bytes", "stdout 5000 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			explain(&b, &tt.res)
			if tt.want == nil {
				require.Empty(t, b.String())
			}
			for _, w := range tt.want {
				require.Contains(t, b.String(), w)
			}
		})
	}
}

// TestExecFlagsRequest: every request flag reaches the library request.
func TestExecFlagsRequest(t *testing.T) {
	f := &execFlags{
		args: `{"a": 1}`, timeout: "7", memory: "1g", cpus: 0.5, workspace: "/w",
		env: []string{"K=V"}, image: "img:1", noBuild: true,
		cwd: "skill", argv: []string{"in.csv", "--flag"}, allowDomains: []string{"api.example.com"},
	}
	pol := policy.BuiltinPolicy()
	req, err := f.request(strings.NewReader(""), pol)
	require.NoError(t, err)
	require.Equal(t, sandboxrun.Request{
		Args: []byte(`{"a": 1}`), Workspace: "/w", Env: map[string]string{"K": "V"},
		Timeout: 7 * time.Second, MemoryMiB: 1024, CPUs: 0.5, Image: "img:1", NoBuild: true, Policy: pol,
		WorkDir: policy.WorkDirSkill, Argv: []string{"in.csv", "--flag"}, AllowDomains: []string{"api.example.com"},
	}, req)
}

// --memory means what an operator policy's size means, in MiB, wherever
// the policy's reading is a whole number of MiB (skill's
// FuzzMemoryGrammarsAgree ties the frontmatter to the same grammar).
func TestMemoryFlagAgreesWithPolicy(t *testing.T) {
	for _, in := range []string{"256m", "256Mi", "2GiB", "1.5g", "64MB", "1t", "3 g"} {
		bytes, err := policy.ParseSize(in)
		require.NoError(t, err, in)
		mib, err := parseMiB(in)
		require.NoError(t, err, in)
		require.Equal(t, bytes, mib<<20, in)
	}
}
