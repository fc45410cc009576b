package docker

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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

func TestReadTreeStaysInside(t *testing.T) {
	for _, name := range []string{"../evil", "a/../../evil", "/../evil"} {
		root := t.TempDir()
		err := readTree(tarOf(t, entry{name: name, body: "x"}), root, nil, time.Now())
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
	err := readTree(tarOf(t, entry{name: "d", dir: true, mode: 0o755}, entry{name: "d/x", body: "in"}, entry{name: "f", body: "new"}), root, nil, time.Now())
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
	err := readTree(tarOf(t,
		entry{name: "suid", body: "replaced", mode: 0o4755},
		entry{name: "new", body: "n", mode: 0o6777},
		entry{name: "l", link: "/etc/passwd"},
	), root, map[string]bool{"suid": true, "gone": true}, time.Now())
	require.NoError(t, err)
	b, err := os.ReadFile(suid)
	require.NoError(t, err)
	require.Equal(t, "orig", string(b), "a set-id file is never replaced")
	fi, err := os.Stat(filepath.Join(root, "new"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o777), fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid), "set-id bits dropped")
	require.NoFileExists(t, filepath.Join(root, "gone"))
	target, err := os.Readlink(filepath.Join(root, "l"))
	require.NoError(t, err)
	require.Equal(t, "/etc/passwd", target, "a link is restored as a link, never followed")
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
	seen, err := writeTree(&buf, src, 65532, 65532)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"a/b/f": true, "a/l": true}, seen)
	require.NoError(t, readTree(&buf, dst, nil, time.Now()))
	b, err := os.ReadFile(filepath.Join(dst, "a", "l"))
	require.NoError(t, err)
	require.Equal(t, "data", string(b))
	size, err := treeSize(src, 1<<30)
	require.NoError(t, err)
	require.Equal(t, int64(pageSize), size)
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
	require.NoError(t, readTree(stream(old), root, nil, time.Now()))
	b, _ := os.ReadFile(path)
	require.Equal(t, "host", string(b), "same size and time, older than the copy: left alone")

	recent := time.Now().Truncate(time.Second)
	write(recent)
	require.NoError(t, readTree(stream(recent), root, nil, time.Now()))
	b, _ = os.ReadFile(path)
	require.Equal(t, "box!", string(b), "a file touched around the copy is always written back")
}
