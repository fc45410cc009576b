package session

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// applyTo applies a layer to session id under a lease, as a run does.
func applyTo(t testing.TB, s *Store, id string, layer []byte) ([]sandbox.FileChange, error) {
	t.Helper()
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	defer l.Release()
	return l.ApplyChanges(context.Background(), bytes.NewReader(layer))
}

func layerOf(t testing.TB, files ...tarFile) []byte {
	t.Helper()
	b, err := buildTar(files...)
	require.NoError(t, err)
	return b
}

func wh(name string) tarFile { return tarFile{name: name} }

func change(p, kind, body string) sandbox.FileChange {
	c := sandbox.FileChange{Path: p, Change: kind}
	if kind != sandbox.FileDeleted {
		c.Size, c.SHA256 = int64(len(body)), sum(body)
	}
	return c
}

func TestApplyChanges(t *testing.T) {
	outside := newSentinel(t)
	tests := []struct {
		name  string
		setup func(t *testing.T, ws string)
		layer []tarFile
		want  []sandbox.FileChange
		check func(t *testing.T, ws string)
	}{{
		name:  "files and folders created, modes kept, set-id bits dropped",
		layer: []tarFile{{name: "d/", typ: tar.TypeDir, mode: 0o750}, {name: "d/run.sh", body: "#!/bin/sh", mode: 0o4755}, {name: "new.txt", body: "hi"}},
		want:  []sandbox.FileChange{change("d/run.sh", sandbox.FileCreated, "#!/bin/sh"), change("new.txt", sandbox.FileCreated, "hi")},
		check: func(t *testing.T, ws string) {
			requireMode(t, filepath.Join(ws, "d/run.sh"), 0o755)
			requireMode(t, filepath.Join(ws, "d"), 0o750|os.ModeDir)
		},
	}, {
		name:  "a file modified is replaced whole, a copy-up without change is left alone",
		setup: func(t *testing.T, ws string) { write(t, ws, "a", "old"); write(t, ws, "same", "same") },
		layer: []tarFile{{name: "a", body: "new"}, {name: "same", body: "same"}},
		want:  []sandbox.FileChange{change("a", sandbox.FileModified, "new")},
	}, {
		name: "whiteouts delete a file and a folder with what it holds",
		setup: func(t *testing.T, ws string) {
			write(t, ws, "f", "x")
			write(t, ws, "d/1", "1")
			write(t, ws, "d/e/2", "2")
		},
		layer: []tarFile{wh(".wh.f"), wh(".wh.d"), wh(".wh.missing")},
		want:  []sandbox.FileChange{change("d/1", sandbox.FileDeleted, ""), change("d/e/2", sandbox.FileDeleted, ""), change("f", sandbox.FileDeleted, "")},
		check: func(t *testing.T, ws string) { requireGone(t, ws, "d"); requireGone(t, ws, "f") },
	}, {
		name: "an opaque folder loses what it held, keeps what the layer adds",
		setup: func(t *testing.T, ws string) {
			write(t, ws, "d/a", "a")
			write(t, ws, "d/b", "b")
			write(t, ws, "keep", "k")
		},
		layer: []tarFile{{name: "d/", typ: tar.TypeDir}, {name: "d/c", body: "c"}, wh("d/.wh..wh..opq")},
		want:  []sandbox.FileChange{change("d/a", sandbox.FileDeleted, ""), change("d/b", sandbox.FileDeleted, ""), change("d/c", sandbox.FileCreated, "c")},
		check: func(t *testing.T, ws string) { require.FileExists(t, filepath.Join(ws, "keep")) },
	}, {
		name:  "a folder replaced by a file",
		setup: func(t *testing.T, ws string) { write(t, ws, "d/x", "x") },
		layer: []tarFile{{name: "d", body: "file now"}},
		want:  []sandbox.FileChange{change("d/x", sandbox.FileDeleted, ""), change("d", sandbox.FileCreated, "file now")},
	}, {
		name:  "a file replaced by a folder",
		setup: func(t *testing.T, ws string) { write(t, ws, "f", "x") },
		layer: []tarFile{{name: "f/", typ: tar.TypeDir}, wh("f/.wh..wh..opq"), {name: "f/y", body: "y"}},
		want:  []sandbox.FileChange{change("f", sandbox.FileDeleted, ""), change("f/y", sandbox.FileCreated, "y")},
	}, {
		name:  "a file deleted and written again is one modification",
		setup: func(t *testing.T, ws string) { write(t, ws, "f", "x") },
		layer: []tarFile{wh(".wh.f"), {name: "f", body: "y"}},
		want:  []sandbox.FileChange{change("f", sandbox.FileModified, "y")},
	}, {
		name: "a link in the workspace where the layer has a folder is replaced, never followed",
		setup: func(t *testing.T, ws string) {
			require.NoError(t, os.Symlink(outside.dir, filepath.Join(ws, "l")))
		},
		layer: []tarFile{{name: "l/secret", body: "overwritten?"}},
		want:  []sandbox.FileChange{change("l", sandbox.FileDeleted, ""), change("l/secret", sandbox.FileCreated, "overwritten?")},
	}, {
		name: "a whiteout under a link deletes nothing through it",
		setup: func(t *testing.T, ws string) {
			require.NoError(t, os.Symlink(outside.dir, filepath.Join(ws, "l")))
		},
		layer: []tarFile{wh("l/.wh.secret"), wh("l/.wh..wh..opq")},
		want:  []sandbox.FileChange{},
		check: func(t *testing.T, ws string) { require.FileExists(t, outside.path) },
	}, {
		name:  "symlinks are made as links, whatever they point to",
		setup: func(t *testing.T, ws string) { write(t, ws, "l", "was a file") },
		layer: []tarFile{{name: "l", typ: tar.TypeSymlink, link: "/etc/shadow"}, {name: "up", typ: tar.TypeSymlink, link: "../../.."}},
		want:  []sandbox.FileChange{{Path: "l", Change: sandbox.FileModified}, {Path: "up", Change: sandbox.FileCreated}},
		check: func(t *testing.T, ws string) {
			target, err := os.Readlink(filepath.Join(ws, "l"))
			require.NoError(t, err)
			require.Equal(t, "/etc/shadow", target)
		},
	}, {
		name:  "a hard link in the layer is a copy of the earlier file",
		layer: []tarFile{{name: "a", body: "same"}, {name: "b", typ: tar.TypeLink, link: "a"}},
		want:  []sandbox.FileChange{change("a", sandbox.FileCreated, "same"), change("b", sandbox.FileCreated, "same")},
		check: func(t *testing.T, ws string) {
			a, b := statT(t, filepath.Join(ws, "a")), statT(t, filepath.Join(ws, "b"))
			require.False(t, os.SameFile(a, b), "the two names must not share an inode")
		},
	}, {
		name: "names a run may give its files are kept, however odd",
		layer: []tarFile{{name: "back\\slash", body: "1"}, {name: "new\nline", body: "2"}, {name: "%2e%2e", body: "3"},
			{name: strings.Repeat("d/", 40) + "deep", body: "4"}},
		want: []sandbox.FileChange{change("%2e%2e", sandbox.FileCreated, "3"), change("back\\slash", sandbox.FileCreated, "1"),
			change(strings.Repeat("d/", 40)+"deep", sandbox.FileCreated, "4"), change("new\nline", sandbox.FileCreated, "2")},
	}, {
		name:  "the store's reserved names are skipped",
		layer: []tarFile{{name: fsroot.TempPrefix + "x", body: "hidden"}, {name: "d/" + fsroot.TempPrefix + "y/z", body: "hidden"}},
		want:  []sandbox.FileChange{},
		check: func(t *testing.T, ws string) { requireGone(t, ws, fsroot.TempPrefix+"x") },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, Limits{}, withoutSync())
			id := create(t, s)
			ws := wsPath(s, id)
			if tt.setup != nil {
				tt.setup(t, ws)
				recountNow(t, s, id) // the setup wrote behind the store's back
			}
			got, err := applyTo(t, s, id, layerOf(t, tt.layer...))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			if tt.check != nil {
				tt.check(t, ws)
			}
			outside.check(t)
			requireNoTemp(t, s, id)
			requireCounted(t, s, id)
		})
	}
}

