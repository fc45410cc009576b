//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/session"
)

// The replica tests run two real `sandboxrun serve --replica` processes on
// loopback, r-0 on 127.0.0.10 and r-1 on 127.0.0.11 (one port, so that
// --peer-url http://127.0.0.1{ordinal}:PORT reaches either), with one
// tokens file and a sessions root each, as a StatefulSet runs them.

const (
	replicaTokenA = "replica-token-a-0123456789abcdef"
	replicaTokenB = "replica-token-b-0123456789abcdef"
)

type replicaSet struct {
	port   int
	root   string // skills
	skill  string
	tokens string
	dir    [2]string
	srv    [2]*sessServer
	args   []string // given to every replica
}

func startReplicas(t *testing.T, args ...string) *replicaSet {
	t.Helper()
	skill := sessSkill(t)
	rs := &replicaSet{port: replicaPort(t), root: sessSkillRoot(t, skill), skill: skill, tokens: filepath.Join(t.TempDir(), "tokens"), args: args}
	require.NoError(t, os.WriteFile(rs.tokens, []byte(replicaTokenA+"\n"+replicaTokenB+"\n"), 0o600))
	for i := range rs.dir {
		rs.dir[i] = filepath.Join(t.TempDir(), "sessions")
		rs.start(t, i)
	}
	return rs
}

// start runs replica i on its address and sessions root.
func (rs *replicaSet) start(t *testing.T, i int) *sessServer {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1%d:%d", i, rs.port)
	srv := startServerAt(t, addr, rs.root, append([]string{"--tokens", rs.tokens, "--sessions", rs.dir[i], "--warm-pool", "0",
		"--replica", fmt.Sprintf("r-%d", i), "--replicas", "2", "--peer-url", fmt.Sprintf("http://127.0.0.1{ordinal}:%d", rs.port)}, rs.args...)...)
	srv.token = replicaTokenA
	rs.srv[i] = &sessServer{liveServer: srv, dir: rs.dir[i], skill: rs.skill}
	return rs.srv[i]
}

// replicaPort finds a port free on both replicas' addresses.
func replicaPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(30000)
		var lns []net.Listener
		for i := range 2 {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1%d:%d", i, port))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			require.NoError(t, ln.Close())
		}
		if len(lns) == 2 {
			return port
		}
	}
	t.Fatal("no port free on 127.0.0.10 and 127.0.0.11")
	return 0
}

func TestSessionReplicas(t *testing.T) {
	t.Parallel()
	rs := startReplicas(t)
	r0, r1 := rs.srv[0], rs.srv[1]

	info := r0.create(t, "")
	id := info.ID
	owner, ok := session.IDReplica(id)
	require.True(t, ok, id)
	require.Equal(t, "r-0", owner)

	// Upload and run through r-1, download through r-0.
	data := randomBytes(t, 1<<20)
	fi := r1.put(t, id, "in/data.bin", data)
	require.Equal(t, sha(data), fi.SHA256)
	res := r1.python(t, id, "import hashlib\nd = open('in/data.bin', 'rb').read()\nopen('out.txt', 'w').write(hashlib.sha256(d).hexdigest())\n")
	require.True(t, res.Success, "%+v", res)
	require.Equal(t, data, r0.get(t, id, "in/data.bin"))
	require.Equal(t, sha(data), string(r0.get(t, id, "out.txt")))
	require.Empty(t, entriesOf(t, rs.dir[1]), "nothing of r-0's session is on r-1")

	t.Run("another token's session is 404 through either", func(t *testing.T) {
		for _, s := range rs.srv {
			c := s.doAs(t, replicaTokenB, "GET", "/v1/sessions/"+id+"/files/in/data.bin", nil)
			require.Equal(t, http.StatusNotFound, c.status, c.String())
		}
	})
	t.Run("a streamed run through r-1 arrives streamed, and leaving cancels it on r-0", func(t *testing.T) {
		streamThroughNonOwner(t, rs, id)
	})
	t.Run("a large upload through r-1 streams to r-0", func(t *testing.T) {
		largeUploadThroughNonOwner(t, rs, id)
	})
	t.Run("an MCP session made on r-0 is served through r-1", func(t *testing.T) {
		mcpThroughNonOwner(t, rs)
	})

	// The owner dies: through r-1 its session is 503 with Retry-After,
	// never 404 and never a new session; back on its root, all is there.
	require.NoError(t, r0.cmd.Process.Signal(syscall.SIGKILL))
	<-r0.done
	for _, path := range []string{"/v1/sessions/" + id, "/v1/sessions/" + id + "/files/in/data.bin"} {
		c := r1.do(t, "GET", path, nil)
		require.Equal(t, http.StatusServiceUnavailable, c.status, c.String())
		require.NotEmpty(t, c.header.Get("Retry-After"))
		require.Contains(t, string(c.body), `replica \"r-0\"`)
	}
	c := r1.pythonCall(t, id, "print(1)")
	require.Equal(t, http.StatusServiceUnavailable, c.status, c.String())
	require.Empty(t, entriesOf(t, rs.dir[1]))

	rs.start(t, 0)
	require.Equal(t, data, r1.get(t, id, "in/data.bin"))
	require.Equal(t, sha(data), string(r1.get(t, id, "out.txt")))
	require.Equal(t, id, r1.info(t, id).ID)
	eventuallyNoSkillContainers(t, rs.skill)
}

