package cow

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const testUID, testGID = 65532, 65532

// walkableDir is a temporary folder the sandbox user can walk through
// (t.TempDir's parent is root's alone).
func walkableDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "cow-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(d, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// mountTest mounts a view of lower with room bytes and closes it at the
// end of the test.
func mountTest(t testing.TB, lower string, room int64) (*View, string) {
	t.Helper()
	require.Zero(t, os.Geteuid(), "run as root, as the backends do: the view is mounted")
	base := walkableDir(t)
	target := filepath.Join(base, "merged")
	require.NoError(t, os.Mkdir(target, 0o755))
	v, err := Mount(Options{Lower: lower, Scratch: filepath.Join(base, "scratch"), Target: target, Room: room, UID: testUID, GID: testGID})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, v.Close()) })
	return v, target
}

// asSandboxUser runs a shell script as the sandbox user.
func asSandboxUser(t *testing.T, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = sysProcAs(testUID, testGID)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestViewIsCopyOnWrite: the sandbox user sees the store's files as its
// own and may update, delete and add; the folder and a hard link to one of
// its files (a snapshot's) are unchanged; the layer says exactly what
// changed.
func TestViewIsCopyOnWrite(t *testing.T) {
	lower := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(lower, "d/keep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lower, "d/f.txt"), []byte("hello"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lower, "gone.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lower, "d/keep/same.txt"), []byte("same"), 0o644))
	snap := t.TempDir()
	require.NoError(t, os.Link(filepath.Join(lower, "d/f.txt"), filepath.Join(snap, "f.txt")))

	v, ws := mountTest(t, lower, 1<<20)
	out, err := asSandboxUser(t, `set -e; cd `+ws+`
stat -c %u:%g d/f.txt .
echo more >> d/f.txt
rm gone.txt
echo new > d/new.txt`)
	require.NoError(t, err, out)
	require.Equal(t, "65532:65532\n65532:65532\n", out, "the store's files and the view's root are the sandbox user's")

	for _, p := range []string{filepath.Join(lower, "d/f.txt"), filepath.Join(snap, "f.txt")} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, "hello", string(b), "the folder and a file linked to it are never written")
	}
	require.FileExists(t, filepath.Join(lower, "gone.txt"))

	got := layerNames(t, v)
	require.ElementsMatch(t, []string{".wh.gone.txt", "d/", "d/f.txt=hellomore\n", "d/new.txt=new\n"}, got)
}

// TestViewRoomIsBounded: writes past the room fail with ENOSPC, reads of
// the folder's files still work however large they are.
func TestViewRoomIsBounded(t *testing.T) {
	lower := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(lower, "big"), make([]byte, 256<<10), 0o644))
	_, ws := mountTest(t, lower, 64<<10)
	out, err := asSandboxUser(t, `cd `+ws+` && wc -c < big && head -c 200000 /dev/zero > more`)
	require.Error(t, err)
	require.Contains(t, out, "262144")
	require.Contains(t, strings.ToLower(out), "no space left")
}

// TestCloseLeavesNothing: after Close nothing of the view is mounted and its
// scratch folder is gone; the target is an empty folder again.
func TestCloseLeavesNothing(t *testing.T) {
	require.Zero(t, os.Geteuid(), "run as root, as the backends do: the view is mounted")
	lower, base := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(lower, "f"), []byte("f"), 0o644))
	target, scratch := filepath.Join(base, "merged"), filepath.Join(base, "scratch")
	require.NoError(t, os.Mkdir(target, 0o755))
	v, err := Mount(Options{Lower: lower, Scratch: scratch, Target: target, Room: 1 << 20, UID: testUID, GID: testGID})
	require.NoError(t, err)
	require.NoError(t, v.Close())
	require.NoError(t, v.Close(), "Close again")
	require.NoDirExists(t, scratch)
	entries, err := os.ReadDir(target)
	require.NoError(t, err)
	require.Empty(t, entries)
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	require.NotContains(t, string(mounts), base)
}

// TestMountFailureLeavesNothing: a lower folder that is not there fails the
// mount, with nothing left behind.
func TestMountFailureLeavesNothing(t *testing.T) {
	require.Zero(t, os.Geteuid(), "run as root, as the backends do: the view is mounted")
	base := t.TempDir()
	target, scratch := filepath.Join(base, "merged"), filepath.Join(base, "scratch")
	require.NoError(t, os.Mkdir(target, 0o755))
	_, err := Mount(Options{Lower: filepath.Join(base, "absent"), Scratch: scratch, Target: target, Room: 1 << 20, UID: testUID, GID: testGID})
	require.ErrorContains(t, err, "absent")
	require.NoDirExists(t, scratch)
	_, err = Mount(Options{Lower: base, Scratch: scratch, Target: target, Room: 0, UID: testUID, GID: testGID})
	require.ErrorContains(t, err, "room")
}

func layerNames(t *testing.T, v *View) []string {
	t.Helper()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(v.WriteLayer(pw)) }()
	var got []string
	tr := tar.NewReader(pr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		require.NoError(t, err)
		name := h.Name
		if h.Typeflag == tar.TypeReg && !strings.Contains(name, ".wh.") {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			name += "=" + string(b)
		}
		got = append(got, name)
	}
}
