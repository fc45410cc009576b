package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
)

// explain answers what a run would be, in the connection's workspace, as
// the run tools would decide it; nothing starts. A refusal is the same
// tool error a run of it would get.
func (h *handlers) explain(ctx context.Context, req *mcpsdk.CallToolRequest, in ExplainInput) (*mcpsdk.CallToolResult, *sandboxrun.Explanation, error) {
	var a sandboxrun.Action
	given := 0
	if in.Script != nil && *in.Script != "" {
		a.Script = *in.Script
		given++
	}
	if in.Command != nil && *in.Command != "" {
		a.Command = *in.Command
		given++
	}
	if in.Code != nil && *in.Code != "" {
		a.Code, a.Python = []byte(*in.Code), true
		given++
	}
	if given != 1 {
		return nil, nil, errors.New("give exactly one of script, command and code (the others null)")
	}
	if a.Command != "" && len(in.Argv) > 0 {
		return nil, nil, errors.New("argv does not go with a command: write the arguments into the command")
	}
	if in.ArgsJSON != nil && a.Script == "" {
		return nil, nil, errors.New("args_json goes with a script only: a command carries its arguments, code takes argv")
	}
	r, err := newRequest(in.ArgsJSON, in.TimeoutSeconds)
	if err != nil {
		return nil, nil, err
	}
	r.Argv = in.Argv
	if err := h.files.runIn(req, &r); err != nil {
		return nil, nil, err
	}
	e, err := h.door.Explain(ctx, in.Skill, a, r)
	if err != nil {
		// The error is in sandbox terms, and a refusal comes with what was
		// decided before it: the skill's allowed tools.
		var f facts
		if e != nil {
			f.tools = e.AllowedTools
		}
		return nil, nil, h.toolError(in.Skill, err, f)
	}
	return textResult(explainText(e), false), e, nil
}

// explainText is the short, readable form of an explanation; the
// structured result holds all of it.
func explainText(e *sandboxrun.Explanation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "allowed: %s of skill %s would run", e.Action, e.Skill)
	if len(e.Argv) > 0 {
		fmt.Fprintf(&b, " %s", strings.Join(e.Argv, " "))
	}
	l := e.Limits
	fmt.Fprintf(&b, "\nlimits: timeout %gs, memory %d bytes, %g CPUs, %d processes, network %t\n",
		l.TimeoutSec, l.MemoryBytes, l.CPUs, l.Pids, l.Network)
	if l.Egress != nil {
		if eg, err := json.Marshal(l.Egress); err == nil {
			fmt.Fprintf(&b, "egress: %s\n", eg)
		}
	}
	image := e.Image
	if e.SkillImage {
		image = "the skill's own image, built on " + e.Runner
	}
	fmt.Fprintf(&b, "image: %s\n", image)
	if e.Workspace != "" {
		fmt.Fprintf(&b, "workspace: %s (writable %t)\n", e.Workspace, e.WorkspaceWritable)
	}
	if e.Host.Checked {
		b.WriteString("host: checked against the engine's host (CPUs, memory, runtimes)\n")
	} else {
		fmt.Fprintf(&b, "host: %s\n", e.Host.Reason)
	}
	return b.String()
}
