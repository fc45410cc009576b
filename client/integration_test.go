//go:build integration

package client

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/testserve"
)

// These tests run the client against a real `sandboxrun serve` on
// loopback and the real engine. They fail loudly when either is missing,
// unless SANDBOXRUN_SKIP_DOCKER=1 says to skip on purpose (as the
// integration package does).

const testToken = "go-client-test-token-0123456789"

var cliPath string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	if os.Getenv("SANDBOXRUN_SKIP_DOCKER") == "1" {
		fmt.Fprintln(os.Stderr, "client: SANDBOXRUN_SKIP_DOCKER=1: server tests skipped on request")
		return 0
	}
	cliPath = os.Getenv("SANDBOXRUN_BIN")
	if cliPath == "" {
		dir, err := os.MkdirTemp("", "sandboxrun-client-cli-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "client: FAIL:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		cliPath = filepath.Join(dir, "sandboxrun")
		if out, err := exec.Command("go", "build", "-o", cliPath, "../cmd/sandboxrun").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "client: FAIL: building the CLI: %v\n%s", err, out)
			return 1
		}
	}
	return m.Run()
}

type liveServer struct {
	url string
	log *testserve.Log
}

// startServer runs `sandboxrun serve` on a free loopback port (or the unix
// socket sock) until the test ends, and waits for it to answer: /readyz
// when ready is set, so a missing engine or image fails here with the
// server's reason.
func startServer(t *testing.T, ready bool, sock string, env []string, args ...string) *liveServer {
	t.Helper()
	o := testserve.Options{Bin: cliPath, Args: append([]string{"serve"}, args...), Env: env, Token: testToken, Probe: "/healthz"}
	if sock != "" {
		o.Listen = "unix:" + sock
	}
	if ready {
		o.Probe = "/readyz"
	}
	srv, err := testserve.Start(o)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	return &liveServer{url: srv.URL, log: srv.Log}
}

// writeSkill makes a skill folder under root with the given scripts.
func writeSkill(t *testing.T, root, name, front string, scripts map[string]string) {
	t.Helper()
	dir := filepath.Join(root, name, "scripts")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	md := fmt.Sprintf("---\nname: %s\ndescription: A skill the Go client's tests made. Use it in tests only.\n%s---\n\n# %s\n", name, front, name)
	require.NoError(t, os.WriteFile(filepath.Join(root, name, "SKILL.md"), []byte(md), 0o644))
	for file, text := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(text), 0o755))
	}
	for _, d := range []string{root, filepath.Join(root, name), dir} {
		require.NoError(t, os.Chmod(d, 0o755))
	}
}

const slowPy = "import time\nprint('started', flush=True)\ntime.sleep(60)\n"

