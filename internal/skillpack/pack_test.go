package skillpack

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/skillstore"
)

var big = Limit{Max: 1 << 20, Key: "kubernetes.skill_send_max"}

// skillDir makes a small skill: SKILL.md, a script with mode perm, a
// folder and a link to the script.
func skillDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hello")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: hello\n---\nhi\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "hello.sh"), []byte("#!/bin/sh\necho hi\n"), perm))
	require.NoError(t, os.Symlink("scripts/hello.sh", filepath.Join(dir, "run")))
	return dir
}

type entry struct {
	typ  byte
	mode int64
	link string
	body string
}

func entries(t *testing.T, a *Archive) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(a.Tar))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[h.Name] = entry{typ: h.Typeflag, mode: h.Mode, link: h.Linkname, body: string(b)}
	}
}

// Everything is read-only in the archive; a script keeps its execute bit
// and loses its set-id bit; the digest is the folder's skillstore digest.
func TestPackModesAndDigest(t *testing.T) {
	dir := skillDir(t, 0o700)
	require.NoError(t, os.Chmod(filepath.Join(dir, "scripts", "hello.sh"), 0o4755))
	a, err := Pack("hello", dir, big)
	require.NoError(t, err)
	require.Equal(t, map[string]entry{
		"SKILL.md":         {typ: tar.TypeReg, mode: 0o444, body: "---\nname: hello\n---\nhi\n"},
		"scripts/":         {typ: tar.TypeDir, mode: 0o555},
		"scripts/hello.sh": {typ: tar.TypeReg, mode: 0o555, body: "#!/bin/sh\necho hi\n"},
		"run":              {typ: tar.TypeSymlink, mode: 0o777, link: "scripts/hello.sh"},
	}, entries(t, a))
	want, err := skillstore.Digest(dir)
	require.NoError(t, err)
	require.Equal(t, want, a.Digest)
	require.Equal(t, int64(4*PageSize), a.Size, "two one-page files, a folder and a link")
}

// One content packs to the same bytes and digest wherever its folder is,
// whatever its times and exact modes; a change of content or of a script's
// execute bit changes the digest.
func TestPackStable(t *testing.T) {
	a, err := Pack("hello", skillDir(t, 0o755), big)
	require.NoError(t, err)
	other := skillDir(t, 0o711)
	old := time.Now().Add(-48 * time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(other, "SKILL.md"), old, old))
	b, err := Pack("hello", other, big)
	require.NoError(t, err)
	require.Equal(t, a.Digest, b.Digest)
	require.Equal(t, a.Tar, b.Tar)

	notExec, err := Pack("hello", skillDir(t, 0o644), big)
	require.NoError(t, err)
	require.NotEqual(t, a.Digest, notExec.Digest)
	edited := skillDir(t, 0o755)
	require.NoError(t, os.WriteFile(filepath.Join(edited, "SKILL.md"), []byte("changed"), 0o644))
	c, err := Pack("hello", edited, big)
	require.NoError(t, err)
	require.NotEqual(t, a.Digest, c.Digest)
}

// Input classes the packer must refuse, each naming the entry and the fix.
func TestPackRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		err   error
		msg   string
	}{
		{"absolute link", func(t *testing.T, dir string) { link(t, "/etc/passwd", dir, "pw") }, ErrUnsafe, "link pw -> /etc/passwd is absolute"},
		{"link climbing out", func(t *testing.T, dir string) { link(t, "../../etc/passwd", dir, "scripts/pw") }, ErrUnsafe, "climbs out"},
		{"link to the parent", func(t *testing.T, dir string) { link(t, "..", dir, "up") }, ErrUnsafe, "climbs out"},
		{"link out through a link", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(dir), "secret"), []byte("s"), 0o644))
			link(t, ".", dir, "self")
			link(t, "self/../secret", dir, "leak") // written inside, resolves outside
		}, ErrUnsafe, "link leak -> self/../secret resolves outside"},
		{"dangling link", func(t *testing.T, dir string) { link(t, "nowhere", dir, "gone") }, ErrUnsafe, "does not resolve"},
		{"fifo", func(t *testing.T, dir string) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "scripts", "pipe"), 0o644))
		}, ErrUnsafe, "scripts/pipe is a named pipe"},
		{"socket", func(t *testing.T, dir string) {
			l, err := net.Listen("unix", filepath.Join(dir, "sock"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
		}, ErrUnsafe, "sock is a socket"},
		{"over the cap", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "assets.bin"), bytes.Repeat([]byte("x"), 1<<20), 0o644))
		}, ErrTooLarge, "skill hello takes 1.016MiB in the sandbox (files counted in whole 4096-byte pages, a page per folder and link), over kubernetes.skill_send_max 1MiB: raise kubernetes.skill_send_max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := skillDir(t, 0o755)
			tc.setup(t, dir)
			a, err := Pack("hello", dir, big)
			require.ErrorIs(t, err, tc.err)
			require.ErrorContains(t, err, tc.msg)
			require.Nil(t, a)
		})
	}
}

func link(t *testing.T, target, dir, name string) {
	t.Helper()
	require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
}

// A link kept in an archive stays inside the skill wherever the archive is
// unpacked: opened through an os.Root of the unpacked folder (which
// refuses a path that escapes it), it never escapes.
func FuzzPackLinks(f *testing.F) {
	for _, s := range []string{"scripts/hello.sh", "./SKILL.md", "scripts/../SKILL.md", "self/scripts", "self/../hello/SKILL.md",
		"../hello/SKILL.md", "scripts/../../x", "/etc", "self", ".", "scripts//hello.sh", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if target == "" || strings.ContainsRune(target, 0) || len(target) > 200 {
			return
		}
		dir := skillDir(t, 0o755)
		link(t, ".", dir, "self")
		if err := os.Symlink(target, filepath.Join(dir, "scripts", "l")); err != nil {
			return
		}
		a, err := Pack("hello", dir, big)
		if err != nil {
			require.ErrorIs(t, err, ErrUnsafe)
			return
		}
		out := filepath.Join(t.TempDir(), "skills", "hello")
		require.NoError(t, os.MkdirAll(out, 0o755))
		unpack(t, a, out)
		root, err := os.OpenRoot(out)
		require.NoError(t, err)
		defer func() { _ = root.Close() }()
		_, err = root.Stat("scripts/l")
		require.NoError(t, err, "accepted link %q must resolve inside the unpacked skill", target)
	})
}

// unpack writes a's entries under dir (modes left writable for cleanup).
func unpack(t *testing.T, a *Archive, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(a.Tar))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(p, 0o755))
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b, 0o644))
		case tar.TypeSymlink:
			require.NoError(t, os.Symlink(h.Linkname, p))
		}
	}
}

// The host's cost of a sent skill: packing skills/hello (a cache miss),
// and taking it from the cache by its digest (every later run).
func BenchmarkPackHello(b *testing.B) {
	lim := Limit{Max: 1 << 20, Key: "k"}
	b.Run("pack", func(b *testing.B) {
		for b.Loop() {
			if _, err := Pack("hello", "../../skills/hello", lim); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		c := NewCache(lim, 1<<20)
		a, err := c.Get("hello", "../../skills/hello", "")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := c.Get("hello", "../../skills/hello", a.Digest); err != nil {
				b.Fatal(err)
			}
		}
	})
}
