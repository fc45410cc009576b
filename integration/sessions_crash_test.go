//go:build integration

package integration

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// slowUpload is a request whose body the test writes as it likes; the
// server reads it as it comes.
type slowUpload struct {
	w    *io.PipeWriter
	done chan struct{}
}

func (s *sessServer) startUpload(t *testing.T, path, contentType string) *slowUpload {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest("PUT", s.url+path, pr)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	u := &slowUpload{w: pw, done: make(chan struct{})}
	go func() {
		defer close(u.done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close() // the server is killed first: no answer expected
		}
	}()
	t.Cleanup(func() { _ = pw.CloseWithError(io.ErrUnexpectedEOF); <-u.done })
	return u
}

// TestSessionSurvivesSIGKILL: a server killed with uploads and a run in
// flight comes back on the same folder with every acknowledged file byte
// for byte, nothing of the interrupted uploads visible or on disk, its
// sessions listed, and no container or workspace volume of the killed
// run left once it runs again.
func TestSessionSurvivesSIGKILL(t *testing.T) {
	// Serial (see main_test.go): it kills a server, whose sandboxes any
	// other sandboxrun process would then reap as a dead owner's.
	srv := startSessionServer(t, "")
	acked := map[string]map[string][]byte{} // session → path → content
	var ids []string
	for range 4 {
		s := srv.create(t, "")
		ids = append(ids, s.ID)
		acked[s.ID] = map[string][]byte{}
		for p, size := range map[string]int{"a.bin": 1 << 20, "dir/b.bin": 3 << 20} {
			data := randomBytes(t, size)
			srv.put(t, s.ID, p, data)
			acked[s.ID][p] = data
		}
	}

	// A run in the fourth session writes, then waits.
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	started := make(chan struct{})
	go func() {
		body := `{"code": "open('from-run.txt', 'w').write('x')\nimport time\nprint('started', flush=True)\ntime.sleep(120)", "timeout": 150, "session": "` + ids[3] + `"}`
		req, _ := http.NewRequestWithContext(runCtx, "POST", srv.url+"/v1/skills/"+srv.skill+"/python", strings.NewReader(body))
		req.Header.Set("Accept", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err == nil && strings.Contains(line, "started") {
			close(started)
		}
		// Keep the request open until the server dies: a caller that hangs
		// up cancels its run, which would end the sandbox before the kill.
		_, _ = io.Copy(io.Discard, br)
	}()
	select {
	case <-started:
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not start; stderr: %s", srv.stderr)
	}

	// Uploads in flight in the other three: a new file, an overwrite of an
	// acknowledged one, and a tar overwriting one and adding another.
	chunk := randomBytes(t, 1<<20)
	ups := []*slowUpload{
		srv.startUpload(t, "/v1/sessions/"+ids[0]+"/files/new.bin", ""),
		srv.startUpload(t, "/v1/sessions/"+ids[1]+"/files/a.bin", ""),
		srv.startUpload(t, "/v1/sessions/"+ids[2]+"/files", "application/x-tar"),
	}
	tw := tar.NewWriter(ups[2].w)
	go func() {
		_ = tw.WriteHeader(&tar.Header{Name: "dir/b.bin", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2 << 20})
		_, _ = tw.Write(chunk)
		_, _ = tw.Write(chunk) // the whole of dir/b.bin is staged
		_ = tw.WriteHeader(&tar.Header{Name: "c.bin", Typeflag: tar.TypeReg, Mode: 0o644, Size: 8 << 20})
		_, _ = tw.Write(chunk) // and part of c.bin
	}()
	for _, u := range ups[:2] {
		go func() { _, _ = u.w.Write(chunk); _, _ = u.w.Write(chunk) }()
	}
	// Each upload has written to its temporary name when the server dies.
	for _, id := range ids[:3] {
		require.Eventually(t, func() bool {
			return tempBytes(srv.workspace(id)) >= 1<<20
		}, 30*time.Second, 20*time.Millisecond, "upload in session %s not in flight", id)
	}
	running, err := sandboxesOf(srv.skill)
	require.NoError(t, err)
	require.Len(t, running, 1, "the run's sandbox is up; the engine's sandboxes: %s", describeSandboxes())

	require.NoError(t, srv.cmd.Process.Kill())
	<-srv.done
	for _, id := range ids[:3] {
		require.NotEmpty(t, tempNames(t, srv.workspace(id)), "the kill left the interrupted upload's temporary file")
	}

	next := startSessionServer(t, srv.dir)
	require.ElementsMatch(t, ids, next.ids(t), "every session survives")

	for _, id := range ids {
		for p, want := range acked[id] {
			require.Equal(t, sha(want), sha(next.get(t, id, p)), "acknowledged %s of %s is intact", p, id)
		}
		byPath := entries(next.list(t, id))
		for p, e := range byPath {
			require.False(t, strings.HasPrefix(filepath.Base(p), ".sandboxrun-"), "temporary %s listed", p)
			if e.Type == session.TypeFile {
				require.Contains(t, acked[id], p, "only acknowledged files are in %s", id)
				require.Equal(t, sha(acked[id][p]), e.SHA256)
			}
		}
		require.Empty(t, tempNames(t, next.workspace(id)), "nothing of an interrupted upload on disk")
		var used int64
		for _, data := range acked[id] {
			used += int64(len(data))
		}
		require.Equal(t, used, next.info(t, id).BytesUsed, "bytes recounted")
	}
	metas, err := os.ReadDir(filepath.Join(srv.dir, "meta"))
	require.NoError(t, err)
	for _, m := range metas {
		require.True(t, m.Name() == "lock" || strings.HasSuffix(m.Name(), ".json") && !strings.Contains(m.Name(), ".tmp-"), "metadata leftover %s", m.Name())
	}

	// The killed run's writes never reached its session; the next run
	// there removes the sandbox and volume the killed server left.
	res := next.python(t, ids[3], `import os; print(os.path.exists("from-run.txt"))`)
	require.True(t, res.Success, res.Stderr)
	require.Equal(t, "False\n", res.Stdout)
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+srv.skill)
	// The reaper removes the volume just after the container, so the
	// volume may still be there for a moment after the container is gone.
	for _, c := range running {
		vol := "sandboxrun-ws-" + c.Labels[sandbox.LabelRunID]
		require.Eventually(t, func() bool {
			_, err := runner.Client().VolumeInspect(context.Background(), vol)
			return cerrdefs.IsNotFound(err)
		}, 30*time.Second, 50*time.Millisecond, "the killed run's workspace volume %s is removed", vol)
	}
}