func TestApplyChangesKeepsSharedFiles(t *testing.T) {
	s := openStore(t, Limits{}, withoutSync())
	id := create(t, s)
	ws := wsPath(s, id)
	write(t, ws, "f", "before")
	// A second name for the file, as a snapshot holds it.
	require.NoError(t, os.Link(filepath.Join(ws, "f"), filepath.Join(t.TempDir(), "snap")))
	shared := statT(t, filepath.Join(ws, "f"))
	_, err := applyTo(t, s, id, layerOf(t, tarFile{name: "f", body: "after"}))
	require.NoError(t, err)
	require.False(t, os.SameFile(shared, statT(t, filepath.Join(ws, "f"))), "a changed file must be a new file")
	require.Equal(t, uint64(1), statT(t, filepath.Join(ws, "f")).Sys().(*syscall.Stat_t).Nlink)
}

func TestApplyChangesRefusals(t *testing.T) {
	tests := []struct {
		name  string
		layer []tarFile
		is    error
	}{
		{"a device", []tarFile{{name: "ok", body: "x"}, {name: "dev", typ: tar.TypeChar}}, ErrBadLayer},
		{"a fifo", []tarFile{{name: "fifo", typ: tar.TypeFifo}}, ErrBadLayer},
		{"a name climbing out", []tarFile{{name: "ok", body: "x"}, {name: "../x", body: "x"}}, ErrBadLayer},
		{"an absolute name", []tarFile{{name: "/etc/x", body: "x"}}, ErrBadLayer},
		{"a whiteout climbing out", []tarFile{wh("a/.wh..."), {name: "ok", body: "x"}}, ErrBadLayer},
		{"a whiteout of \"..\" in a folder (not its folder's)", []tarFile{wh("keep/x/.wh...")}, ErrBadLayer},
		{"an absolute whiteout", []tarFile{wh("/.wh.keep")}, ErrBadLayer},
		{"a folder named as a whiteout", []tarFile{{name: ".wh.d/x", body: "x"}}, ErrBadLayer},
		{"a hard link to outside the layer", []tarFile{{name: "l", typ: tar.TypeLink, link: "/etc/passwd"}}, ErrBadLayer},
		{"a file under a file", []tarFile{{name: "a", body: "x"}, {name: "a/b", body: "y"}}, ErrBadLayer},
		{"a file where the layer has a folder", []tarFile{{name: "a/b", body: "y"}, {name: "a", body: "x"}}, ErrBadLayer},
		{"past the entry count", []tarFile{{name: "1", body: "1"}, {name: "2", body: "2"}, {name: "3", body: "3"}, {name: "4", body: "4"}}, ErrLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, Limits{Quota: 4096, MaxFiles: 3}, withoutSync())
			id := create(t, s)
			put(t, s, id, "keep", "keep")
			before := treeHash(t, wsPath(s, id))
			_, err := applyTo(t, s, id, layerOf(t, tt.layer...))
			require.ErrorIs(t, err, tt.is)
			require.Equal(t, before, treeHash(t, wsPath(s, id)), "a refused layer changed the workspace")
			requireNoTemp(t, s, id)
		})
	}
}

