package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"runtime"

	"github.com/sandboxrun/sandboxrun/sandbox/frame"
)

// run is the whole of sandbox-init: harden, take one job, supervise the
// child, report. It returns init's exit status: 0 once the Result frame is
// written, 1 when it could not be (the host stopped reading).
func run(stdin io.Reader, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// One P is plenty for relaying pipes, and it bounds the threads the
	// scheduler wants; the rest are created before the child can take them.
	runtime.GOMAXPROCS(1)
	reserveThreads(reservedThreads)
	// Signals first: a warm container may be stopped before its job arrives.
	sigs := watchSignals()
	out := newFrameWriter(stdout)

	rep := serve(stdin, out, sigs, log)
	payload, err := json.Marshal(rep)
	if err != nil {
		log.Error("encode result", "err", err)
		return 1
	}
	if err := out.write(frame.Result, payload); err != nil {
		log.Error("write result frame", "err", err)
		return 1
	}
	return 0
}

// serve runs one job and returns its report; every failure becomes a report
// with Error set, never a crash, so the host always gets a Result frame.
func serve(stdin io.Reader, out *frameWriter, sigs <-chan os.Signal, log *slog.Logger) frame.Report {
	if err := harden(); err != nil {
		return failed(err)
	}
	job, err := awaitJob(stdin, sigs)
	if err != nil {
		return failed(err)
	}
	c, err := startChild(job)
	if err != nil {
		return failed(err)
	}
	return supervise(job, c, out, sigs, log)
}
