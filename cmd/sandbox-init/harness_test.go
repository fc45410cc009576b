package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// asInit makes the test binary run sandbox-init's run instead of the tests,
// so the end-to-end tests exercise the real supervisor (with the race
// detector) in a process of its own: its wait4(-1) loop would otherwise
// reap the children of go test.
const asInit = "SANDBOX_INIT_TEST_AS_INIT"

func TestMain(m *testing.M) {
	if os.Getenv(asInit) == "1" {
		os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// testEnv is the job environment of the end-to-end tests; /usr/bin first so
// python3 is the system one and not a shim needing $HOME.
var testEnv = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}

func newJob(argv ...string) frame.Job {
	return frame.Job{
		Argv: argv, Env: testEnv, Dir: "/",
		TimeoutMS: 20_000, GraceMS: 500, OutputCap: 1 << 20,
	}
}

// hangLimit is how long any single init may live before the test kills it;
// a hang then shows as a failed assertion, not a stuck test binary.
const hangLimit = 60 * time.Second

// initProc is a running sandbox-init.
type initProc struct {
	cmd     *exec.Cmd
	stdout  io.ReadCloser // init's stdout, as the host reads it
	frames  *frame.Reader
	diag    *bytes.Buffer // init's stderr
	started time.Time
}

// startInit starts sandbox-init (the test binary in init mode, unless
// configure says otherwise) with the given stdin.
func startInit(t *testing.T, stdin io.Reader, configure ...func(*exec.Cmd)) *initProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = initEnviron()
	cmd.Stdin = stdin
	var diag bytes.Buffer
	cmd.Stderr = &diag
	for _, f := range configure {
		f(cmd)
	}
	p := &initProc{cmd: cmd, diag: &diag}
	if cmd.Stdout == nil { // else configure's caller reads it
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		p.stdout, p.frames = stdout, frame.NewReader(stdout)
	}
	require.NoError(t, cmd.Start())
	p.started = time.Now()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return p
}

// initEnviron is the test binary's environment plus the switch into init
// mode. Under -race it also drops the race runtime's default 1 s sleep at
// exit, which would otherwise add a second to every run.
func initEnviron() []string {
	env := []string{asInit + "=1", "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GORACE=") && !strings.HasPrefix(kv, asInit+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// outcome is everything init sent, decoded.
type outcome struct {
	stdout, stderr []byte
	report         frame.Report
	elapsed        time.Duration
}

// finish reads frames to the end, checks the stream is well formed (one
// Result, last) and that init exited 0.
func (p *initProc) finish(t *testing.T) outcome {
	t.Helper()
	var o outcome
	results := 0
	for {
		typ, payload, err := p.frames.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "decode frames; init said: %s", p.diag)
		require.Zero(t, results, "a %s frame after the result", typ)
		switch typ {
		case frame.Stdout:
			o.stdout = append(o.stdout, payload...)
		case frame.Stderr:
			o.stderr = append(o.stderr, payload...)
		case frame.Result:
			results++
			require.NoError(t, json.Unmarshal(payload, &o.report))
		default:
			t.Fatalf("unknown frame type %v", typ)
		}
	}
	require.NoError(t, p.cmd.Wait(), "init exit; it said: %s", p.diag)
	o.elapsed = time.Since(p.started)
	require.Equal(t, 1, results, "exactly one result frame; init said: %s", p.diag)
	return o
}

// nextFrame reads one frame, for tests that act in the middle of a run.
func (p *initProc) nextFrame(t *testing.T) (frame.Type, []byte) {
	t.Helper()
	typ, payload, err := p.frames.Next()
	require.NoError(t, err, "init said: %s", p.diag)
	return typ, payload
}

func runJob(t *testing.T, job frame.Job) outcome {
	t.Helper()
	b, err := json.Marshal(job)
	require.NoError(t, err)
	return runRaw(t, b)
}

func runRaw(t *testing.T, stdin []byte) outcome {
	t.Helper()
	return startInit(t, bytes.NewReader(stdin)).finish(t)
}