// entriesOf lists the session folders under a sessions root.
func entriesOf(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, "ws"))
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// streamThroughNonOwner: the run prints, then sleeps for minutes; its
// first line arrives through r-1 while it runs (an entry that buffered
// would hold it until the end), and a caller that leaves stops it on r-0.
func streamThroughNonOwner(t *testing.T, rs *replicaSet, id string) {
	body, err := json.Marshal(map[string]any{"code": "import time\nprint('ready', flush=True)\ntime.sleep(300)\n", "session": id, "timeout": 300})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", rs.srv[1].url+"/v1/skills/"+rs.skill+"/python", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+replicaTokenA)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	first := make(chan string, 1)
	events := bufio.NewReader(resp.Body)
	go func() {
		line, _ := events.ReadString('\n')
		first <- line
	}()
	select {
	case line := <-first:
		var ev struct{ Type, Data string }
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		require.Equal(t, "stdout", ev.Type)
		require.Equal(t, "ready\n", ev.Data)
	case <-time.After(120 * time.Second):
		t.Fatal("no event through r-1 in two minutes, while the run sleeps for five: the forward is not streaming")
	}
	cancel()
	eventuallyNoSkillContainers(t, rs.skill)
	// The session is free again: the run's lease was released on r-0.
	require.Equal(t, id, rs.srv[1].info(t, id).ID)
}

// largeUploadThroughNonOwner sends 64 MiB through r-1, pausing halfway
// until r-0's upload file holds a good part of it: the owner receives
// while the caller still sends, and r-1's peak RSS barely moves.
func largeUploadThroughNonOwner(t *testing.T, rs *replicaSet, id string) {
	const size = 64 << 20
	data := randomBytes(t, size)
	entry := rs.srv[1].cmd.Process.Pid
	before := peakRSS(t, entry)

	pr, pw := io.Pipe()
	req, err := http.NewRequest("PUT", rs.srv[1].url+"/v1/sessions/"+id+"/files/big/blob.bin", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+replicaTokenA)
	answered := make(chan call, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- call{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- call{status: resp.StatusCode, header: resp.Header, body: b}
	}()
	_, err = pw.Write(data[:size/2])
	require.NoError(t, err)

	ws := rs.srv[0].workspace(id)
	var got int64
	for deadline := time.Now().Add(60 * time.Second); got < size/4; time.Sleep(50 * time.Millisecond) {
		for _, p := range tempNames(t, ws) {
			if fi, err := os.Stat(p); err == nil && fi.Size() > got {
				got = fi.Size()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("r-0 holds %d bytes of the upload while the caller has sent %d and waits: r-1 does not stream it", got, size/2)
		}
	}

	_, err = pw.Write(data[size/2:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	c := <-answered
	require.Equal(t, http.StatusCreated, c.status, c.String())
	var fi session.FileInfo
	require.NoError(t, json.Unmarshal(c.body, &fi))
	require.Equal(t, sha(data), fi.SHA256)

	grew := peakRSS(t, entry) - before
	t.Logf("r-1 peak RSS grew by %d KiB for a %d MiB upload", grew>>10, size>>20)
	require.Less(t, grew, int64(16<<20), "the entry replica buffered the upload")
	require.Equal(t, sha(data), sha(rs.srv[0].get(t, id, "big/blob.bin")))
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kib << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// mcpThroughNonOwner opens an MCP session on r-0 and sends everything
// after the initialization to r-1, as a load balancer might.
func mcpThroughNonOwner(t *testing.T, rs *replicaSet) {
	sw := &toReplica{token: replicaTokenA, to: rs.srv[1].url}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "integration", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcpsdk.StreamableClientTransport{
		Endpoint: rs.srv[0].url + "/mcp", HTTPClient: &http.Client{Transport: sw},
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	owner, ok := session.IDReplica(cs.ID())
	require.True(t, ok, cs.ID())
	require.Equal(t, "r-0", owner)

	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: mcp.ToolWriteFile, Arguments: map[string]any{"path": "note.txt", "content": "via r-1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, mcptest.Text(res))
	res, err = cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: mcp.ToolRunPython, Arguments: map[string]any{
		"skill": rs.skill, "code": "print(open('note.txt').read().upper())",
	}})
	require.NoError(t, err)
	require.False(t, res.IsError, mcptest.Text(res))
	var out mcp.RunOutput
	decodeTool(t, res, &out)
	require.Equal(t, "VIA R-1\n", out.Stdout)
	require.Positive(t, sw.moved.Load(), "requests went through r-1")
	require.Len(t, entriesOf(t, rs.dir[1]), 0, "the MCP session's workspace is on r-0")
}

// toReplica sends the requests of an MCP session (those naming one) to
// another replica, and adds the token to all.
type toReplica struct {
	token string
	to    string
	moved atomic.Int64
}

func (s *toReplica) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token)
	if r.Header.Get("Mcp-Session-Id") != "" {
		u := *r.URL
		u.Host = strings.TrimPrefix(s.to, "http://")
		r.URL, r.Host = &u, u.Host
		s.moved.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}
