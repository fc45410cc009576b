//go:build integration

package integration

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// The session tests drive a real `sandboxrun serve --sessions DIR` on
// loopback, as an agent host would: create a session, put files in, run
// scripts on them in real sandboxes, take files out.

// sessServer is a live server keeping sessions under dir.
type sessServer struct {
	*liveServer
	dir   string // the sessions root
	skill string // the test skill runs use, named after the test
}

// startSessionServer starts serve with sessions under a fresh folder (or
// dir, when given, to restart on the same one), the sess-it skill and the
// repository's skills.
func startSessionServer(t *testing.T, dir string, args ...string) *sessServer {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "sessions")
	}
	skill := sessSkill(t)
	// No warm pool: every container the server owns is a run's, so the
	// tests' "nothing left" checks see leaks, not idle warm containers
	// (TestWarmWritableWorkspace covers session runs in warm ones).
	srv := startServer(t, sessSkillRoot(t, skill), append([]string{"--sessions", dir, "--warm-pool", "0"}, args...)...)
	return &sessServer{liveServer: srv, dir: dir, skill: skill}
}

// sessSkill names the test skill after the test (TestSessionQuota:
// sess-quota), so a test's containers are told from another's by label.
func sessSkill(t *testing.T) string {
	name := strings.TrimPrefix(strings.SplitN(t.Name(), "/", 2)[0], "TestSession")
	return "sess-" + strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(name, ""))
}

// sessSkillRoot is the test skill's root plus the repository's skills,
// ':'-separated as --skills takes them.
func sessSkillRoot(t *testing.T, skill string) string {
	t.Helper()
	own := cliSkill(t, skill, "allowed-tools: Bash(python3:*)\n", map[string]string{
		"scripts/echo.py": "import json, sys\nprint(json.dumps(json.load(sys.stdin)))\n",
	})
	repo, err := filepath.Abs("../skills")
	require.NoError(t, err)
	return own + ":" + repo
}

// sessionInfo is the JSON of a session.
type sessionInfo struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	BytesUsed  int64     `json:"bytes_used"`
	BytesLimit int64     `json:"bytes_limit"`
}

// call is one HTTP exchange with the server, as the token sees it.
type call struct {
	status int
	header http.Header
	body   []byte
}

func (c call) String() string {
	return fmt.Sprintf("%d %s", c.status, bytes.TrimSpace(c.body))
}

// do sends a request with the server's token and returns the whole reply.
func (s *sessServer) do(t *testing.T, method, path string, body io.Reader, header ...string) call {
	t.Helper()
	return s.doAs(t, s.token, method, path, body, header...)
}

func (s *sessServer) doAs(t *testing.T, token, method, path string, body io.Reader, header ...string) call {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, body)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return call{status: resp.StatusCode, header: resp.Header, body: b}
}

// create makes a session (ttl "" for the default) and returns it.
func (s *sessServer) create(t *testing.T, ttl string) sessionInfo {
	t.Helper()
	body := ""
	if ttl != "" {
		body = `{"ttl": "` + ttl + `"}`
	}
	c := s.do(t, "POST", "/v1/sessions", strings.NewReader(body))
	require.Equal(t, http.StatusCreated, c.status, c.String())
	var info sessionInfo
	require.NoError(t, json.Unmarshal(c.body, &info))
	require.NotEmpty(t, info.ID)
	return info
}

func (s *sessServer) info(t *testing.T, id string) sessionInfo {
	t.Helper()
	c := s.do(t, "GET", "/v1/sessions/"+id, nil)
	require.Equal(t, http.StatusOK, c.status, c.String())
	var info sessionInfo
	require.NoError(t, json.Unmarshal(c.body, &info))
	return info
}

// put uploads one file and checks what the server says it stored.
func (s *sessServer) put(t *testing.T, id, p string, data []byte) session.FileInfo {
	t.Helper()
	c := s.do(t, "PUT", "/v1/sessions/"+id+"/files/"+p, bytes.NewReader(data))
	require.Equal(t, http.StatusCreated, c.status, c.String())
	var fi session.FileInfo
	require.NoError(t, json.Unmarshal(c.body, &fi))
	require.Equal(t, session.FileInfo{Path: p, Size: int64(len(data)), SHA256: sha(data)}, fi)
	return fi
}

