package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
	sessionstore "github.com/sandboxrun/sandboxrun/session"
)

type entry struct {
	name, body, link string
	dir              bool
	mode             int64
}

func tarOf(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: time.Now()}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write([]byte(e.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &buf
}

// handBack is the hand-back of a run: the returned tree diffed against
// what was sandbox.Copied in, and the layer applied to root by its owner's
// applier (a host folder's here).
func handBack(t *testing.T, r io.Reader, root string, before map[string]sandbox.Copied, copiedAt time.Time) ([]sandbox.FileChange, error) {
	t.Helper()
	var layer bytes.Buffer
	if err := diffTree(r, &layer, before, copiedAt); err != nil {
		return nil, err
	}
	f, err := sessionstore.OpenFolder(root, sessionstore.Limits{}, true)
	require.NoError(t, err)
	defer f.Close()
	return f.ApplyChanges(context.Background(), &layer)
}

// was says what was sandbox.Copied in: regular files, by path.
func was(paths ...string) map[string]sandbox.Copied {
	m := map[string]sandbox.Copied{}
	for _, p := range paths {
		m[p] = sandbox.Copied{Typ: tar.TypeReg, Perm: 0o644}
	}
	return m
}

func TestReadTreeStaysInside(t *testing.T) {
	for _, name := range []string{"../evil", "a/../../evil", "/../evil"} {
		root := t.TempDir()
		_, err := handBack(t, tarOf(t, entry{name: name, body: "x"}), root, nil, time.Now())
		if err == nil {
			// A leading slash or .. that cleans to inside is kept inside.
			_, statErr := os.Stat(filepath.Join(filepath.Dir(root), "evil"))
			require.True(t, os.IsNotExist(statErr), "%q escaped", name)
			continue
		}
		require.ErrorIs(t, err, errUnsafePath, name)
	}
}

func TestReadTreeNeverFollowsHostSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "d")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "f"), filepath.Join(root, "f")))
	// The script replaced the link d with a folder and wrote into it, and
	// wrote a file where the link f was.
	_, err := handBack(t, tarOf(t, entry{name: "d", dir: true, mode: 0o755}, entry{name: "d/x", body: "in"}, entry{name: "f", body: "new"}), root, nil, time.Now())
	require.NoError(t, err)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written outside the workspace")
	fi, err := os.Lstat(filepath.Join(root, "d"))
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	b, err := os.ReadFile(filepath.Join(root, "f"))
	require.NoError(t, err)
	require.Equal(t, "new", string(b))
}

func TestReadTreeModesDeletionsAndSetID(t *testing.T) {
	root := t.TempDir()
	suid := filepath.Join(root, "suid")
	require.NoError(t, os.WriteFile(suid, []byte("orig"), 0o755))
	require.NoError(t, unix.Chmod(suid, 0o4755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "gone"), []byte("x"), 0o644))
	changes, err := handBack(t, tarOf(t,
		entry{name: "suid", body: "replaced", mode: 0o4755},
		entry{name: "new", body: "n", mode: 0o6777},
		entry{name: "l", link: "/etc/passwd"},
	), root, was("suid", "gone"), time.Now())
	require.NoError(t, err)
	fi, err := os.Stat(suid)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid), "a set-id file the script rewrote comes back without its set-id bits")
	fi, err = os.Stat(filepath.Join(root, "new"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o777), fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid), "set-id bits dropped")
	require.NoFileExists(t, filepath.Join(root, "gone"))
	target, err := os.Readlink(filepath.Join(root, "l"))
	require.NoError(t, err)
	require.Equal(t, "/etc/passwd", target, "a link is restored as a link, never followed")
	require.Equal(t, []sandbox.FileChange{
		{Path: "gone", Change: sandbox.FileDeleted},
		{Path: "l", Change: sandbox.FileCreated},
		{Path: "new", Change: sandbox.FileCreated, Size: 1, SHA256: "1b16b1df538ba12dc3f97edbb85caa7050d46c148134290feba80f8236c83db9"},
		{Path: "suid", Change: sandbox.FileModified, Size: 8, SHA256: sha256Hex("replaced")},
	}, changes)
	left, err := filepath.Glob(filepath.Join(root, ".sandboxrun-*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary files left")
}

func TestWriteTreeRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "a", "b", "f"), []byte("data"), 0o640))
	require.NoError(t, os.Symlink("b/f", filepath.Join(src, "a", "l")))
	var buf bytes.Buffer
	seen, err := sandbox.WriteTree(&buf, src, 65532, 65532)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "a/b", "a/b/f", "a/l"}, keys(seen))
	_, err = handBack(t, &buf, dst, nil, time.Now())
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dst, "a", "l"))
	require.NoError(t, err)
	require.Equal(t, "data", string(b))
	size, err := sandbox.TreeSize(src, 1<<30)
	require.NoError(t, err)
	require.Equal(t, int64(sandbox.PageSize), size)
}

// TestReadTreeQuickCheck: a file with the same size and time is skipped only
// when its host copy is older than the copy in, so a write in the sandbox
// (which moves the time forward) is never mistaken for no change.
func TestReadTreeQuickCheck(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	path := filepath.Join(root, "f")
	write := func(mtime time.Time) {
		require.NoError(t, os.WriteFile(path, []byte("host"), 0o644))
		require.NoError(t, os.Chtimes(path, mtime, mtime))
	}
	stream := func(mtime time.Time) *bytes.Buffer {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4, ModTime: mtime}))
		_, err := tw.Write([]byte("box!"))
		require.NoError(t, err)
		require.NoError(t, tw.Close())
		return &buf
	}
	write(old)
	before := map[string]sandbox.Copied{"f": {Typ: tar.TypeReg, Size: 4, Perm: 0o644, MTime: old}}
	_, err := handBack(t, stream(old), root, before, time.Now())
	require.NoError(t, err)
	b, _ := os.ReadFile(path)
	require.Equal(t, "host", string(b), "same size and time, older than the copy: left alone")

	recent := time.Now().Truncate(time.Second)
	write(recent)
	before["f"] = sandbox.Copied{Typ: tar.TypeReg, Size: 4, Perm: 0o644, MTime: recent}
	_, err = handBack(t, stream(recent), root, before, time.Now())
	require.NoError(t, err)
	b, _ = os.ReadFile(path)
	require.Equal(t, "box!", string(b), "a file touched around the copy is always written back")
}

// TestReadTreeReportsChanges: the hand-back lists what the run created,
// modified and deleted, and nothing it left alone.
func TestReadTreeReportsChanges(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for name, body := range map[string]string{"keep.csv": "a,b\n", "edit.txt": "v1", "drop.txt": "x"} {
		p := filepath.Join(root, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	add(&tar.Header{Name: "keep.csv", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: old}, "a,b\n")
	add(&tar.Header{Name: "edit.txt", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: time.Now()}, "v2")
	add(&tar.Header{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Now()}, "")
	add(&tar.Header{Name: "out/r.json", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: time.Now()}, "{}")
	require.NoError(t, tw.Close())

	before := map[string]sandbox.Copied{}
	for name, size := range map[string]int64{"keep.csv": 4, "edit.txt": 2, "drop.txt": 1} {
		before[name] = sandbox.Copied{Typ: tar.TypeReg, Size: size, Perm: 0o644, MTime: old}
	}
	changes, err := handBack(t, &buf, root, before, time.Now())
	require.NoError(t, err)
	require.Equal(t, []sandbox.FileChange{
		{Path: "drop.txt", Change: sandbox.FileDeleted},
		{Path: "edit.txt", Change: sandbox.FileModified, Size: 2, SHA256: "fb04dcb6970e4c3d1873de51fd5a50d7bb46b3383113602665c350ec40b5f990"},
		{Path: "out/r.json", Change: sandbox.FileCreated, Size: 2, SHA256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
	}, changes)
	b, err := os.ReadFile(filepath.Join(root, "out", "r.json"))
	require.NoError(t, err)
	require.Equal(t, "{}", string(b))
	require.NoFileExists(t, filepath.Join(root, "drop.txt"))
}

func keys(m map[string]sandbox.Copied) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
