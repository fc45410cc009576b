package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/frame"
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

	rep, job, side := serve(stdin, out, sigs, log)
	defer side.ch.close()
	switch {
	case job != nil && job.HoldDir != "":
		rep.HoldUsedBytes, rep.HoldFreeBytes = usage(job.HoldDir)
	case side.ws != nil:
		rep.HoldUsedBytes, rep.HoldFreeBytes = usage(side.ws.dir)
	}
	payload, err := json.Marshal(rep)
	if err != nil {
		log.Error("encode result", "err", err)
		return 1
	}
	if err := out.write(frame.Result, payload); err != nil {
		log.Error("write result frame", "err", err)
		return 1
	}
	if job != nil && job.HoldDir != "" {
		hold(stdin, sigs)
	}
	if side.ws != nil && rep.Error == "" {
		// The host learns of a failure here from the stream: no changes
		// reach the workspace.
		if err := side.ws.handBack(side.ch); err != nil {
			log.Error("hand the workspace back", "err", err)
			return 1
		}
	}
	return 0
}

// sideWork is what a job's side channel still has to do after the Result
// frame.
type sideWork struct {
	ch *channel
	ws *workspaceTree
}

// maxHold bounds how long init waits for the host to copy HoldDir out.
const maxHold = 10 * time.Minute

// hold keeps init, and with it the container and its volumes, up until the
// host closes stdin (it has copied the workspace out), a signal arrives, or
// maxHold passes.
func hold(stdin io.Reader, sigs <-chan os.Signal) {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(done)
	}()
	t := time.NewTimer(maxHold)
	defer t.Stop()
	select {
	case <-done:
	case <-sigs:
	case <-t.C:
	}
}

// usage reports the used and free bytes of the file system holding dir.
func usage(dir string) (used, free int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0
	}
	bs := uint64(max(st.Bsize, 0))
	return clampInt64((st.Blocks - st.Bfree) * bs), clampInt64(st.Bavail * bs)
}

func clampInt64(u uint64) int64 {
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

// serve runs one job and returns its report; every failure becomes a report
// with Error set, never a crash, so the host always gets a Result frame.
func serve(stdin io.Reader, out *frameWriter, sigs <-chan os.Signal, log *slog.Logger) (rep frame.Report, job *frame.Job, side sideWork) {
	var oomBase *int64
	defer func() { rep.OOMKills = sandboxCgroups.oomKillsSince(oomBase) }()
	if err := harden(); err != nil {
		return failed(err), nil, side
	}
	msgs := newMessages(stdin, maxJobBytes)
	job, pre, err := awaitJob(msgs, sigs, log)
	if err != nil {
		pre.discard(log)
		return failed(err), nil, side
	}
	if side, err = openSide(job, msgs, out, log); err != nil {
		pre.discard(log)
		return failed(err), job, side
	}
	relay, err := startEgressRelay(job.Egress, side.ch, log)
	if err != nil {
		pre.discard(log)
		return failed(err), job, side
	}
	defer relay.close()
	serveUsage(side.ch, side.ws, log)
	// Counted from here: a kill while a warm container waited is not the job's.
	oomBase = sandboxCgroups.oomKills()
	c := pre.take(job)
	if c != nil {
		rep := supervise(job, c, out, sigs, log)
		rep.Prestarted = true
		return rep, job, side
	}
	pre.discard(log)
	if c, err = startChild(job); err != nil {
		return failed(err), job, side
	}
	return supervise(job, c, out, sigs, log), job, side
}

// openSide opens the job's side channel and fetches the skill's files and
// the workspace over it.
func openSide(job *frame.Job, msgs *messages, out *frameWriter, log *slog.Logger) (sideWork, error) {
	var side sideWork
	var err error
	if side.ch, err = openChannel(job, msgs.rest(), out, log); err != nil {
		return side, err
	}
	if job.Skill != nil {
		if err := fetchSkill(side.ch, job.Skill); err != nil {
			return side, err
		}
		if err := guardOrModes(skillGuard(), job.Skill, log); err != nil {
			return side, err
		}
	}
	if job.Workspace == nil {
		return side, nil
	}
	side.ws, err = fetchWorkspace(side.ch, job.Workspace)
	return side, err
}
