package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// execution is one checked run/exec/python call on its way to a sandbox.
type execution struct {
	g  *globals
	s  streams
	f  *execFlags
	sk *skill.Skill
	p  *sandboxrun.Prepared
}

// run starts the sandbox, writes the audit record, and returns the Result.
// Output is relayed live unless --json asked for the whole Result.
func (e *execution) run(ctx context.Context, relay bool) (*sandbox.Result, error) {
	var audit *sandboxrun.AuditLog
	if e.f.auditLog != "" {
		var err error
		if audit, err = sandboxrun.OpenAuditLog(e.f.auditLog); err != nil {
			return nil, withCode(exitEnv, err)
		}
	}
	if relay {
		e.p.Spec.Stdout, e.p.Spec.Stderr = e.s.out, e.s.err
	}
	ociRuntime, err := e.g.pol.CheckRuntime(e.f.ociRuntime)
	if err != nil {
		return nil, withCode(exitRefused, err)
	}
	d, err := sandbox.NewDocker(
		sandbox.WithLogger(e.g.logger),
		sandbox.WithVersion(sandboxrun.Version),
		sandbox.WithDefaultImage(sandboxrun.RunnerImage()),
		sandbox.WithOCIRuntime(ociRuntime),
	)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if e.f.image == "" {
		// A skill with packages runs in its own image, built here (with
		// progress on stderr) when missing, unless --no-build. A malformed
		// dependency declaration is refused before any Docker call.
		image, err := sandboxrun.ImageFor(ctx, e.sk, sandboxrun.BuildOptions{
			Pip:      sandboxrun.PipConfigFromEnv(os.Getenv),
			NoBuild:  e.f.noBuild,
			Progress: e.s.err,
			Lookup:   d.CheckImage,
			Policy:   e.g.pol,
		})
		if err != nil {
			return nil, err
		}
		e.p.Spec.Image = image
	}
	// One cheap call before the rest, so an unreachable daemon is reported
	// as such rather than as the failure of whichever step needed it first.
	// (ImageFor comes earlier: a malformed dependency list is refused
	// before any Docker call.)
	if err := d.Ping(ctx); err != nil {
		return nil, err
	}
	// Containers of owners that died (crash, SIGKILL) are removed first, so
	// a crashed agent host does not leak sandboxes across restarts.
	reaped, err := d.Reap(ctx, sandbox.ReapOptions{OnlyDeadOwners: true})
	switch {
	case errors.Is(err, sandbox.ErrDockerUnavailable):
		// Every later call would fail the same way: say it once, before a
		// container is attempted.
		return nil, err
	case err != nil:
		e.g.logger.Debug("reap at start failed", "err", err)
	case len(reaped) > 0:
		e.g.logger.Info("removed leaked sandboxes", "count", len(reaped))
	}
	res, runErr := d.Run(ctx, e.p.Spec)
	if audit != nil {
		rec := e.p.AuditRecord(res, runErr)
		if err := audit.Append(rec); err != nil {
			e.g.logger.Error("audit log write failed", "err", err, "path", e.f.auditLog)
			if runErr == nil {
				runErr = withCode(exitEnv, err)
			}
		}
	}
	return res, runErr
}

// runChecked is the shared path of run and exec: read the request flags,
// let prepare check them against the skill's policy, run, report. script and
// argv describe the request for the audit log should policy refuse it.
func runChecked(cmd *cobra.Command, g *globals, s streams, f *execFlags, sk *skill.Skill, script string, argv []string,
	prepare func(sandboxrun.Request) (*sandboxrun.Prepared, error)) error {
	req, err := f.request(cmd.InOrStdin(), g.pol)
	if err != nil {
		return err
	}
	p, err := prepare(req)
	if err != nil {
		auditRefusal(g, f, sk, script, argv, req.Args, err)
		return err
	}
	e := &execution{g: g, s: s, f: f, sk: sk, p: p}
	res, err := e.run(cmd.Context(), !f.json)
	if err != nil {
		return e.failed(res, err)
	}
	return e.finish(res)
}

// failed reports a run that did not end normally. One that never started
// is a plain error; one whose sandbox started still gets its Result (with
// error set) under --json, and exit status 125, or 130 when interrupted.
func (e *execution) failed(res *sandbox.Result, err error) error {
	if res == nil || !res.Started {
		return err
	}
	if res.Error == "" {
		res.Error = err.Error()
	}
	if e.f.json {
		if werr := writeJSON(e.s.out, res); werr != nil {
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

// auditRefusal records a policy refusal when an audit log is configured.
// Failing to record it is logged, not fatal: the request is refused anyway.
func auditRefusal(g *globals, f *execFlags, sk *skill.Skill, script string, argv []string, args []byte, err error) {
	if f.auditLog == "" || !errors.Is(err, sandboxrun.ErrRefused) {
		return
	}
	log, oerr := sandboxrun.OpenAuditLog(f.auditLog)
	if oerr == nil {
		rec := sandboxrun.NewRefusalRecord(sk.Manifest.Name, script, argv, args, err)
		rec.PolicyDigest = g.pol.Digest
		oerr = log.Append(rec)
	}
	if oerr != nil {
		g.logger.Error("audit log write failed", "err", oerr, "path", f.auditLog)
	}
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
		fmt.Fprintf(w, "sandboxrun: killed for exceeding the memory limit of %d MiB (max_memory)\n", res.Limits.MemoryBytes>>20)
	case res.Signal != "":
		fmt.Fprintf(w, "sandboxrun: script killed by %s\n", res.Signal)
	}
	if res.StdoutTruncated || res.StderrTruncated {
		fmt.Fprintf(w, "sandboxrun: output truncated at %d bytes per stream (stdout %d bytes, stderr %d bytes written)\n",
			res.Limits.OutputBytes, res.StdoutBytes, res.StderrBytes)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// finish reports a Result the run/exec way and picks the exit status.
func (e *execution) finish(res *sandbox.Result) error {
	if e.f.json {
		if err := writeJSON(e.s.out, res); err != nil {
			return withCode(exitEnv, err)
		}
	} else {
		explain(e.s.err, res)
	}
	if code := exitStatus(res); code != 0 {
		return silentExit(code)
	}
	return nil
}