func TestAgainstServer(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	killSkill := fmt.Sprintf("goclient-kill-%d", os.Getpid())
	writeSkill(t, root, "goclient-probe", "allowed-tools: Bash(echo:*) Bash(python3:*)\n", map[string]string{
		"probe.py": "import json, os, sys\nprint(json.dumps({'args': json.loads(sys.stdin.read() or '{}'), 'argv': sys.argv[1:], 'env': os.environ.get('PROBE', '')}))\n",
		"slow.py":  slowPy,
		"write.py": "open('made.txt', 'w').write('made')\nprint(open('in.txt').read())\n",
	})
	writeSkill(t, root, killSkill, "", map[string]string{"slow.py": slowPy})
	skills := "../skills:" + root
	tokens := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte(testToken+"\n"), 0o600))
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("sessions:\n  quota: 64Ki\nskill_uploads:\n  allow: tokens\n  store: "+t.TempDir()+"\n"), 0o600))

	main := startServer(t, true, "", nil, "--skills", skills, "--tokens", tokens, "--sessions", t.TempDir(), "--policy", policy)
	busy := startServer(t, false, filepath.Join(t.TempDir(), "s.sock"), nil, "--skills", skills, "--max-running", "1", "--queue-wait", "1ms", "--warm-pool", "0")
	down := startServer(t, false, "", []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "--skills", skills)

	ctx := context.Background()
	c, err := New(main.url, WithToken(testToken))
	require.NoError(t, err)

	t.Run("uploaded skills", func(t *testing.T) {
		t.Parallel()
		files := map[string]string{
			"SKILL.md":      "---\nname: goclient-up\ndescription: Uploaded. Use it to test the client.\n---\nRun scripts/up.py.\n",
			"scripts/up.py": "print('v1')\n",
		}
		v1, err := c.UploadSkill(ctx, MediaTar, tarOf(t, files))
		require.NoError(t, err)
		require.Equal(t, "1", v1.Version)
		files["scripts/up.py"] = "print('v2')\n"
		v2, err := c.UploadSkill(ctx, MediaTar, tarOf(t, files))
		require.NoError(t, err)
		require.Equal(t, "2", v2.Version)
		res, err := c.Run(ctx, "goclient-up@"+v1.Digest, RunRequest{Script: "scripts/up.py"})
		require.NoError(t, err)
		require.Equal(t, "v1\n", res.Stdout)
		require.Equal(t, v1.Digest, res.SkillDigest)
		vs, err := c.SkillVersions(ctx, "goclient-up")
		require.NoError(t, err)
		require.Len(t, vs.Versions, 2)
		list, err := c.Skills(ctx)
		require.NoError(t, err)
		var found bool
		for _, s := range list {
			if s.Name == "goclient-up" {
				found = true
				require.Equal(t, "uploaded", s.Source)
				require.Equal(t, v2.Digest, s.Digest)
			}
		}
		require.True(t, found)
		require.NoError(t, c.DeleteSkillVersion(ctx, "goclient-up", "1"))
		_, err = c.Run(ctx, "goclient-up@1", RunRequest{Script: "scripts/up.py"})
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, 404, e.Status)
		require.NoError(t, c.DeleteSkill(ctx, "goclient-up"))
		_, err = c.SkillVersions(ctx, "goclient-up")
		require.ErrorAs(t, err, &e)
		require.Equal(t, 404, e.Status)
	})

	t.Run("describe", func(t *testing.T) {
		t.Parallel()
		_, err := c.Healthz(ctx)
		require.NoError(t, err)
		m, err := c.Metrics(ctx)
		require.NoError(t, err)
		require.Contains(t, m, "# TYPE")
		doc, err := c.OpenAPI(ctx)
		require.NoError(t, err)
		require.Equal(t, "3.1.0", doc["openapi"])
		list, err := c.Skills(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(list), 4)
		a, err := c.Activate(ctx, "hello")
		require.NoError(t, err)
		require.Equal(t, "/skills/hello", a.BaseDir)
		require.Contains(t, a.Scripts, "scripts/echo.py")
	})

	t.Run("runs", func(t *testing.T) {
		t.Parallel()
		r, err := c.Run(ctx, "goclient-probe", RunRequest{Script: "scripts/probe.py", Argv: []string{"a b"},
			Params: Params{Args: map[string]int{"n": 1}, Env: map[string]string{"PROBE": "v"}, Timeout: 20}})
		require.NoError(t, err)
		require.True(t, r.Success)
		require.JSONEq(t, `{"args":{"n":1},"argv":["a b"],"env":"v"}`, string(r.Output))
		require.InDelta(t, 20, r.Limits.TimeoutS, 0)
		e, err := c.Exec(ctx, "hello", ExecRequest{Command: "echo hi"})
		require.NoError(t, err)
		require.Equal(t, "hi\n", e.Stdout)
		p, err := c.Python(ctx, "hello", PythonRequest{Code: "import sys; print(sys.argv[1:]); sys.exit(3)", Argv: []string{"x"}})
		require.NoError(t, err)
		require.Equal(t, 3, p.ExitCode)
		require.Equal(t, "['x']\n", p.Stdout)
		to, err := c.Run(ctx, "goclient-probe", RunRequest{Script: "scripts/slow.py", Params: Params{Timeout: 1}})
		require.NoError(t, err)
		require.True(t, to.TimedOut)
		require.Equal(t, 124, to.ExitCode)
	})

	t.Run("streams", func(t *testing.T) {
		t.Parallel()
		var types []string
		var res *Result
		for ev, err := range c.ExecStream(ctx, "hello", ExecRequest{Command: "echo one && echo two >&2"}) {
			require.NoError(t, err)
			types = append(types, ev.Type)
			res = ev.Result
		}
		require.Equal(t, "result", types[len(types)-1])
		require.Contains(t, types, "stdout")
		require.Contains(t, types, "stderr")
		require.Equal(t, "one\n", res.Stdout)
		for ev, err := range c.PythonStream(ctx, "hello", PythonRequest{Code: "print(5)"}) {
			require.NoError(t, err)
			if ev.Type == "result" {
				require.Equal(t, "5\n", ev.Result.Stdout)
			}
		}
		// Leaving the loop early cancels the run.
		start := time.Now()
		for ev, err := range c.RunStream(ctx, "goclient-probe", RunRequest{Script: "scripts/slow.py", Params: Params{Timeout: 60}}) {
			require.NoError(t, err)
			require.Equal(t, "stdout", ev.Type)
			break
		}
		require.Less(t, time.Since(start), 30*time.Second)
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		_, err := c.Run(ctx, "hello", RunRequest{Script: "scripts/echo.py", Params: Params{Timeout: -1}})
		require.ErrorIs(t, err, ErrBadRequest)
		bad, _ := New(main.url, WithToken("wrong-token-0123456789"))
		_, err = bad.Skills(ctx)
		require.ErrorIs(t, err, ErrUnauthorized)
		_, err = c.Exec(ctx, "hello", ExecRequest{Command: "echo ok; rm -rf /tmp/x"})
		require.ErrorIs(t, err, ErrRefused)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Contains(t, e.Part, "rm")
		require.Contains(t, e.Suggest, "Bash(rm")
		_, err = c.Activate(ctx, "no-such-skill")
		require.ErrorIs(t, err, ErrNotFound)
		_, err = c.Session(ctx, strings.Repeat("a", 26))
		require.ErrorIs(t, err, ErrNotFound)

		d, _ := New(down.url)
		_, err = d.Readyz(ctx)
		require.ErrorIs(t, err, ErrUnavailable)
		require.ErrorAs(t, err, &e)
		require.Contains(t, e.Message, "not ready", "/readyz answers without a token: the cause goes to the log")
		_, err = d.Run(ctx, "hello", RunRequest{Script: "scripts/echo.py"})
		require.ErrorIs(t, err, ErrServer)
	})

	t.Run("busy", func(t *testing.T) {
		t.Parallel()
		u, err := New(busy.url, WithToken(""))
		require.NoError(t, err)
		next, stop := iterPull(ctx, u)
		defer stop()
		ev, err := next()
		require.NoError(t, err)
		require.Equal(t, "stdout", ev.Type) // holds the only slot
		_, err = u.Run(ctx, "hello", RunRequest{Script: "scripts/echo.py"})
		require.ErrorIs(t, err, ErrBusy)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, time.Second, e.RetryAfter)
	})

	t.Run("sandbox failed mid-run", func(t *testing.T) {
		t.Parallel()
		done := make(chan error, 1)
		go func() {
			_, err := c.Run(ctx, killSkill, RunRequest{Script: "scripts/slow.py", Params: Params{Timeout: 60}})
			done <- err
		}()
		var id string
		for i := 0; i < 100 && id == ""; i++ {
			time.Sleep(200 * time.Millisecond)
			out, _ := exec.Command("docker", "ps", "-q", "--filter", "label=io.sandboxrun.skill="+killSkill).Output()
			id, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
		}
		require.NotEmpty(t, id, "the run's container never showed up")
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, exec.Command("docker", "rm", "-f", id).Run())
		err := <-done
		require.ErrorIs(t, err, ErrServer)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, http.StatusInternalServerError, e.Status)
		require.NotNil(t, e.Result)
		require.Equal(t, killSkill, e.Result.Skill)
	})

	t.Run("sessions", func(t *testing.T) {
		t.Parallel()
		var id string
		err := c.WithSession(ctx, 10*time.Minute, func(s *Session) error {
			id = s.ID
			list, err := c.Sessions(ctx)
			require.NoError(t, err)
			require.True(t, containsSession(list, s.ID))
			f, err := c.PutFile(ctx, s.ID, "in.txt", strings.NewReader("from the host"))
			require.NoError(t, err)
			require.Equal(t, int64(13), f.Size)
			r, err := c.Run(ctx, "goclient-probe", RunRequest{Script: "scripts/write.py", Params: Params{Session: s.ID}})
			require.NoError(t, err)
			require.True(t, r.Success, r.Stderr)
			require.Equal(t, []FileChange{{Path: "made.txt", Change: "created", Size: 4, SHA256: r.Files[0].SHA256}}, r.Files)
			rc, err := c.GetFile(ctx, s.ID, "made.txt")
			require.NoError(t, err)
			b, _ := io.ReadAll(rc)
			rc.Close()
			require.Equal(t, "made", string(b))
			stored, err := c.PutTar(ctx, s.ID, tarOf(t, map[string]string{"d/one.txt": "1", "d/two.txt": "22"}))
			require.NoError(t, err)
			require.Len(t, stored, 2)
			entries, err := c.Files(ctx, s.ID, "d")
			require.NoError(t, err)
			require.Len(t, entries, 2)
			tr, err := c.GetTar(ctx, s.ID)
			require.NoError(t, err)
			names := tarNames(t, tr)
			require.Contains(t, names, "made.txt")
			require.Contains(t, names, "d/two.txt")
			require.NoError(t, c.DeleteFile(ctx, s.ID, "d"))
			_, err = c.GetFile(ctx, s.ID, "d/one.txt")
			require.ErrorIs(t, err, ErrNotFound)
			_, err = c.PutFile(ctx, s.ID, "dir/a", strings.NewReader("a"))
			require.NoError(t, err)
			_, err = c.GetFile(ctx, s.ID, "dir")
			require.ErrorIs(t, err, ErrConflict)
			_, err = c.PutFile(ctx, s.ID, "big", bytes.NewReader(make([]byte, 128<<10)))
			require.ErrorIs(t, err, ErrTooLarge)
			_, err = c.PutFile(ctx, s.ID, "../escape", strings.NewReader("x"))
			require.ErrorIs(t, err, ErrBadRequest)
			got, err := c.Session(ctx, s.ID)
			require.NoError(t, err)
			require.Positive(t, got.BytesUsed)

			snap, err := c.CreateSnapshot(ctx, s.ID, "before")
			require.NoError(t, err)
			require.Equal(t, "before", snap.Label)
			require.NoError(t, c.DeleteFile(ctx, s.ID, "made.txt"))
			fork, err := c.Fork(ctx, s.ID, snap.ID, 0)
			require.NoError(t, err)
			defer func() { _ = c.DeleteSession(context.WithoutCancel(ctx), fork.ID) }()
			_, err = c.Restore(ctx, s.ID, snap.ID)
			require.NoError(t, err)
			for _, id := range []string{s.ID, fork.ID} {
				rc, err := c.GetFile(ctx, id, "made.txt")
				require.NoError(t, err, "restored and forked")
				rc.Close()
			}
			snaps, err := c.Snapshots(ctx, s.ID)
			require.NoError(t, err)
			require.Len(t, snaps, 1)
			require.NoError(t, c.DeleteSnapshot(ctx, s.ID, snap.ID))
			_, err = c.Restore(ctx, s.ID, snap.ID)
			require.ErrorIs(t, err, ErrNotFound)
			return nil
		})
		require.NoError(t, err)
		_, err = c.Session(ctx, id)
		require.ErrorIs(t, err, ErrNotFound)
	})
}

// iterPull starts a slow streamed run on c and returns its events one at a
// time; stop ends it.
func iterPull(ctx context.Context, c *Client) (func() (Event, error), func()) {
	type item struct {
		ev  Event
		err error
	}
	ch := make(chan item)
	quit := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for ev, err := range c.RunStream(ctx, "goclient-probe", RunRequest{Script: "scripts/slow.py", Params: Params{Timeout: 60}}) {
			select {
			case ch <- item{ev, err}:
			case <-quit:
				return
			}
		}
	}()
	// Cancelling closes the connection, which ends the run on the server.
	return func() (Event, error) { it := <-ch; return it.ev, it.err }, func() { close(quit); cancel() }
}

func containsSession(list []Session, id string) bool {
	for _, s := range list {
		if s.ID == id {
			return true
		}
	}
	return false
}

func tarOf(t *testing.T, files map[string]string) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, text := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(text)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(text))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &buf
}

func tarNames(t *testing.T, rc io.ReadCloser) []string {
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		require.NoError(t, err)
		names = append(names, h.Name)
	}
}
