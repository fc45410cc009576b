package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

// startMCP serves /mcp behind tokens A and B, with sessions and uploads on.
func startMCP(t *testing.T) (string, *dirEngine) {
	t.Helper()
	pol, err := policy.ParsePolicy("p.yaml", []byte(strings.ReplaceAll(uploadsOn, "STORE", t.TempDir())))
	require.NoError(t, err)
	eng := &dirEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, Policy: pol, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB), MCP: mcp.HTTPHandler(svc)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, eng
}

// bearer sends every request with tok.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpAs connects to url's /mcp with tok.
func mcpAs(t *testing.T, url, tok string) *mcpsdk.ClientSession {
	t.Helper()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "server-test", Version: "v0"}, nil)
	tr := &mcpsdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer(tok)}, MaxRetries: -1}
	cs, err := c.Connect(context.Background(), tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPSessionAnswersItsOwnerOnly: a request with another token naming
// an MCP session is answered as one naming no session, and runs nothing;
// the session goes on for its owner.
func TestMCPSessionAnswersItsOwnerOnly(t *testing.T) {
	url, eng := startMCP(t)
	csA := mcpAs(t, url, tokenA)
	id := csA.ID()
	require.NotEmpty(t, id)

	call := func(method, session, tok string) reply {
		body := ""
		if method == "POST" {
			body = `{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "run_python", "arguments": {"skill": "hello", "code": "print(1)"}}}`
		}
		req, err := http.NewRequest(method, url+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		require.NoError(t, err)
		defer resp.Body.Close()
		b := make([]byte, 512)
		n, _ := resp.Body.Read(b)
		return reply{status: resp.StatusCode, header: resp.Header, body: b[:n]}
	}
	for _, method := range []string{"POST", "GET", "DELETE"} {
		hijack := call(method, id, tokenB)
		unknown := call(method, "aaaaaaaaaaaaaaaaaaaaaaaaaa", tokenB)
		require.Equal(t, http.StatusNotFound, hijack.status, method+": %s", hijack.body)
		require.Equal(t, unknown.status, hijack.status, method)
		require.Equal(t, string(unknown.body), string(hijack.body), method+": the answer tells nothing of the session")
	}
	require.Empty(t, eng.dirs, "nothing ran for the other token")

	res := mcptest.Call(t, csA, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "print(1)"})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Len(t, eng.dirs, 1, "the owner's session is intact")
}

// TestMCPActsForTheToken: over /mcp a token reaches its own uploads (tools
// and resources), never another token's, and its connection's workspace
// is a session of that token's, out of the other's reach.
func TestMCPActsForTheToken(t *testing.T) {
	url, eng := startMCP(t)
	upload(t, url, tokenA, "application/x-tar", skillTar(t, greeter("greeter", "print('hi')\n")), http.StatusCreated)
	csA, csB := mcpAs(t, url, tokenA), mcpAs(t, url, tokenB)
	ctx := context.Background()

	list := mcptest.Call(t, csA, mcp.ToolListSkills, nil)
	require.Contains(t, mcptest.Text(list), "- greeter: Greets.")
	list = mcptest.Call(t, csB, mcp.ToolListSkills, nil)
	require.NotContains(t, mcptest.Text(list), "greeter")
	require.Contains(t, mcptest.Text(list), "- hello:", "operator skills for every token")

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{mcp.ToolActivateSkill, map[string]any{"skill": "greeter"}},
		{mcp.ToolRunScript, map[string]any{"skill": "greeter", "script": "scripts/hi.py"}},
		{mcp.ToolRunCommand, map[string]any{"skill": "greeter", "command": "python3 scripts/hi.py"}},
		{mcp.ToolRunPython, map[string]any{"skill": "greeter", "code": "print(1)"}},
		{mcp.ToolExplain, map[string]any{"skill": "greeter", "code": "print(1)"}},
	} {
		theirs := mcptest.Call(t, csB, c.tool, c.args)
		require.True(t, theirs.IsError, c.tool)
		require.Contains(t, mcptest.Text(theirs), `no skill named "greeter"`, c.tool)
	}
	require.Empty(t, eng.dirs, "nothing of A's ran for B")

	res := mcptest.Call(t, csA, mcp.ToolActivateSkill, map[string]any{"skill": "greeter"})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Contains(t, mcptest.Text(res), "Run scripts/hi.py.")
	res = mcptest.Call(t, csA, mcp.ToolExplain, map[string]any{"skill": "greeter", "script": "scripts/hi.py"})
	require.False(t, res.IsError, mcptest.Text(res))
	res = mcptest.Call(t, csA, mcp.ToolRunScript, map[string]any{"skill": "greeter", "script": "scripts/hi.py"})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Contains(t, eng.last(), "greeter", "the upload ran")

	uri := mcp.SkillURI("greeter", "SKILL.md")
	rs, err := csA.ListResources(ctx, nil)
	require.NoError(t, err)
	require.Contains(t, resourceURIs(rs), uri)
	rs, err = csB.ListResources(ctx, nil)
	require.NoError(t, err)
	require.NotContains(t, resourceURIs(rs), uri)
	got, err := csA.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: mcp.SkillURI("greeter", "references/a.txt")})
	require.NoError(t, err)
	require.Equal(t, "notes", got.Contents[0].Text)
	_, err = csB.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
	require.Error(t, err, "another token's upload is not a resource of B's")

	// The workspace of A's connection is a session of A's.
	res = mcptest.Call(t, csA, mcp.ToolWriteFile, map[string]any{"path": "in.txt", "content": "mine"})
	require.False(t, res.IsError, mcptest.Text(res))
	var listed struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	r := call(t, "GET", url+"/v1/sessions", "", as(tokenA)...)
	require.NoError(t, json.Unmarshal(r.body, &listed))
	require.Len(t, listed.Sessions, 1, string(r.body))
	id := listed.Sessions[0].ID
	r = call(t, "GET", url+"/v1/sessions/"+id+"/files/in.txt", "", as(tokenA)...)
	require.Equal(t, "mine", string(r.body))
	r = call(t, "GET", url+"/v1/sessions", "", as(tokenB)...)
	require.Equal(t, http.StatusOK, r.status)
	require.NotContains(t, string(r.body), id, "B's runs have a workspace of B's, never A's")
	r = call(t, "GET", url+"/v1/sessions/"+id+"/files/in.txt", "", as(tokenB)...)
	require.Equal(t, http.StatusNotFound, r.status)
	res = mcptest.Call(t, csB, mcp.ToolReadFile, map[string]any{"path": "in.txt"})
	require.True(t, res.IsError, "B's connection has a workspace of its own: %s", mcptest.Text(res))
}

func resourceURIs(rs *mcpsdk.ListResourcesResult) []string {
	var out []string
	for _, r := range rs.Resources {
		out = append(out, r.URI)
	}
	return out
}
