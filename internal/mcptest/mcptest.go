package mcptest

import (
	"context"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// CallWait bounds one tool call: longer than any run a test asks for, so
// reaching it means a hang.
const CallWait = 30 * time.Second

// Call calls tool with args and returns its result; a protocol error (not a
// tool's own error result) fails the test.
func Call(t testing.TB, cs *mcpsdk.ClientSession, tool string, args map[string]any) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CallWait)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "tools/call %s", tool)
	return res
}

// Text joins the text parts of a result.
func Text(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