// get downloads one file, checking its ETag is its digest.
func (s *sessServer) get(t *testing.T, id, p string) []byte {
	t.Helper()
	c := s.do(t, "GET", "/v1/sessions/"+id+"/files/"+p, nil)
	require.Equal(t, http.StatusOK, c.status, c.String())
	require.Equal(t, "application/octet-stream", c.header.Get("Content-Type"))
	require.Equal(t, `"`+sha(c.body)+`"`, c.header.Get("ETag"))
	return c.body
}

// ids lists the ids of the sessions the server knows.
func (s *sessServer) ids(t *testing.T) []string {
	t.Helper()
	c := s.do(t, "GET", "/v1/sessions", nil)
	require.Equal(t, http.StatusOK, c.status, c.String())
	var l struct {
		Sessions []sessionInfo `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal(c.body, &l))
	var ids []string
	for _, si := range l.Sessions {
		ids = append(ids, si.ID)
	}
	return ids
}

// list returns the session's listing.
func (s *sessServer) list(t *testing.T, id string) []session.Entry {
	t.Helper()
	c := s.do(t, "GET", "/v1/sessions/"+id+"/files", nil)
	require.Equal(t, http.StatusOK, c.status, c.String())
	var l struct {
		Files []session.Entry `json:"files"`
	}
	require.NoError(t, json.Unmarshal(c.body, &l))
	return l.Files
}

// python runs code in the session with the sess-it skill and returns the
// Result; the run must have reached the sandbox.
func (s *sessServer) python(t *testing.T, id, code string) *sandbox.Result {
	t.Helper()
	c := s.pythonCall(t, id, code)
	require.Equal(t, http.StatusOK, c.status, c.String())
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(c.body, &res))
	return &res
}

func (s *sessServer) pythonCall(t *testing.T, id, code string) call {
	t.Helper()
	b, err := json.Marshal(map[string]string{"code": code, "session": id})
	require.NoError(t, err)
	return s.do(t, "POST", "/v1/skills/"+s.skill+"/python", bytes.NewReader(b))
}

// workspace is the session's folder on the host.
func (s *sessServer) workspace(id string) string { return filepath.Join(s.dir, "ws", id) }

// raw sends the request line and headers exactly as written (Go's client
// would clean a path such as /a/../b) and returns the status and body.
func (s *sessServer) raw(t *testing.T, method, target string, body []byte) call {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(60*time.Second)))
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %d\r\n",
		method, target, strings.TrimPrefix(s.url, "http://"), len(body))
	if s.token != "" {
		fmt.Fprintf(&req, "Authorization: Bearer %s\r\n", s.token)
	}
	req.WriteString("\r\n")
	req.Write(body)
	_, err = conn.Write(req.Bytes())
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "request line %q", method+" "+target)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return call{status: resp.StatusCode, header: resp.Header, body: b}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// tarEntry is one entry of a tar the tests build by hand.
type tarEntry struct {
	hdr  tar.Header
	body []byte
}

// makeTar writes entries as they are, sizes taken from the bodies unless
// the header sets one (a tar may lie about its sizes).
func makeTar(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Size == 0 && h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		require.NoError(t, tw.WriteHeader(&h))
		if len(e.body) > 0 {
			_, err := tw.Write(e.body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// tempNames lists what under dir bears the store's temporary prefix, or the
// hand-back's (".sandboxrun-"), at any depth.
func tempNames(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".sandboxrun-") {
			found = append(found, p)
		}
		return nil
	})
	require.NoError(t, err)
	return found
}

// treeDigest sums every name, type, link target and file content under dir
// (links not followed), to tell whether anything there changed.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%v\x00", rel, d.Type())
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00", target)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// changes indexes a Result's files by path.
func changes(res *sandbox.Result) map[string]sandbox.FileChange {
	m := map[string]sandbox.FileChange{}
	for _, c := range res.Files {
		m[c.Path] = c
	}
	return m
}

// entries indexes a listing by path.
func entries(l []session.Entry) map[string]session.Entry {
	m := map[string]session.Entry{}
	for _, e := range l {
		m[e.Path] = e
	}
	return m
}
