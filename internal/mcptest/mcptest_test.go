package mcptest_test

import (
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/mcptest"
)

func TestText(t *testing.T) {
	res := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
		&mcpsdk.TextContent{Text: "a"}, &mcpsdk.ImageContent{MIMEType: "image/png"}, &mcpsdk.TextContent{Text: "b"},
	}}
	require.Equal(t, "ab", mcptest.Text(res), "text parts joined, others left out")
	require.Empty(t, mcptest.Text(&mcpsdk.CallToolResult{}))
}
