package session

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

type tarFile struct {
	name  string
	body  string
	typ   byte
	mode  int64
	link  string
	pax   map[string]string
	forma tar.Format
}

// tarOf builds a tar.
func tarOf(t testing.TB, files ...tarFile) io.Reader {
	t.Helper()
	b, err := buildTar(files...)
	require.NoError(t, err)
	return bytes.NewReader(b)
}

func buildTar(files ...tarFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		typ := f.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		size := int64(len(f.body))
		if typ != tar.TypeReg {
			size = 0
		}
		hdr := &tar.Header{Name: f.name, Typeflag: typ, Mode: mode, Size: size, Linkname: f.link, PAXRecords: f.pax, Format: f.forma}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(f.body)); err != nil {
				return nil, err
			}
		}
	}
	err := tw.Close()
	return buf.Bytes(), err
}

func TestPutTarRefusals(t *testing.T) {
	s := openStore(t, Limits{MaxFiles: 5, MaxDepth: 4})
	id := create(t, s)
	put(t, s, id, "keep.txt", "keep")
	put(t, s, id, "wsfile", "f")
	put(t, s, id, "wsdir/x", "x")
	longDotDot := strings.Repeat("a/", 60) + strings.Repeat("../", 70) + "x"
	tests := []struct {
		name  string
		files []tarFile
		is    error
		msg   string
	}{
		{"absolute", []tarFile{{name: "/etc/cron.d/x", body: "x"}}, ErrBadPath, "absolute"},
		{"dotdot", []tarFile{{name: "../x", body: "x"}}, ErrBadPath, ".."},
		{"dotdot inside", []tarFile{{name: "a/../../x", body: "x"}}, ErrBadPath, ".."},
		{"dot-slash dotdot", []tarFile{{name: "./../x", body: "x"}}, ErrBadPath, ".."},
		{"symlink", []tarFile{{name: "l", typ: tar.TypeSymlink, link: "/etc/passwd"}}, ErrBadTar, "links"},
		{"hard link", []tarFile{{name: "ok", body: "x"}, {name: "h", typ: tar.TypeLink, link: "ok"}}, ErrBadTar, "links"},
		{"char device", []tarFile{{name: "c", typ: tar.TypeChar}}, ErrBadTar, "not a regular file"},
		{"block device", []tarFile{{name: "b", typ: tar.TypeBlock}}, ErrBadTar, "not a regular file"},
		{"fifo", []tarFile{{name: "p", typ: tar.TypeFifo}}, ErrBadTar, "not a regular file"},
		{"setuid", []tarFile{{name: "s", body: "x", mode: 0o4755}}, ErrBadTar, "set-uid"},
		{"setgid", []tarFile{{name: "s", body: "x", mode: 0o2755}}, ErrBadTar, "set-uid"},
		{"sticky dir", []tarFile{{name: "d/", typ: tar.TypeDir, mode: 0o1777}}, ErrBadTar, "sticky"},
		{"pax long dotdot", []tarFile{{name: longDotDot, body: "x", forma: tar.FormatPAX}}, ErrBadPath, ""},
		{"gnu long dotdot", []tarFile{{name: longDotDot, body: "x", forma: tar.FormatGNU}}, ErrBadPath, ""},
		{"file then folder", []tarFile{{name: "x", body: "1"}, {name: "x/y", body: "2"}}, ErrBadTar, "a file earlier in the archive and a folder"},
		{"folder then file", []tarFile{{name: "x/", typ: tar.TypeDir}, {name: "x", body: "2"}}, ErrBadTar, "file and a folder"},
		{"too many", []tarFile{{name: "1"}, {name: "2"}, {name: "3"}, {name: "4"}, {name: "5"}, {name: "6"}}, ErrLimit, "sessions.max_files"},
		{"too many with workspace", []tarFile{{name: "1"}, {name: "2"}, {name: "3"}}, ErrLimit, "sessions.max_files"},
		{"too deep", []tarFile{{name: "a/b/c/d/e", body: "x"}}, ErrLimit, "sessions.max_depth"},
		{"control char", []tarFile{{name: "a\nb", body: "x"}}, ErrBadPath, "control"},
		{"backslash", []tarFile{{name: `..\x`, body: "x"}}, ErrBadPath, "backslash"},
		{"reserved", []tarFile{{name: fsroot.TempPrefix + "x", body: "x"}}, ErrBadPath, "reserved"},
		{"file over workspace folder", []tarFile{{name: "new", body: "n"}, {name: "wsdir", body: "x"}}, ErrBadPath, "folder"},
		{"into workspace file", []tarFile{{name: "new", body: "n"}, {name: "wsfile/x", body: "x"}}, ErrBadPath, "the workspace has a file"},
		{"folder over workspace file", []tarFile{{name: "wsfile/", typ: tar.TypeDir}}, ErrBadPath, "a file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := treeHash(t, wsPath(s, id))
			info0, _ := s.Get(owner, id)
			_, err := s.PutTar(owner, id, tarOf(t, tt.files...))
			require.ErrorIs(t, err, tt.is)
			require.ErrorContains(t, err, tt.msg)
			require.Equal(t, before, treeHash(t, wsPath(s, id)), "a refused tar leaves nothing")
			info1, _ := s.Get(owner, id)
			require.Equal(t, info0.BytesUsed, info1.BytesUsed)
		})
	}
	for _, raw := range []string{"not a tar at all, just text that is longer than one block" + strings.Repeat("!", 600), "\x00\x01"} {
		_, err := s.PutTar(owner, id, strings.NewReader(raw))
		require.ErrorIs(t, err, ErrBadTar)
	}
	// PAX and GNU records that rename an innocent entry.
	for _, evil := range []string{"../../evil", "/etc/evil", "a/./b", "ok/" + fsroot.TempPrefix + "x"} {
		for _, typ := range []byte{tar.TypeXHeader, tar.TypeGNULongName} {
			_, err := s.PutTar(owner, id, bytes.NewReader(renamed(t, typ, evil)))
			require.ErrorIs(t, err, ErrBadPath, "%c %s", typ, evil)
		}
	}
	for _, typ := range []byte{tar.TypeXHeader, tar.TypeGNULongName} { // the control: renaming works
		files, err := s.PutTar(owner, id, bytes.NewReader(renamed(t, typ, "renamed.txt")))
		require.NoError(t, err)
		require.Equal(t, "renamed.txt", files[0].Path)
		require.Equal(t, "hi", readAll(t, s, id, "renamed.txt"))
	}
	// A header claiming more bytes than follow.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "trunc", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1 << 20}))
	_, _ = tw.Write([]byte("short"))
	_, err := s.PutTar(owner, id, bytes.NewReader(buf.Bytes()))
	require.ErrorIs(t, err, ErrBadTar)
	requireNoTemp(t, s, id)
}

