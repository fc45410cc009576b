package mcp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/mcp"
)

func readResource(cs *mcpsdk.ClientSession, uri string) (*mcpsdk.ReadResourceResult, error) {
	return cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: uri})
}

func TestSkillFilesAreResources(t *testing.T) {
	cs := session(t, service(t, &fakeEngine{}))
	ctx := context.Background()

	list, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	byURI := map[string]*mcpsdk.Resource{}
	for _, r := range list.Resources {
		byURI[r.URI] = r
	}
	hello := byURI["skill://hello/SKILL.md"]
	require.NotNil(t, hello, "each skill's SKILL.md is listed: %v", byURI)
	require.Equal(t, "hello", hello.Name)
	require.Contains(t, hello.Description, "Echoes its JSON arguments")
	require.Equal(t, "text/markdown", hello.MIMEType)
	require.Contains(t, byURI, "skill://data-analysis/SKILL.md")

	templates, err := cs.ListResourceTemplates(ctx, nil)
	require.NoError(t, err)
	require.Len(t, templates.ResourceTemplates, 1)
	require.Equal(t, "skill://{name}/{+path}", templates.ResourceTemplates[0].URITemplate)

	for uri, want := range map[string]string{
		"skill://hello/SKILL.md":                           "name: hello",
		"skill://data-analysis/references/csv-format.md":   "",
		"skill://data-analysis/scripts/lib/common.py":      "",
		"skill://data-analysis/assets/sample.csv":          "price",
		"skill://data-analysis/references/csv%2Dformat.md": "",
	} {
		res, err := readResource(cs, uri)
		require.NoError(t, err, uri)
		require.Len(t, res.Contents, 1)
		c := res.Contents[0]
		require.Equal(t, uri, c.URI)
		require.NotEmpty(t, c.Text, uri)
		require.Contains(t, c.Text, want)
		if filepath.Ext(uri) == ".md" {
			require.Equal(t, "text/markdown", c.MIMEType)
		}
	}
}

func TestResourceReadsStayInsideTheSkill(t *testing.T) {
	root := t.TempDir()
	copySkill(t, "hello", root)
	require.NoError(t, os.WriteFile(filepath.Join(root, "outside.txt"), []byte("secret"), 0o600))
	require.NoError(t, os.Symlink("../../outside.txt", filepath.Join(root, "hello", "scripts", "link.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "hello", "scripts", "bin.dat"), []byte{0xff, 0xfe, 0, 1}, 0o644))
	cs := session(t, service(t, &fakeEngine{}, root))

	res, err := readResource(cs, "skill://hello/scripts/bin.dat")
	require.NoError(t, err)
	require.Equal(t, []byte{0xff, 0xfe, 0, 1}, res.Contents[0].Blob, "bytes that are not UTF-8 come as a blob")

	for _, tc := range []struct {
		uri      string
		notFound bool
	}{
		{"skill://nope/SKILL.md", true},
		{"skill://hello/references/none.md", true},
		{"skill://hello/../outside.txt", false},
		{"skill://hello/%2e%2e/outside.txt", false},
		{"skill://hello/scripts/%2E%2E/%2E%2E/outside.txt", false},
		{"skill://hello/scripts/link.txt", false},
		{"skill://hello/" + filepath.Join(root, "outside.txt"), false},
		{"skill://hello/scripts", false},
		{"skill://hello/SKILL.md?x=1", true},
		{"skill://hello:80/SKILL.md", true},
		{"skill://../SKILL.md", true},
		{"skill:///etc/passwd", true},
		{"file:///etc/passwd", true},
	} {
		_, err := readResource(cs, tc.uri)
		require.Error(t, err, tc.uri)
		var werr *jsonrpc.Error
		require.True(t, errors.As(err, &werr), "%s: %v", tc.uri, err)
		require.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code, "%s: %v", tc.uri, err)
		if tc.notFound {
			require.Equal(t, "Resource not found", werr.Message, tc.uri)
		} else {
			require.Contains(t, werr.Message, "refused: ", "%s: a refusal says why", tc.uri)
		}
		require.NotContains(t, err.Error(), "secret")
		if !strings.Contains(tc.uri, root) {
			require.NotContains(t, err.Error(), root, "%s: no host folder in the answer", tc.uri)
		}
	}
}

func TestResourceListFollowsTheSkillsOnDisk(t *testing.T) {
	root := t.TempDir()
	copySkill(t, "hello", root)
	cs := session(t, service(t, &fakeEngine{}, root))
	uris := func() []string {
		list, err := cs.ListResources(context.Background(), nil)
		require.NoError(t, err)
		var out []string
		for _, r := range list.Resources {
			out = append(out, r.URI)
		}
		return out
	}
	require.Equal(t, []string{"skill://hello/SKILL.md"}, uris())
	copySkill(t, "data-analysis", root)
	require.Equal(t, []string{"skill://data-analysis/SKILL.md", "skill://hello/SKILL.md"}, uris())
	require.NoError(t, os.RemoveAll(filepath.Join(root, "hello")))
	require.Equal(t, []string{"skill://data-analysis/SKILL.md"}, uris())
}

func TestSkillURI(t *testing.T) {
	require.Equal(t, "skill://hello/SKILL.md", mcp.SkillURI("hello", "SKILL.md"))
	require.Equal(t, "skill://hello/references/a%20b.md", mcp.SkillURI("hello", "references/a b.md"))
}