// tempBytes sums the sizes of the temporary files under dir. The server
// is writing there meanwhile: what vanishes during the walk is skipped.
func tempBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && strings.Contains(p, "/.sandboxrun-") {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// describeSandboxes names every managed container with its state and
// labels, for a failure message.
func describeSandboxes() string {
	list, err := runner.Client().ContainerList(context.Background(), container.ListOptions{
		All: true, Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelManaged+"=true")),
	})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, c := range list {
		fmt.Fprintf(&b, "\n  %.12s %s %v", c.ID, c.State, c.Labels)
	}
	return b.String()
}

// sandboxesOf lists the managed containers of a skill, in any state.
func sandboxesOf(skill string) ([]container.Summary, error) {
	return runner.Client().ContainerList(context.Background(), container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", sandbox.LabelManaged+"=true"),
			filters.Arg("label", sandbox.LabelSkill+"="+skill),
		),
	})
}

// TestSessionSIGKILLDuringHandBack: a server killed while it writes a run's
// outputs back into the session leaves no temporary file visible after a
// restart: the listing shows whole files only and the disk holds no
// leftover.
func TestSessionSIGKILLDuringHandBack(t *testing.T) {
	// Serial (see main_test.go): it kills a server, whose sandboxes any
	// other sandboxrun process would then reap as a dead owner's.
	srv := startSessionServer(t, "")
	s := srv.create(t, "")
	srv.put(t, s.ID, "in.txt", []byte("kept\n"))
	go func() {
		body := mustJSON(t, map[string]string{"session": s.ID,
			"code": "import os\nfor i in range(8):\n    with open('out%d.bin' % i, 'wb') as f:\n        f.write(os.urandom(16 << 20))\n"})
		req, _ := http.NewRequest("POST", srv.url+"/v1/skills/"+srv.skill+"/python", strings.NewReader(body))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	ws := srv.workspace(s.ID)
	// The kill must land inside the hand-back, a window of a few
	// milliseconds per file that a poll cannot hit for sure: the server
	// is stopped (SIGSTOP, every thread) when a temporary file shows,
	// killed only if one is still there while it cannot move, and let go
	// on otherwise, to be caught at the next file.
	pid := srv.cmd.Process.Pid
	inside, stops := false, 0
	for deadline := time.Now().Add(5 * time.Minute); !inside && time.Now().Before(deadline); {
		if tempBytes(ws) == 0 {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		stops++
		require.NoError(t, srv.cmd.Process.Signal(syscall.SIGSTOP))
		waitStopped(t, pid)
		if inside = len(tempNames(t, ws)) > 0; !inside {
			require.NoError(t, srv.cmd.Process.Signal(syscall.SIGCONT))
		}
	}
	require.True(t, inside, "the hand-back never wrote a temporary file")
	t.Logf("the server was stopped %d time(s) before one found a temporary file", stops)
	require.NoError(t, srv.cmd.Process.Kill())
	<-srv.done
	require.NotEmpty(t, tempNames(t, ws), "the kill landed inside the hand-back")

	next := startSessionServer(t, srv.dir)
	for _, e := range next.list(t, s.ID) {
		require.False(t, strings.HasPrefix(filepath.Base(e.Path), ".sandboxrun-"), "temporary %s listed", e.Path)
		if e.Type == session.TypeFile && e.Path != "in.txt" {
			require.EqualValues(t, 16<<20, e.Size, "a handed-back file is whole: %s", e.Path)
		}
	}
	require.Empty(t, tempNames(t, ws), "nothing of the interrupted hand-back on disk")
	require.Equal(t, []byte("kept\n"), next.get(t, s.ID, "in.txt"))
	res := next.python(t, s.ID, "print(1)") // reaps the killed run's sandbox
	require.True(t, res.Success, res.Stderr)
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+srv.skill)
}

// waitStopped waits until every thread of pid is stopped by a signal, so
// nothing it does is still in flight.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	task := filepath.Join("/proc", strconv.Itoa(pid), "task")
	require.Eventually(t, func() bool {
		ids, err := os.ReadDir(task)
		if err != nil {
			return false
		}
		for _, id := range ids {
			b, err := os.ReadFile(filepath.Join(task, id.Name(), "stat"))
			if err != nil {
				return false
			}
			// The state follows the command name's closing parenthesis.
			i := bytes.LastIndexByte(b, ')')
			if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				return false
			}
		}
		return true
	}, time.Minute, time.Millisecond, "process %d did not stop", pid)
}
