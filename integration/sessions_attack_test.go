//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// TestSessionSymlinkAttacks: a run leaves links to the host's secrets, to
// /, to the sessions folder and to a folder of the host it guessed; no file
// call over HTTP reads, writes or removes anything through them, and no
// response carries a byte from outside the session.
func TestSessionSymlinkAttacks(t *testing.T) {
	t.Parallel()
	srv := startSessionServer(t, "")
	s := srv.create(t, "")
	other := srv.create(t, "")
	srv.put(t, other.ID, "secret.txt", []byte("the other session's secret\n"))

	// Outside every session: a folder the attacker knows the host path of.
	outside := t.TempDir()
	require.NoError(t, os.Chmod(outside, 0o755))
	victim := "sentinel " + sha(randomBytes(t, 32)) + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(outside, "victim.txt"), []byte(victim), 0o644))
	hostPasswd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	watch := map[string]string{"outside": outside, "other session": srv.workspace(other.ID)}
	before := map[string]string{}
	for name, dir := range watch {
		before[name] = treeDigest(t, dir)
	}
	wsNames := func() []string {
		des, err := os.ReadDir(filepath.Join(srv.dir, "ws"))
		require.NoError(t, err)
		var names []string
		for _, d := range des {
			names = append(names, d.Name())
		}
		return names
	}
	wsBefore := wsNames()
	_, err = os.Lstat("/tmp/x")
	tmpXAbsent := errors.Is(err, os.ErrNotExist)

	links := map[string]string{
		"leak":     "/etc/shadow",
		"d":        "/",
		"up":       "..",
		"abs":      "/etc/passwd",
		"c1":       "c2",
		"c2":       "c3",
		"c3":       "/etc",
		"host":     outside,
		"hostfile": filepath.Join(outside, "victim.txt"),
		"rel":      "../../../../../../../../..",
	}
	res := srv.python(t, s.ID, "import os\nfor name, target in "+pyDict(links)+".items():\n    os.symlink(target, name)\n")
	require.True(t, res.Success, res.Stderr)
	ch := changes(res)
	for name := range links {
		require.Equal(t, sandbox.FileChange{Path: name, Change: sandbox.FileCreated}, ch[name], "the run's link %s is handed back as a link", name)
	}

	// Every response is checked for bytes from outside.
	var bodies [][]byte
	check := func(c call) call {
		bodies = append(bodies, c.body)
		return c
	}
	refused := func(t *testing.T, method, p string, body []byte) call {
		t.Helper()
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		c := check(srv.do(t, method, "/v1/sessions/"+s.ID+"/files/"+p, r))
		require.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict}, c.status, "%s %s: %s", method, p, c)
		return c
	}
	for _, p := range []string{"leak", "abs", "hostfile", "d", "up", "c1", "c3", "rel"} {
		c := refused(t, "GET", p, nil)
		require.Equal(t, http.StatusConflict, c.status, "reading the link %s is refused as not a file: %s", p, c)
		require.Contains(t, string(c.body), links[p], "the refusal shows the link's target")
	}
	for _, p := range []string{"d/etc/passwd", "d/etc/shadow", "c1/passwd", "host/victim.txt", "up/" + other.ID + "/secret.txt", "rel/etc/passwd"} {
		refused(t, "GET", p, nil)
	}
	for _, p := range []string{"d/tmp/x", "host/new.txt", "host/victim.txt", "up/x", "up/" + other.ID + "/secret.txt", "c1/x", "rel/tmp/x"} {
		refused(t, "PUT", p, []byte("attacker\n"))
	}
	for _, p := range []string{"d/etc/hostname", "host/victim.txt", "up/" + other.ID + "/secret.txt", "up/" + other.ID, "c1/passwd"} {
		refused(t, "DELETE", p, nil)
	}

	// The listing shows the links with their targets and never goes
	// through them.
	l := srv.list(t, s.ID)
	for _, e := range l {
		require.NotContains(t, e.Path, "/", "nothing listed below a link: %+v", e)
	}
	byPath := entries(l)
	for name, target := range links {
		require.Equal(t, session.TypeSymlink, byPath[name].Type, name)
		require.Equal(t, target, byPath[name].Target, name)
		require.Empty(t, byPath[name].SHA256, name)
	}
	for _, p := range []string{"d", "host", "up"} {
		c := check(srv.do(t, "GET", "/v1/sessions/"+s.ID+"/files?path="+p, nil))
		if c.status == http.StatusOK {
			require.JSONEq(t, fmt.Sprintf(`{"files": [{"path": %q, "type": "symlink", "size": %d, "target": %q, "modified": %q}]}`,
				p, len(links[p]), links[p], byPath[p].Modified.Format("2006-01-02T15:04:05.999999999Z07:00")), string(c.body), "a sub-listing of a link is the link")
		} else {
			require.Contains(t, []int{http.StatusBadRequest, http.StatusConflict, http.StatusNotFound}, c.status, c.String())
		}
	}

	// The tar has the links as links and no host content.
	c := check(srv.do(t, "GET", "/v1/sessions/"+s.ID+"/files", nil, "Accept", "application/x-tar"))
	require.Equal(t, http.StatusOK, c.status, c.String())
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(c.body))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, byte(tar.TypeSymlink), h.Typeflag, "%s", h.Name)
		got[h.Name] = h.Linkname
	}
	require.Equal(t, links, got)

	// A later run gets the links back as links, and the host's folders
	// stay out of its sandbox.
	res = srv.python(t, s.ID, `
import os
print(os.readlink("host"), os.path.exists("host/victim.txt"))
`)
	require.True(t, res.Success, res.Stderr)
	require.Equal(t, outside+" False\n", res.Stdout)
	require.Empty(t, res.Files)

	// Deleting a link removes the link, never what it points to; putting a
	// file where a link was replaces the link itself.
	for _, p := range []string{"d", "host", "up", "c1"} {
		require.Equal(t, http.StatusNoContent, check(srv.do(t, "DELETE", "/v1/sessions/"+s.ID+"/files/"+p, nil)).status, p)
	}
	srv.put(t, s.ID, "hostfile", []byte("mine now\n"))
	fi, err := os.Lstat(filepath.Join(srv.workspace(s.ID), "hostfile"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "the link itself was replaced")

	for name, dir := range watch {
		require.Equal(t, before[name], treeDigest(t, dir), "nothing changed in %s", name)
	}
	require.Equal(t, victim, string(mustRead(t, filepath.Join(outside, "victim.txt"))))
	require.Equal(t, wsBefore, wsNames(), "nothing written beside the session folders")
	if tmpXAbsent {
		require.NoFileExists(t, "/tmp/x")
	}
	require.FileExists(t, "/etc/hostname")
	for _, b := range bodies {
		require.NotContains(t, string(b), "sentinel ", "no response carries the outside file")
		require.NotContains(t, string(b), "the other session's secret")
		require.False(t, bytes.Contains(b, hostPasswd), "no response carries the host's /etc/passwd")
	}
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+srv.skill)
}