func TestApplyChangesFullSession(t *testing.T) {
	s := openStore(t, Limits{Quota: 10}, withoutSync())
	id := create(t, s)
	put(t, s, id, "a", "0123456789")
	// Full: a rewrite of the same size, and a deletion, still apply.
	got, err := applyTo(t, s, id, layerOf(t, tarFile{name: "a", body: "abcdefghij"}))
	require.NoError(t, err)
	require.Equal(t, []sandbox.FileChange{change("a", sandbox.FileModified, "abcdefghij")}, got)
	got, err = applyTo(t, s, id, layerOf(t, tarFile{name: "b", body: "1"}))
	require.NoError(t, err, "what does not fit is left out (TestApplyChangesKeepsWhatFits)")
	require.Empty(t, got)
	got, err = applyTo(t, s, id, layerOf(t, wh(".wh.a")))
	require.NoError(t, err)
	require.Equal(t, []sandbox.FileChange{change("a", sandbox.FileDeleted, "")}, got)
	info, err := s.Get(owner, id)
	require.NoError(t, err)
	require.Zero(t, info.BytesUsed)
}

func TestApplyChangesAfterRelease(t *testing.T) {
	s := openStore(t, Limits{}, withoutSync())
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	l.Release()
	_, err = l.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t, tarFile{name: "a", body: "x"})))
	require.ErrorIs(t, err, ErrNotFound)
	requireGone(t, wsPath(s, id), "a")
}

