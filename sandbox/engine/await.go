package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// awaited is what the engine saw of one run in its sandbox.
type awaited struct {
	sandbox.Outcome
	// answered: the report came; the sandbox ends on its own, and its
	// end and removal are left to the background.
	answered bool
	// ended: Box.End was called (no report, or one without the OOM
	// count).
	ended bool
	// decoded closes when frame decoding has ended.
	decoded chan struct{}
	files   []sandbox.FileChange
	err     error
}

// await sends the job and decodes frames until the report (or the end of
// the stream), the backstop or ctx. With a writable workspace, init holds
// the sandbox up after its report until its stdin closes, while the
// changes are handed back. Without a report, the sandbox is killed and
// waited for, and its end says why.
func (e *Engine) await(ctx context.Context, box Box, run *Run, log *slog.Logger) (a awaited) {
	a = awaited{Outcome: sandbox.Outcome{InitExit: -1}, decoded: make(chan struct{})}
	job, err := json.Marshal(run.Job)
	if err != nil {
		close(a.decoded)
		a.err = fmt.Errorf("encode job: %w", err)
		return a
	}
	var (
		heardOnce sync.Once
		heard     = make(chan struct{})
		heardRep  *frame.Report // set before heard closes on a report
		report    *frame.Report // read once decoded closed
		decodeErr error
	)
	hear := func() { heardOnce.Do(func() { close(heard) }) }
	go func() {
		defer close(a.decoded)
		report, decodeErr = run.Output.Decode(box.Frames(), func(r *frame.Report) { heardRep = r; hear() })
		hear()
	}()
	in := box.Input()
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { _ = in.Close() }) }
	defer release()
	// The writer may outlive this call (the run tried again meanwhile
	// changes run.Spec): it reads nothing of the run.
	held := run.Held()
	go func() {
		// A sandbox that never reads its stdin must not block the host:
		// its end closes the stream.
		if _, err := in.Write(job); err == nil && !held {
			release()
		}
	}()
	trace.SpanFromContext(ctx).AddEvent("job sent")
	// Samples of the sandbox's use go out while the script runs, never
	// after the report: the watch stops before await returns.
	usage := watchUsage(ctx, box, run.Spec, log)
	defer func() { a.Peaks = usage.stop() }()
	// While the script runs: the Result names the image by id.
	a.ImageID = box.ImageID(ctx)

	backstop := time.NewTimer(sandbox.EffectiveTimeout(run.Spec.Limits) + e.initGrace + e.backstopMargin)
	defer backstop.Stop()
	var killed, handed error
	var rep *frame.Report
	select {
	case <-heard:
		rep = heardRep
		usage.stop()
		// Only a script that ran to its report changes the workspace.
		if run.Held() && rep != nil && rep.Error == "" {
			a.files, handed = box.HandBack(ctx, run)
		}
		release()
		if rep == nil {
			<-a.decoded
			if _, ok := box.(Recoverer); decodeErr != nil && !ok {
				// A broken stream: init may still be running, unheard.
				killed = box.Kill(ctx)
			}
		}
	case <-backstop.C:
		a.Backstop = true
		log.Warn("sandbox-init did not report in time; killing the sandbox")
		killed = box.Kill(ctx)
		drain(a.decoded)
	case <-ctx.Done():
		a.Cancelled = true
		log.Debug("context ended; killing the sandbox", "cause", context.Cause(ctx))
		killed = box.Kill(ctx)
		drain(a.decoded)
	}
	if rep != nil {
		// Every frame of the script's output precedes the report: the
		// Result is complete.
		a.answered, a.Report = true, rep
		a.err = handed
		if rep.OOMKills == nil {
			// An init too old to count OOM kills: the sandbox's end says
			// whether the memory cgroup killed something.
			var end Ending
			var eerr error
			if r, ok := box.(Reported); ok {
				end, eerr = r.EndReported(ctx)
			} else {
				end, eerr = box.End(ctx)
			}
			a.ended = true
			a.fromEnd(end)
			a.err = errors.Join(handed, eerr)
		}
		return a
	}
	var eerr error
	if a.Cancelled {
		// The caller is gone: how the sandbox ended is of no use to it.
		eerr = e.end(ctx, box)
	} else {
		var end Ending
		end, eerr = box.End(ctx)
		a.fromEnd(end)
	}
	a.ended = true
	<-a.decoded // End (or Settle) closed the stream
	a.Report, a.InitLog = report, box.InitLog().FirstLine()
	if r, ok := box.(Recoverer); ok && report == nil && !a.Cancelled && !a.Backstop {
		if out, rep := e.recover(ctx, r, run, log); rep != nil {
			run.Output, a.Report, decodeErr = out, rep, nil
		}
	}
	killed = errors.Join(killed, eerr)
	switch {
	case a.Cancelled:
		a.err = errors.Join(fmt.Errorf("run cancelled: %w", ctx.Err()), killed)
	case a.Report == nil && !a.Backstop && !a.OOMKilled:
		log.Warn("sandbox-init ended without a report", "exit_code", a.InitExit, "init_stderr", box.InitLog().String())
		a.err = errors.Join(sandbox.NoReportError(a.InitExit, a.InitLog, decodeErr), killed)
	default:
		a.err = errors.Join(killed, handed)
	}
	return a
}

// drainWait bounds how long a killed sandbox's stream is read on before
// the box closes it: the output written before the kill is still in
// flight, and a killed sandbox's stream ends on its own in milliseconds.
const drainWait = time.Second

// drain waits for the frames already sent to be decoded: the stream ends
// when the killed sandbox does, or drainWait passes.
func drain(decoded <-chan struct{}) {
	t := time.NewTimer(drainWait)
	defer t.Stop()
	select {
	case <-decoded:
	case <-t.C:
	}
}

// fromEnd takes what the sandbox's end says.
func (a *awaited) fromEnd(end Ending) {
	a.InitExit, a.OOMKilled = end.InitExit, end.OOMKilled
	if end.ImageID != "" {
		a.ImageID = end.ImageID
	}
}

// recover decodes the frames of a run whose stream lost its report from
// the box's second copy, into an Output without the run's live writers
// (they had their chance). It returns the report, or nil when the copy
// does not decode cleanly to one.
func (e *Engine) recover(ctx context.Context, r Recoverer, run *Run, log *slog.Logger) (*sandbox.Output, *frame.Report) {
	rc, err := r.Recover(context.WithoutCancel(ctx))
	if err != nil {
		log.Debug("read the second copy of the frames", "error", err)
		return nil, nil
	}
	defer func() { _ = rc.Close() }()
	quiet := *run.Spec
	quiet.Stdout, quiet.Stderr = nil, nil
	out := sandbox.NewOutput(&quiet)
	rep, err := out.Decode(rc, nil)
	if err != nil || rep == nil {
		log.Debug("the second copy of the frames holds no report", "error", err)
		return nil, nil
	}
	log.Info("output recovered from the second copy of the frames after the stream lost it")
	return out, rep
}
