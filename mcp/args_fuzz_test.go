package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/mcp"
)

// FuzzToolArguments calls every tool the server lists with any arguments,
// through the SDK's real decoding and the server's handlers, over a fake
// engine and a real session store: a call answers a result (a tool error
// for bad arguments) or an invalid-params error, never another protocol
// error, no handler panics, and the next valid call on the same
// connection works. Anything that is not JSON goes in as a skill name.
// The seed corpus is in testdata/fuzz/FuzzToolArguments.
func FuzzToolArguments(f *testing.F) {
	f.Add(uint8(0), []byte(`{"skill": "hello", "script": "scripts/echo.py"}`))
	eng := &fakeEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills}, Runner: eng, SessionsRoot: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(svc).Connect(ctx, st, nil)
	if err != nil {
		f.Fatal(err)
	}
	cs, err := newClient(nil).Connect(ctx, ct, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	listed, err := cs.ListTools(ctx, nil)
	if err != nil || len(listed.Tools) == 0 {
		f.Fatalf("list tools: %v", err)
	}
	var tools []string
	for _, t := range listed.Tools {
		tools = append(tools, t.Name)
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		if !json.Valid(args) {
			args, _ = json.Marshal(map[string]string{"skill": string(args)})
		}
		tool := tools[int(which)%len(tools)]
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := cs.CallTool(cctx, &mcpsdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		var rpc *jsonrpc.Error
		if err != nil && (!errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams) {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		res, err := cs.CallTool(cctx, &mcpsdk.CallToolParams{Name: "list_skills", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("after %s %s, list_skills: %v %+v", tool, args, err, res)
		}
	})
}