func TestPutTarQuota(t *testing.T) {
	const quota = 256 << 10
	s := openStore(t, Limits{Quota: quota})
	id := create(t, s)
	put(t, s, id, "old.bin", strings.Repeat("o", 200<<10))
	before := treeHash(t, wsPath(s, id))

	// A tar bomb: 64 MiB of zeros in one entry, streamed.
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		_ = tw.WriteHeader(&tar.Header{Name: "a/small", Typeflag: tar.TypeReg, Mode: 0o644, Size: 10})
		_, _ = tw.Write([]byte("0123456789"))
		_ = tw.WriteHeader(&tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Mode: 0o644, Size: 64 << 20})
		_, err := io.Copy(tw, io.LimitReader(zeros{}, 64<<20))
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	cr := &countingReader{r: pr}
	_, err := s.PutTar(owner, id, cr)
	pr.Close()
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitQuota, le.Limit)
	require.LessOrEqual(t, cr.n, int64(quota+64<<10), "read far past the quota")
	require.Equal(t, before, treeHash(t, wsPath(s, id)))
	requireNoTemp(t, s, id)

	// Replacing old.bin may reuse its bytes.
	files, err := s.PutTar(owner, id, tarOf(t, tarFile{name: "old.bin", body: strings.Repeat("n", 200<<10)}))
	require.NoError(t, err)
	require.Len(t, files, 1)
	info, err := s.Get(owner, id)
	require.NoError(t, err)
	require.Equal(t, int64(200<<10), info.BytesUsed)
}

