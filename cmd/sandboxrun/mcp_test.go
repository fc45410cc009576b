package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/testlog"
)

// TestMCPServesOverStdio runs `sandboxrun mcp` in-process, its stdin and
// stdout connected to an SDK client, with Docker unreachable: listing,
// activation and refusals need no engine, and a run reports the engine's
// absence as a tool error instead of hanging.
func TestMCPServesOverStdio(t *testing.T) {
	isolateEnv(t)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := startStdio(ctx, t, "mcp", "--skills", exampleSkills, "--audit-log", auditPath)
	cs, stdout := srv.cs, srv.stdout

	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "list_skills", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcpsdk.TextContent).Text, "- hello: ")

	res, err = cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "run_skill_command", Arguments: map[string]any{"skill": "hello", "command": "jq ."}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcpsdk.TextContent).Text, "add Bash(jq:*) to the skill's allowed-tools")

	res, err = cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "run_skill_script", Arguments: map[string]any{"skill": "hello", "script": "scripts/echo.py"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcpsdk.TextContent).Text, "the sandbox could not be started")

	srv.stop(ctx, t)

	// stdout carried the protocol and nothing else.
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	lines := 0
	for sc.Scan() {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &msg), "stdout line %q", sc.Text())
		require.Equal(t, "2.0", msg.JSONRPC)
		lines++
	}
	require.GreaterOrEqual(t, lines, 4)

	recs := runLines(readLines(t, auditPath))
	require.Len(t, recs, 1, "the refusal is audited (the run never reached an engine)")
	require.Contains(t, recs[0], `"refused":true`)
}

// stdioServer is `sandboxrun mcp` run in-process, its stdin and stdout
// connected to an SDK client.
type stdioServer struct {
	cs             *mcpsdk.ClientSession
	stdout, stderr *testlog.Buffer
	clientOut      io.Closer
	code           chan int
}

func startStdio(ctx context.Context, t *testing.T, args ...string) *stdioServer {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	s := &stdioServer{stdout: &testlog.Buffer{}, stderr: &testlog.Buffer{}, clientOut: clientOut, code: make(chan int, 1)}
	go func() {
		s.code <- execute(context.Background(), args, streams{in: serverIn, out: io.MultiWriter(serverOut, s.stdout), err: s.stderr})
		_ = serverOut.Close() // what the process's exit does to its stdout
	}()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcpsdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err, "stderr: %s", s.stderr.String())
	s.cs = cs
	return s
}

// stop closes the server's stdin, as a host does, and requires a clean
// exit.
func (s *stdioServer) stop(ctx context.Context, t *testing.T) {
	t.Helper()
	require.NoError(t, s.clientOut.Close(), "the host closes the server's stdin")
	select {
	case c := <-s.code:
		require.Equal(t, 0, c, "stderr: %s", s.stderr.String())
	case <-ctx.Done():
		require.FailNow(t, "sandboxrun mcp did not stop when its stdin closed")
	}
	_ = s.cs.Close()
}

func TestMCPRefusesAMissingSkillsRoot(t *testing.T) {
	isolateEnv(t)
	r := cli(t, "", "mcp", "--skills", filepath.Join(t.TempDir(), "none"))
	r.requireCode(t, exitRefused)
	require.Contains(t, r.stderr, "is not a folder: pass --skills DIR")
	require.Empty(t, r.stdout, "nothing on the protocol stream")

	r = cli(t, "", "mcp", "extra")
	r.requireCode(t, exitRefused)
	require.Contains(t, r.stderr, "takes no arguments")
}

// runLines are the lines of runs and refusals, without those of session
// and upload calls (the connection's own session is one).
func runLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.Contains(l, `"op":`) {
			out = append(out, l)
		}
	}
	return out
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
