package sandboxrun_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestNewPythonResult(t *testing.T) {
	limits := policy.Limits{Timeout: 10 * time.Second, TimeoutSec: 10, MemoryBytes: 128 << 20}
	tests := []struct {
		name      string
		res       sandbox.Result
		wantCode  int
		wantTimed bool
		wantErr   string
	}{
		{"success", sandbox.Result{Skill: "hello", Stdout: "1\n", ExitCode: 0, Success: true, Limits: limits}, 0, false, ""},
		{"failure", sandbox.Result{Skill: "hello", Stderr: "Traceback", ExitCode: 1, Limits: limits}, 1, false, ""},
		{"timeout", sandbox.Result{Skill: "hello", ExitCode: 124, TimedOut: true, Limits: limits}, -1, true, "timed out after 10 seconds"},
		{"timeout overrides a runner error", sandbox.Result{Skill: "hello", ExitCode: 124, TimedOut: true, Error: "x", Limits: limits}, -1, true, "timed out after 10 seconds"},
		{"oom", sandbox.Result{Skill: "hello", ExitCode: -9, Signal: "SIGKILL", OOMKilled: true, Limits: limits}, -9, false, "memory limit of 128 MiB"},
		{"signal", sandbox.Result{Skill: "hello", ExitCode: -11, Signal: "SIGSEGV", Limits: limits}, -11, false, "killed by SIGSEGV"},
		{"runner error kept", sandbox.Result{Skill: "hello", ExitCode: -9, Signal: "SIGKILL", Error: "backstop", Limits: limits}, -9, false, "backstop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := sandboxrun.NewPythonResult("hello", &tt.res, nil)
			require.Equal(t, "hello", pr.SkillName)
			require.Equal(t, tt.res.Stdout, pr.Stdout)
			require.Equal(t, tt.res.Stderr, pr.Stderr)
			require.Equal(t, tt.wantCode, pr.ReturnCode)
			require.Equal(t, tt.wantTimed, pr.TimedOut)
			if tt.wantErr == "" {
				require.Empty(t, pr.Error)
			} else {
				require.Contains(t, pr.Error, tt.wantErr)
			}
		})
	}
}

func TestNewPythonResultWithoutARun(t *testing.T) {
	refusal := fmt.Errorf("check: %w", sandboxrun.ErrRefused)
	pr := sandboxrun.NewPythonResult("hello", nil, refusal)
	require.Equal(t, sandboxrun.PythonResult{SkillName: "hello", ReturnCode: -1, Error: refusal.Error()}, pr)

	midRun := &sandbox.Result{Skill: "hello", Started: true, Stdout: "so far", ExitCode: -1}
	pr = sandboxrun.NewPythonResult("hello", midRun, errors.New("engine died"))
	require.Equal(t, "so far", pr.Stdout, "what ran before the failure is kept")
	require.Equal(t, -1, pr.ReturnCode)
	require.Equal(t, "engine died", pr.Error)
}

func TestOutcomeOf(t *testing.T) {
	tests := []struct {
		name string
		res  *sandbox.Result
		err  error
		want sandboxrun.Outcome
	}{
		{"success", &sandbox.Result{Success: true}, nil, sandboxrun.OutcomeSuccess},
		{"exit 1", &sandbox.Result{ExitCode: 1}, nil, sandboxrun.OutcomeFailure},
		{"signal", &sandbox.Result{ExitCode: -11, Signal: "SIGSEGV"}, nil, sandboxrun.OutcomeFailure},
		{"timeout", &sandbox.Result{ExitCode: 124, TimedOut: true}, nil, sandboxrun.OutcomeTimeout},
		{"oom", &sandbox.Result{ExitCode: -9, OOMKilled: true}, nil, sandboxrun.OutcomeOOM},
		{"refused", nil, fmt.Errorf("x: %w", sandboxrun.ErrRefused), sandboxrun.OutcomeRefused},
		{"invalid spec", nil, sandbox.ErrInvalidSpec, sandboxrun.OutcomeRefused},
		{"canceled mid-run", &sandbox.Result{Started: true}, context.Canceled, sandboxrun.OutcomeCanceled},
		{"engine down", nil, sandbox.ErrUnavailable, sandboxrun.OutcomeError},
		{"failed mid-run", &sandbox.Result{Started: true, Success: true}, errors.New("boom"), sandboxrun.OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, sandboxrun.OutcomeOf(tt.res, tt.err))
		})
	}
}