func TestTarRoundTrip(t *testing.T) {
	s := openStore(t, Limits{})
	a, b := create(t, s), create(t, s)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	files, err := s.PutTar(owner, a, tarOf(t,
		tarFile{name: "./", typ: tar.TypeDir},
		tarFile{name: "./data/", typ: tar.TypeDir, mode: 0o700},
		tarFile{name: "./data/bytes.bin", body: string(all)},
		tarFile{name: "empty/", typ: tar.TypeDir},
		tarFile{name: "run.sh", body: "#!/bin/sh\necho hi\n", mode: 0o777},
		tarFile{name: "zero", body: ""},
		tarFile{name: "dup", body: "first"},
		tarFile{name: "dup", body: "second wins"},
		tarFile{name: "deep/er/still/" + strings.Repeat("n", 120), body: "long name", forma: tar.FormatPAX},
		tarFile{name: "ünï/cödé.txt", body: "utf8"},
	))
	require.NoError(t, err)
	require.Len(t, files, 6)
	require.Equal(t, "second wins", readAll(t, s, a, "dup"))
	for p, want := range map[string]os.FileMode{"data": 0o755, "data/bytes.bin": 0o644, "run.sh": 0o755, "empty": 0o755} {
		st, err := os.Stat(filepath.Join(wsPath(s, a), p))
		require.NoError(t, err)
		require.Equal(t, want, st.Mode().Perm(), p)
	}
	listA, err := s.ListFiles(owner, a, "")
	require.NoError(t, err)
	info, err := s.Get(owner, a)
	require.NoError(t, err)
	require.Equal(t, int64(256+18+11+9+4), info.BytesUsed)

	var buf bytes.Buffer
	require.NoError(t, s.WriteTar(owner, a, &buf))
	_, err = s.PutTar(owner, b, &buf)
	require.NoError(t, err)
	listB, err := s.ListFiles(owner, b, "")
	require.NoError(t, err)
	require.Equal(t, strip(listA), strip(listB))
	require.Len(t, listA, 12)
}

// strip keeps what a round trip must preserve.
func strip(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Entry{Path: e.Path, Type: e.Type, Size: e.Size, SHA256: e.SHA256}
	}
	return out
}

// renamed builds a tar whose one entry "fine" is renamed to name by a PAX
// path record (typ 'x') or a GNU long name (typ 'L') written by hand, the
// way an attacker would.
func renamed(t testing.TB, typ byte, name string) []byte {
	t.Helper()
	body := name
	if typ == tar.TypeXHeader {
		rec := " path=" + name + "\n"
		n := len(rec) + 2
		for len(strconv.Itoa(n))+len(rec) != n {
			n++
		}
		body = strconv.Itoa(n) + rec
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "meta", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), Format: tar.FormatUSTAR}))
	_, err := tw.Write([]byte(body))
	require.NoError(t, err)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "fine", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2, Format: tar.FormatUSTAR}))
	_, err = tw.Write([]byte("hi"))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	b := buf.Bytes()
	b[156] = typ // the first header becomes the special record
	copy(b[148:156], "        ")
	var chk int64
	for _, c := range b[:512] {
		chk += int64(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", chk))
	return b
}

// TestPutTarUndo fails the move into the workspace half way: what was
// moved in goes, what was replaced comes back.
func TestPutTarUndo(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	put(t, s, id, "b/3", "old three")
	put(t, s, id, "a/keep", "keep")
	require.NoError(t, os.Symlink("a", filepath.Join(wsPath(s, id), "c"))) // replaced by a file, then restored
	before := treeHash(t, wsPath(s, id))
	info0, err := s.Get(owner, id)
	require.NoError(t, err)

	moveFault = func(p string) error {
		if p == "z" {
			return errors.New("injected failure")
		}
		return nil
	}
	t.Cleanup(func() { moveFault = nil })
	_, err = s.PutTar(owner, id, tarOf(t,
		tarFile{name: "a/1", body: "one"},
		tarFile{name: "b/3", body: "new three"},
		tarFile{name: "c", body: "was a link"},
		tarFile{name: "new/dir/x", body: "x"},
		tarFile{name: "z", body: "never"},
	))
	require.ErrorContains(t, err, "injected failure")
	require.Equal(t, before, treeHash(t, wsPath(s, id)), "undo restores the workspace")
	require.Equal(t, "old three", readAll(t, s, id, "b/3"))
	info1, err := s.Get(owner, id)
	require.NoError(t, err)
	require.Equal(t, info0.BytesUsed, info1.BytesUsed)
	requireNoTemp(t, s, id)
}
