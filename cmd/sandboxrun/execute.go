package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// service builds the Service one run, exec or python call goes through: the
// skills root, the operator policy, the engine runtime and the audit log
// from the flags. A local user may name a skill by its folder's path.
func (g *globals) service(s streams, f *execFlags) (*sandboxrun.Service, error) {
	log, err := openAudit(f.auditLog)
	if err != nil {
		return nil, err
	}
	cfg := g.serviceConfig()
	cfg.OCIRuntime = f.ociRuntime
	cfg.Pip = pipConfigFromEnv(os.Getenv)
	cfg.Audit = log
	cfg.Progress = s.err
	return sandboxrun.New(cfg)
}

// openAudit opens the audit log --audit-log names, for every command that
// takes the flag; "" keeps none.
func openAudit(path string) (*audit.Log, error) {
	if path == "" {
		return nil, nil
	}
	log, err := audit.Open(path)
	if err != nil {
		return nil, withCode(exitEnv, err)
	}
	return log, nil
}

// serviceCall is one run/exec/python operation on a Service.
type serviceCall func(ctx context.Context, svc *sandboxrun.Service, req sandboxrun.Request) (*sandbox.Result, error)

// runThrough reads the request flags (--grant-tools for the skill ref
// names), runs call on a fresh Service and
// returns what it returned. Output is relayed live unless --json asked for
// the whole Result.
func runThrough(ctx context.Context, g *globals, s streams, f *execFlags, ref string, stdin io.Reader, call serviceCall) (*sandbox.Result, error) {
	if err := f.grant(g, ref); err != nil {
		return nil, err
	}
	req, err := f.request(stdin, g.pol)
	if err != nil {
		return nil, err
	}
	if !f.json {
		req.Stdout, req.Stderr = s.out, s.err
	}
	svc, err := g.service(s, f)
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	return call(ctx, svc, req)
}

// report ends run and exec: the Result (under --json), the explanation of an
// abnormal end (otherwise), and the exit status.
func report(s streams, f *execFlags, res *sandbox.Result, err error) error {
	if err != nil {
		return failed(s, f, res, err)
	}
	if f.json {
		if err := writeJSON(s.out, res); err != nil {
			return withCode(exitEnv, err)
		}
	} else {
		explain(s.err, res)
	}
	if code := exitStatus(res); code != 0 {
		return silentExit(code)
	}
	return nil
}

// failed reports a run that did not end normally. One that never started
// is a plain error; one whose sandbox started still gets its Result (with
// error set) under --json, and exit status 125, or 130 when interrupted.
func failed(s streams, f *execFlags, res *sandbox.Result, err error) error {
	if res == nil || !res.Started {
		return err
	}
	if res.Error == "" {
		res.Error = err.Error()
	}
	if f.json {
		if werr := writeJSON(s.out, res); werr != nil {
			return withCode(exitEnv, werr)
		}
	}
	return midRunFailure(err)
}

// midRunFailure is the exit for a sandbox that started and then failed:
// 125, or 130 when interrupted.
func midRunFailure(err error) error {
	code := exitSandboxFailed
	if errors.Is(err, context.Canceled) {
		code = 130
	}
	return withCode(code, fmt.Errorf("the sandbox failed mid-run: %w", err))
}

// exitStatus is the CLI status for a finished execution: the script's own,
// 124 on timeout, 128+N on signal N.
func exitStatus(res *sandbox.Result) int {
	switch {
	case res.TimedOut:
		return exitTimeout
	case res.ExitCode < 0:
		return 128 - res.ExitCode
	default:
		return res.ExitCode
	}
}

// explain tells a person why a relayed run ended abnormally; with --json the
// Result says it.
func explain(w io.Writer, res *sandbox.Result) {
	switch {
	case res.TimedOut:
		fmt.Fprintf(w, "sandboxrun: timed out after %gs (limit from --timeout or the skill's max_execution_time)\n", res.Limits.TimeoutSec)
	case res.OOMKilled:
		fmt.Fprintf(w, "sandboxrun: killed for exceeding the memory limit of %s (max_memory)\n", size.Format(res.Limits.MemoryBytes))
	case res.Signal != "":
		fmt.Fprintf(w, "sandboxrun: script killed by %s\n", res.Signal)
	}
	if res.StdoutTruncated || res.StderrTruncated {
		fmt.Fprintf(w, "sandboxrun: output truncated at %d bytes per stream (stdout %d bytes, stderr %d bytes written)\n",
			res.Limits.OutputBytes, res.StdoutBytes, res.StderrBytes)
	}
	explainEgress(w, res)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// pipConfigFromEnv reads pip's own variables: PIP_INDEX_URL, PIP_FIND_LINKS
// and PIP_TRUSTED_HOST (the last two space-separated lists). They are used
// while building only and never reach the image.
func pipConfigFromEnv(getenv func(string) string) images.PipConfig {
	return images.PipConfig{
		IndexURL:     strings.TrimSpace(getenv("PIP_INDEX_URL")),
		FindLinks:    strings.Fields(getenv("PIP_FIND_LINKS")),
		TrustedHosts: strings.Fields(getenv("PIP_TRUSTED_HOST")),
	}
}
