package mcp_test

import (
	"archive/tar"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/caller"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/policy"
)

// Owners as the server's tokens name them (sha256 digests in hex).
const (
	ownerA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	ownerB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// uploadsService is a Service with sessions and uploads on, holding an
// upload "upload-<who>" for each of ownerA and the anonymous owner "".
func uploadsService(t *testing.T, eng *fakeEngine) *sandboxrun.Service {
	t.Helper()
	pol, err := policy.ParsePolicy("p.yaml", []byte("skill_uploads:\n  allow: tokens\n  store: "+t.TempDir()+"\n"))
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills}, Runner: eng, Policy: pol, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	for owner, name := range map[string]string{ownerA: "upload-a", "": "upload-anonymous"} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for file, body := range map[string]string{
			"SKILL.md":      "---\nname: " + name + "\ndescription: An upload. Use it in tests.\n---\nRun scripts/go.py.\n",
			"scripts/go.py": "print(1)\n",
		} {
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: file, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
			_, err := tw.Write([]byte(body))
			require.NoError(t, err)
		}
		require.NoError(t, tw.Close())
		_, err := svc.For(sandboxrun.Caller{Owner: owner}).UploadSkill(sandboxrun.UploadTar, &buf)
		require.NoError(t, err)
	}
	return svc
}

// httpAs connects over Streamable HTTP to svc's handler, behind a front
// end that says every request is owner's ("" for a server with no tokens).
func httpAs(t *testing.T, svc *sandboxrun.Service, owner string) *mcpsdk.ClientSession {
	t.Helper()
	h := mcp.HTTPHandler(svc)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(caller.WithOwner(r.Context(), owner)))
	}))
	t.Cleanup(srv.Close)
	cs, err := newClient(nil).Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestConnectionsActForTheirOwner: a connection with a token's owner sees
// that owner's uploads and works in sessions of that owner's; one with no
// token (stdio, a server without tokens) sees operator skills only, no
// upload (not even the anonymous owner's), and works in sessions of "mcp".
func TestConnectionsActForTheirOwner(t *testing.T) {
	for _, c := range []struct {
		name     string
		connect  func(t *testing.T, svc *sandboxrun.Service) *mcpsdk.ClientSession
		sessions string // who owns the workspace
		sees     string // the upload it reaches, "" for none
	}{
		{"stdio", func(t *testing.T, svc *sandboxrun.Service) *mcpsdk.ClientSession { return session(t, svc) }, "mcp", ""},
		{"http without tokens", func(t *testing.T, svc *sandboxrun.Service) *mcpsdk.ClientSession { return httpAs(t, svc, "") }, "mcp", ""},
		{"http token A", func(t *testing.T, svc *sandboxrun.Service) *mcpsdk.ClientSession { return httpAs(t, svc, ownerA) }, ownerA, "upload-a"},
		{"http token B", func(t *testing.T, svc *sandboxrun.Service) *mcpsdk.ClientSession { return httpAs(t, svc, ownerB) }, ownerB, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := &fakeEngine{}
			svc := uploadsService(t, eng)
			cs := c.connect(t, svc)
			ctx := context.Background()

			list := mcptest.Text(mcptest.Call(t, cs, mcp.ToolListSkills, nil))
			require.Contains(t, list, "- hello:")
			resources, err := cs.ListResources(ctx, nil)
			require.NoError(t, err)
			var uris []string
			for _, r := range resources.Resources {
				uris = append(uris, r.URI)
			}
			require.Contains(t, uris, mcp.SkillURI("hello", "SKILL.md"))
			for _, name := range []string{"upload-a", "upload-anonymous"} {
				uri := mcp.SkillURI(name, "scripts/go.py")
				run := mcptest.Call(t, cs, mcp.ToolRunScript, map[string]any{"skill": name, "script": "scripts/go.py"})
				activate := mcptest.Call(t, cs, mcp.ToolActivateSkill, map[string]any{"skill": name})
				explain := mcptest.Call(t, cs, mcp.ToolExplain, map[string]any{"skill": name, "script": "scripts/go.py"})
				_, readErr := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
				if name == c.sees {
					require.Contains(t, list, "- "+name+":")
					require.Contains(t, uris, mcp.SkillURI(name, "SKILL.md"))
					require.False(t, run.IsError, mcptest.Text(run))
					require.False(t, activate.IsError, mcptest.Text(activate))
					require.False(t, explain.IsError, mcptest.Text(explain))
					require.NoError(t, readErr)
					continue
				}
				require.NotContains(t, list, name)
				require.NotContains(t, uris, mcp.SkillURI(name, "SKILL.md"))
				for _, res := range []*mcpsdk.CallToolResult{run, activate, explain} {
					require.True(t, res.IsError)
					require.Contains(t, mcptest.Text(res), `no skill named "`+name+`"`)
				}
				require.Error(t, readErr)
			}
			want := 0
			if c.sees != "" {
				want = 1
			}
			require.Len(t, eng.ran(), want, "only the owner's upload ran")

			sessions := func(owner string) []sandboxrun.SessionInfo {
				list, err := svc.For(sandboxrun.Caller{Owner: owner}).Sessions()
				require.NoError(t, err)
				return list
			}
			got := sessions(c.sessions)
			require.Len(t, got, 1, "the connection's workspace is %s's", c.sessions)
			for _, other := range []string{"mcp", ownerA, ownerB} {
				if other != c.sessions {
					require.Empty(t, sessions(other), other)
				}
			}
		})
	}
}
