package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer safe to write and read from two goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMCPServesOverStdio runs `sandboxrun mcp` in-process, its stdin and
// stdout connected to an SDK client, with Docker unreachable: listing,
// activation and refusals need no engine, and a run reports the engine's
// absence as a tool error instead of hanging.
func TestMCPServesOverStdio(t *testing.T) {
	isolateEnv(t)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	var stdout, stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- execute(context.Background(), []string{"mcp", "--skills", exampleSkills, "--audit-log", auditPath},
			streams{in: serverIn, out: io.MultiWriter(serverOut, &stdout), err: &stderr})
		_ = serverOut.Close() // what the process's exit does to its stdout
	}()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcpsdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)

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

	require.NoError(t, clientOut.Close(), "the host closes the server's stdin")
	select {
	case c := <-code:
		require.Equal(t, 0, c, "stderr: %s", stderr.String())
	case <-ctx.Done():
		require.FailNow(t, "sandboxrun mcp did not stop when its stdin closed")
	}
	_ = cs.Close()

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

	recs := readLines(t, auditPath)
	require.Len(t, recs, 1, "the refusal is audited (the run never reached an engine)")
	require.Contains(t, recs[0], `"refused":true`)
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

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
