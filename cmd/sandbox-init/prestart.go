package main

import (
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// pythonLoader is what a pre-started python3 runs until its job arrives:
// read the job from fd 3 and become it.
//
//go:embed prestart.py
var pythonLoader string

// prestarted is an interpreter started before its job: a warm container's
// job then pays no interpreter start. It serves one job or none; a job it
// cannot serve exactly as a fresh start would is started the usual way and
// the interpreter is killed.
type prestarted struct {
	c    *child
	ctl  *os.File // the write end of the child's fd 3
	path string   // the program, as looked up in the prestart's PATH
	spec frame.Prestart
	// reaped is set once the interpreter's exit status has been taken.
	reaped bool
}

// prestart starts p's interpreter, which then waits for its job. It
// starts nothing that a job would not have started: the interpreter alone,
// with the environment and directory a job will have.
func prestart(p *frame.Prestart) (*prestarted, error) {
	if err := checkPrestart(p); err != nil {
		return nil, err
	}
	path, err := lookPath(p.Argv0, envValue(p.Env, "PATH"), p.Dir)
	if err != nil {
		return nil, err
	}
	if err := checkDir(p.Dir); err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create the prestart pipe: %w", err)
	}
	c, err := spawn(path, []string{p.Argv0, "-c", pythonLoader}, p.Env, p.Dir, r)
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	return &prestarted{c: c, ctl: w, path: path, spec: *p}, nil
}

// checkPrestart refuses what init cannot pre-start, or what could not be
// passed to exec.
func checkPrestart(p *frame.Prestart) error {
	if filepath.Base(p.Argv0) != "python3" {
		return fmt.Errorf("prestart %q: only python3 can be pre-started", p.Argv0)
	}
	job := frame.Job{Argv: []string{p.Argv0}, Env: p.Env, Dir: p.Dir, OutputCap: 1}
	return validate(&job)
}

// take hands job to the interpreter when the job would have started the
// same program with the same environment (but for the variables in Vary)
// and directory, and the interpreter is still alive. Otherwise it returns
// nil, and the caller discards the interpreter and starts the job anew.
func (p *prestarted) take(job *frame.Job) *child {
	if p == nil || !p.serves(job) {
		return nil
	}
	var ws unix.WaitStatus
	if pid, err := unix.Wait4(p.c.pid, &ws, unix.WNOHANG, nil); pid != 0 || err != nil {
		p.reaped = pid == p.c.pid
		return nil // it died while it waited: nothing of it may reach the job
	}
	msg := controlMessage(p.path, job.Argv, job.Env)
	ctl := p.ctl
	p.ctl = nil
	// In the background: an interpreter that stopped reading must not hold
	// up the supervision, which enforces the timeout.
	go func() {
		_, _ = ctl.Write(msg)
		ctl.Close()
	}()
	c := p.c
	c.start = time.Now()
	go c.feed(job.Stdin)
	return c
}

// serves reports whether job is what the interpreter was started for.
func (p *prestarted) serves(job *frame.Job) bool {
	if job.Argv[0] != p.spec.Argv0 || job.Dir != p.spec.Dir || !sameEnv(job.Env, p.spec.Env, p.spec.Vary) {
		return false
	}
	path, err := lookPath(job.Argv[0], envValue(job.Env, "PATH"), job.Dir)
	return err == nil && path == p.path
}

// sameEnv reports whether got and want hold the same variables with the
// same values, except that those named in vary may differ in value.
func sameEnv(got, want, vary []string) bool {
	if len(got) != len(want) {
		return false
	}
	values := make(map[string]string, len(want))
	for _, kv := range want {
		k, v, _ := strings.Cut(kv, "=")
		values[k] = v
	}
	for _, kv := range got { // keys are unique in both (validate)
		k, v, _ := strings.Cut(kv, "=")
		w, ok := values[k]
		if !ok || (v != w && !slices.Contains(vary, k)) {
			return false
		}
	}
	return true
}

// controlMessage is what the loader reads on fd 3: the program's path,
// argc, argv and the environment, each NUL-terminated (none contains a NUL:
// validate).
func controlMessage(path string, argv, env []string) []byte {
	var b strings.Builder
	for _, f := range append(append([]string{path, strconv.Itoa(len(argv))}, argv...), env...) {
		b.WriteString(f)
		b.WriteByte(0)
	}
	return []byte(b.String())
}

// discard kills an interpreter that got no job, and everything it
// started, and reaps it.
func (p *prestarted) discard(log *slog.Logger) {
	if p == nil {
		return
	}
	if p.ctl != nil {
		p.ctl.Close()
	}
	if err := p.c.signalGroup(unix.SIGKILL); err != nil {
		log.Warn("kill the pre-started interpreter", "pid", p.c.pid, "err", err)
	}
	if !p.reaped {
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(p.c.pid, &ws, 0, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
	p.c.closeStdin()
	p.c.closeOutput()
}

// awaitJob reads the job, starting the interpreter a prelude asks for
// while it waits. A prelude that cannot be honoured is logged and
// ignored: the job then starts the usual way.
func awaitJob(msgs *messages, sigs <-chan os.Signal, log *slog.Logger) (*frame.Job, *prestarted, error) {
	job, prelude, err := msgs.await(sigs)
	if err != nil || prelude == nil {
		return job, nil, err
	}
	var pre *prestarted
	if prelude.Prestart != nil {
		if pre, err = prestart(prelude.Prestart); err != nil {
			log.Warn("not pre-starting the interpreter", "err", err)
		}
	}
	job, prelude, err = msgs.await(sigs)
	if err == nil && prelude != nil {
		err = fmt.Errorf("%w: a second prelude: send the job after the first", errBadJob)
	}
	return job, pre, err
}
