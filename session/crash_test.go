package session

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// crashEnv makes the test binary, re-executed, act as a server uploading
// files until it is killed.
const crashEnv = "SANDBOXRUN_SESSION_CRASH_ROOT"

// content is what the uploader writes at p: derived from p alone, so any
// file found later can be checked byte for byte.
func content(p string) []byte {
	h := sha256.Sum256([]byte(p))
	size := (int(h[0])%4 + 1) * (384 << 10)
	return bytes.Repeat(h[:], size/len(h))
}

// slowReader paces an upload like a network body, so a kill lands inside
// it.
type slowReader struct{ r io.Reader }

func (s slowReader) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return s.r.Read(p[:min(len(p), 16<<10)])
}

// TestMain runs the uploader instead of the tests when re-executed by
// TestSIGKILLDuringUploads.
func TestMain(m *testing.M) {
	if root := os.Getenv(crashEnv); root != "" {
		crashChild(root, os.Getenv("CRASH_CYCLE"))
		return
	}
	os.Exit(m.Run())
}

// crashChild uploads files (and tars) until it is killed, printing "begin"
// before and "ack <path>" after each.
func crashChild(root, cycle string) {
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	s, err := Open(root, Limits{})
	if err != nil {
		fail(err)
	}
	var id string
	if list := s.List(owner); len(list) > 0 {
		id = list[0].ID
	} else if info, err := s.Create(owner, 0); err == nil {
		id = info.ID
	} else {
		fail(err)
	}
	for i := 0; ; i++ {
		if i%4 == 3 {
			var files []tarFile
			for j := 0; j < 3; j++ {
				p := fmt.Sprintf("tar-%s-%d/f%d", cycle, i, j)
				files = append(files, tarFile{name: p, body: string(content(p))})
			}
			b, err := buildTar(files...)
			if err != nil {
				fail(err)
			}
			fmt.Println("begin tar")
			got, err := s.PutTar(owner, id, slowReader{bytes.NewReader(b)})
			if err != nil {
				fail(err)
			}
			for _, f := range got {
				fmt.Println("ack", f.Path)
			}
			continue
		}
		p := fmt.Sprintf("c%s/f%d.bin", cycle, i)
		fmt.Println("begin", p)
		if _, err := s.PutFile(owner, id, p, slowReader{bytes.NewReader(content(p))}); err != nil {
			fail(err)
		}
		fmt.Println("ack", p)
	}
}

// tempOnDisk waits a little for an upload's temp file to appear.
func tempOnDisk(root string) bool {
	for range 200 {
		found, _ := filepath.Glob(filepath.Join(root, "ws", "*", fsroot.TempPrefix+"*"))
		if len(found) > 0 {
			return true
		}
		time.Sleep(time.Millisecond / 4)
	}
	return false
}

// TestSIGKILLDuringUploads kills an uploading process mid-upload, several
// times, reopening the store in between: every acknowledged file must be
// byte-identical, no temp file visible or left, no half file anywhere.
func TestSIGKILLDuringUploads(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	acked := map[string]bool{}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	for cycle := 0; cycle < 4; cycle++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), crashEnv+"="+root, fmt.Sprintf("CRASH_CYCLE=%d", cycle))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		sc := bufio.NewScanner(out)
		begins := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "error") {
				t.Fatalf("child: %s", line)
			}
			if p, ok := strings.CutPrefix(line, "ack "); ok {
				acked[p] = true
			}
			if strings.HasPrefix(line, "begin") {
				begins++
				if begins >= 6+cycle && tempOnDisk(root) {
					// Mid-write: an upload's temp file exists.
					require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
					t.Logf("cycle %d: killed during %q", cycle, line)
					break
				}
			}
		}
		// Acks printed before the kill count too.
		rest, _ := io.ReadAll(out)
		for _, line := range strings.Split(string(rest), "\n") {
			if p, ok := strings.CutPrefix(line, "ack "); ok {
				acked[p] = true
			}
		}
		_ = cmd.Wait()

		s, err := Open(root, Limits{}, WithLogger(logger))
		require.NoError(t, err, "reopening after SIGKILL")
		list := s.List(owner)
		require.Len(t, list, 1)
		id := list[0].ID
		for p := range acked {
			got := readAll(t, s, id, p)
			require.True(t, string(content(p)) == got, "acknowledged %s is not byte-identical", p)
		}
		entries, err := s.ListFiles(owner, id, "")
		require.NoError(t, err)
		var used int64
		for _, e := range entries {
			require.False(t, strings.Contains(e.Path, fsroot.TempPrefix), e.Path)
			if e.Type == TypeFile {
				require.Equal(t, fmt.Sprintf("%x", sha256.Sum256(content(e.Path))), e.SHA256, "half file %s", e.Path)
				used += e.Size
			}
		}
		info, err := s.Get(owner, id)
		require.NoError(t, err)
		require.Equal(t, used, info.BytesUsed)
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			require.NoError(t, err)
			require.False(t, strings.HasPrefix(d.Name(), fsroot.TempPrefix) || strings.Contains(d.Name(), metaTempMark), "leftover %s", p)
			return nil
		})
		require.NoError(t, err)
		require.NoError(t, s.Close())
	}
	require.GreaterOrEqual(t, len(acked), 20)
	// The kills landed mid-upload at least once (else this test proves little).
	require.GreaterOrEqual(t, strings.Count(logs.String(), "removing interrupted upload"), 4)
	t.Logf("recovery:\n%s", logs.String())
}