func TestApplyChangesCancelled(t *testing.T) {
	s := openStore(t, Limits{}, withoutSync())
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	defer l.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.ApplyChanges(ctx, bytes.NewReader(layerOf(t, tarFile{name: "a", body: "x"})))
	require.ErrorIs(t, err, context.Canceled)
	requireGone(t, wsPath(s, id), "a")
}

func TestFolderApplyChanges(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "old", "old")
	ro, err := OpenFolder(dir, Limits{}, false)
	require.NoError(t, err)
	defer ro.Close()
	_, err = ro.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t, tarFile{name: "a", body: "x"})))
	require.ErrorIs(t, err, ErrReadOnly)
	requireGone(t, dir, "a")

	rw, err := OpenFolder(dir, Limits{MaxDepth: 2}, true)
	require.NoError(t, err)
	defer rw.Close()
	deep := "a/b/c/d/e"
	got, err := rw.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t, tarFile{name: deep, body: "x"}, wh(".wh.old"))))
	require.NoError(t, err)
	require.Equal(t, []sandbox.FileChange{change("old", sandbox.FileDeleted, ""), change(deep, sandbox.FileCreated, "x")}, got)
	require.FileExists(t, filepath.Join(dir, deep))
}

// recountNow sets the store's counts of session id from a walk, as Open
// does: for files a test wrote behind the store's back.
func recountNow(t testing.TB, s *Store, id string) {
	t.Helper()
	used, entries, err := s.usage(id, false)
	require.NoError(t, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	s.setUsedLocked(ss, used)
	ss.entries = entries
}

// requireCounted fails when the store's byte or entry count of session id
// drifted from what a walk of its workspace finds: runs no longer walk
// it, so the counts ApplyChanges keeps are the quota's budget.
func requireCounted(t testing.TB, s *Store, id string) {
	t.Helper()
	used, entries, err := s.usage(id, false)
	require.NoError(t, err)
	s.mu.Lock()
	ss := s.sessions[id]
	gotUsed, gotEntries := ss.used, ss.entries
	s.mu.Unlock()
	require.Equal(t, used, gotUsed, "the session's bytes drifted from its files")
	require.Equal(t, entries, gotEntries, "the session's entries drifted from its files")
}

func write(t testing.TB, ws, p, body string) {
	t.Helper()
	full := filepath.Join(ws, p)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(body), 0o644))
}

func statT(t testing.TB, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	return fi
}

func requireMode(t testing.TB, p string, mode os.FileMode) {
	t.Helper()
	require.Equal(t, mode, statT(t, p).Mode())
}

func requireGone(t testing.TB, ws, p string) {
	t.Helper()
	_, err := os.Lstat(filepath.Join(ws, p))
	require.ErrorIs(t, err, os.ErrNotExist)
}