// pyDict writes a Python dict literal of string pairs.
func pyDict(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for _, k := range keys {
		fmt.Fprintf(&b, "%q: %q, ", k, m[k])
	}
	b.WriteString("}")
	return b.String()
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// TestSessionPathAttacks: paths sent byte for byte (no client cleaning) that
// try to leave the session are refused with 400 by every file call, and
// nothing is read, written or removed.
func TestSessionPathAttacks(t *testing.T) {
	t.Parallel()
	srv := startSessionServer(t, "")
	s := srv.create(t, "")
	srv.put(t, s.ID, "a/b.txt", []byte("inside\n"))
	wsBefore := treeDigest(t, filepath.Join(srv.dir, "ws"))
	deep := strings.Repeat("d/", session.DefaultMaxDepth) + "f"
	paths := []string{
		"..",
		"../x",
		"a/../../x",
		"a/..",
		"./a/b.txt",
		"a/./b.txt",
		"a//b.txt",
		"a/b.txt/",
		"%2e%2e",
		"%2E%2E/x",
		"%2e%2e%2fx",
		"a%2fb.txt",
		"a%2F..%2F..%2Fx",
		"..%2f..%2fx",
		"a%5cb.txt",
		"..%5c..%5cx",
		`a\b.txt`,
		`..\x`,
		"a%00b",
		"%252e%252e/x",
		"/etc/passwd",
		"%2fetc%2fpasswd",
		strings.Repeat("a", fsroot.MaxPathBytes+1),
		strings.Repeat("ab/", fsroot.MaxPathBytes/3) + "c",
		deep,
		".sandboxrun-upload-x",
	}
	for _, p := range paths {
		for _, method := range []string{"GET", "PUT", "DELETE"} {
			name := p
			if len(name) > 40 {
				name = fmt.Sprintf("%s...(%d bytes)", name[:20], len(name))
			}
			t.Run(method+" "+name, func(t *testing.T) {
				var body []byte
				if method == "PUT" {
					body = []byte("attacker\n")
				}
				c := srv.raw(t, method, "/v1/sessions/"+s.ID+"/files/"+p, body)
				require.Equal(t, http.StatusBadRequest, c.status, c.String())
				require.Contains(t, strings.ToLower(string(c.body)), "path", "the refusal is about the path: %s", c)
				require.NotContains(t, string(c.body), "inside\n")
			})
		}
	}
	// A NUL or a space sent raw never reaches a handler.
	for _, p := range []string{"a\x00b", "a b"} {
		c := srv.raw(t, "PUT", "/v1/sessions/"+s.ID+"/files/"+p, []byte("attacker\n"))
		require.Equal(t, http.StatusBadRequest, c.status, c.String())
	}
	require.Equal(t, wsBefore, treeDigest(t, filepath.Join(srv.dir, "ws")), "no session folder changed")
	requireListing(t, srv, s.ID, map[string]string{"a/b.txt": "inside\n"})
	require.Equal(t, []byte("inside\n"), srv.get(t, s.ID, "a/b.txt"), "the legitimate path still works")
}

// TestSessionTarAttacks: tar-slip, links, devices, set-id bits, a path that
// is both a file and a folder, a tar bigger than the quota, and bodies that
// are not tars are each refused as a whole, and nothing of them stays.
func TestSessionTarAttacks(t *testing.T) {
	t.Parallel()
	pol := writeFile(t, "policy.yaml", "sessions:\n  quota: 1Mi\n")
	srv := startSessionServer(t, "", "--policy", pol)
	s := srv.create(t, "")
	srv.put(t, s.ID, "keep.txt", []byte("kept\n"))
	outside := t.TempDir()
	before := treeDigest(t, filepath.Join(srv.dir, "ws"))
	outsideBefore := treeDigest(t, outside)
	listBefore := srv.list(t, s.ID)
	usedBefore := srv.info(t, s.ID).BytesUsed

	good := tarEntry{hdr: tar.Header{Name: "good.txt"}, body: []byte("fine\n")}
	file := func(name string, mode int64) tarEntry {
		return tarEntry{hdr: tar.Header{Name: name, Mode: mode}, body: []byte("x\n")}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(makeTar(t, good))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	many := []tarEntry{}
	for i := range 20 {
		many = append(many, tarEntry{hdr: tar.Header{Name: fmt.Sprintf("part%02d.bin", i)}, body: bytes.Repeat([]byte{byte(i)}, 64<<10)})
	}
	// A header may declare any size: the bytes are counted as they come.
	lying := func(sent int) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "huge.bin", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1 << 40}))
		_, err := tw.Write(bytes.Repeat([]byte("z"), sent)) // then the body ends
		require.NoError(t, err)
		return buf.Bytes()
	}

	tests := []struct {
		name   string
		body   []byte
		status int
	}{
		{"dot dot", makeTar(t, good, file("../x", 0o644)), 400},
		{"dot dot inside", makeTar(t, good, file("a/../../x", 0o644)), 400},
		{"absolute", makeTar(t, good, file("/tmp/x", 0o644)), 400},
		{"absolute to outside", makeTar(t, good, file(filepath.Join(outside, "x"), 0o644)), 400},
		{"backslash", makeTar(t, good, file(`..\x`, 0o644)), 400},
		{"control byte", makeTar(t, good, file("a\x01b", 0o644)), 400},
		{"reserved name", makeTar(t, good, file(fsroot.TempPrefix+"x", 0o644)), 400},
		{"symlink", makeTar(t, good, tarEntry{hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}), 400},
		{"symlink then file through it", makeTar(t, tarEntry{hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: outside}}, file("l/x", 0o644)), 400},
		{"hard link", makeTar(t, good, tarEntry{hdr: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "good.txt"}}), 400},
		{"hard link outside", makeTar(t, tarEntry{hdr: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}), 400},
		{"char device", makeTar(t, good, tarEntry{hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}), 400},
		{"block device", makeTar(t, good, tarEntry{hdr: tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}}), 400},
		{"fifo", makeTar(t, good, tarEntry{hdr: tar.Header{Name: "p", Typeflag: tar.TypeFifo}}), 400},
		{"setuid", makeTar(t, good, file("suid", 0o4755)), 400},
		{"setgid", makeTar(t, good, file("sgid", 0o2755)), 400},
		{"setgid folder", makeTar(t, good, tarEntry{hdr: tar.Header{Name: "g/", Typeflag: tar.TypeDir, Mode: 0o2755}}), 400},
		{"file then folder", makeTar(t, file("x", 0o644), tarEntry{hdr: tar.Header{Name: "x/", Typeflag: tar.TypeDir, Mode: 0o755}}, file("x/y", 0o644)), 400},
		{"folder then file", makeTar(t, file("y/z", 0o644), file("y", 0o644)), 400},
		{"existing file made a folder", makeTar(t, good, file("keep.txt/x", 0o644)), 400},
		{"too deep", makeTar(t, file(strings.Repeat("d/", session.DefaultMaxDepth)+"f", 0o644)), 400},
		{"one file past the quota", makeTar(t, good, tarEntry{hdr: tar.Header{Name: "big.bin"}, body: randomBytes(t, 2<<20)}), 413},
		{"many files past the quota", makeTar(t, many...), 413},
		{"declares a terabyte, sends past the quota", lying(2 << 20), 413},
		{"declares a terabyte, sends little", lying(64 << 10), 400},
		{"gzip", gz.Bytes(), 400},
		{"garbage", randomBytes(t, 4096), 400},
		{"text", []byte("this is not a tar\n"), 400},
		{"cut short", makeTar(t, good, tarEntry{hdr: tar.Header{Name: "b.bin"}, body: randomBytes(t, 8192)})[:2*512+512+100], 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := srv.do(t, "PUT", "/v1/sessions/"+s.ID+"/files", bytes.NewReader(tt.body), "Content-Type", "application/x-tar")
			require.Equal(t, tt.status, c.status, c.String())
			if tt.status == 413 {
				require.Contains(t, string(c.body), "sessions.quota", "the refusal names the limit")
			}
			require.Equal(t, before, treeDigest(t, filepath.Join(srv.dir, "ws")), "nothing of the upload stays")
			require.Empty(t, tempNames(t, srv.workspace(s.ID)))
			require.Equal(t, listBefore, srv.list(t, s.ID))
			require.Equal(t, usedBefore, srv.info(t, s.ID).BytesUsed)
		})
	}
	c := srv.do(t, "PUT", "/v1/sessions/"+s.ID+"/files", bytes.NewReader(makeTar(t, good)), "Content-Type", "application/gzip")
	require.Equal(t, http.StatusUnsupportedMediaType, c.status, c.String())
	require.Equal(t, outsideBefore, treeDigest(t, outside))

	// The same server takes a good tar.
	c = srv.do(t, "PUT", "/v1/sessions/"+s.ID+"/files", bytes.NewReader(makeTar(t, good)), "Content-Type", "application/x-tar")
	require.Equal(t, http.StatusCreated, c.status, c.String())
	requireListing(t, srv, s.ID, map[string]string{"keep.txt": "kept\n", "good.txt": "fine\n"})
}
