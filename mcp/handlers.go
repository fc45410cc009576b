package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/skill"
)

// handlers turn tool calls into Service calls and Service answers into tool
// results. Nothing here decides what may run.
type handlers struct {
	// door is the Service as the connections' caller reaches it: their
	// owner (the digest of the token that opened them, else
	// sessionOwner), remote, so every answer names sandbox folders only.
	// Skills resolve as it (the operator's, and its uploads), as for its
	// HTTP requests.
	door     *sandboxrun.Door
	log      *slog.Logger
	interval time.Duration
	base     context.Context // the server's lifetime, not a request's
	files    files           // where file tools and runs work

	mu     sync.Mutex
	listed map[string]string // resource URI -> description, as registered
}

func (h *handlers) listSkills(_ context.Context, _ *mcpsdk.CallToolRequest, _ ListSkillsInput) (*mcpsdk.CallToolResult, ListSkillsOutput, error) {
	skills := h.skills(true)
	out := ListSkillsOutput{Skills: make([]SkillSummary, 0, len(skills))}
	var b strings.Builder
	for _, sk := range skills {
		out.Skills = append(out.Skills, SkillSummary{Name: sk.Name, Description: sk.Description, WhenToUse: sk.WhenToUse})
		fmt.Fprintf(&b, "- %s: %s\n", sk.Name, sk.Description)
		if sk.WhenToUse != "" {
			fmt.Fprintf(&b, "  When to use: %s\n", sk.WhenToUse)
		}
	}
	if len(skills) == 0 {
		b.WriteString("No skills are installed.")
	}
	return textResult(b.String(), false), out, nil
}

// skills are those the owner may name, as its GET /v1/skills lists them,
// less those with disable-model-invocation: the host's to name, never
// shown to the model. What could not be listed is the operator's problem,
// not the model's: logged when logBroken, and left out.
func (h *handlers) skills(logBroken bool) []sandboxrun.Listed {
	all, errs := h.door.ListSkills()
	if logBroken {
		for _, err := range errs {
			h.log.Warn("skill left out of the list", "err", err)
		}
	}
	out := make([]sandboxrun.Listed, 0, len(all))
	for _, sk := range all {
		if !sk.DisableModelInvocation {
			out = append(out, sk)
		}
	}
	return out
}

func (h *handlers) activateSkill(_ context.Context, _ *mcpsdk.CallToolRequest, in SkillInput) (*mcpsdk.CallToolResult, ActivateOutput, error) {
	a, err := h.door.Activate(in.Skill)
	if err != nil {
		return nil, ActivateOutput{}, h.toolError(in.Skill, err, facts{})
	}
	out := ActivateOutput{
		Name:         a.Name,
		Description:  a.Description,
		BaseDir:      a.BaseDir,
		Instructions: a.Body,
		Scripts:      orEmpty(a.Scripts),
		References:   orEmpty(a.References),
		Assets:       orEmpty(a.Assets),
		AllowedTools: toolStrings(a.AllowedTools),
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s (folder %s in the sandbox)\n\n%s\n", a.Name, a.BaseDir, strings.TrimSpace(a.Body))
	for _, l := range []struct {
		name  string
		items []string
	}{{"Scripts", out.Scripts}, {"References", out.References}, {"Assets", out.Assets}, {"Allowed tools", out.AllowedTools}} {
		if len(l.items) > 0 {
			fmt.Fprintf(&b, "\n%s: %s", l.name, strings.Join(l.items, ", "))
		}
	}
	return textResult(b.String(), false), out, nil
}

func (h *handlers) runScript(ctx context.Context, req *mcpsdk.CallToolRequest, in RunScriptInput) (*mcpsdk.CallToolResult, *RunOutput, error) {
	r, err := newRequest(in.ArgsJSON, in.TimeoutSeconds)
	if err != nil {
		return nil, nil, err
	}
	r.Argv = in.Argv
	x, err := h.run(ctx, req, in.Skill+" "+in.Script, in.Skill, sandboxrun.Action{Script: in.Script}, r)
	return h.runResult(in.Skill, x, err)
}

func (h *handlers) runCommand(ctx context.Context, req *mcpsdk.CallToolRequest, in RunCommandInput) (*mcpsdk.CallToolResult, *RunOutput, error) {
	r, err := newRequest(nil, in.TimeoutSeconds)
	if err != nil {
		return nil, nil, err
	}
	x, err := h.run(ctx, req, in.Skill+" command", in.Skill, sandboxrun.Action{Command: in.Command}, r)
	return h.runResult(in.Skill, x, err)
}

func (h *handlers) runPython(ctx context.Context, req *mcpsdk.CallToolRequest, in RunPythonInput) (*mcpsdk.CallToolResult, *sandboxrun.PythonResult, error) {
	r, err := newRequest(nil, in.TimeoutSeconds)
	if err != nil {
		return nil, nil, err
	}
	r.Argv = in.Argv
	x, err := h.run(ctx, req, in.Skill+" python", in.Skill, sandboxrun.Action{Code: []byte(in.Code), Python: true}, r)
	if err != nil {
		return nil, nil, h.toolError(in.Skill, err, facts{})
	}
	res, err := x.Answer()
	if err != nil && (res == nil || !res.Started) {
		return nil, nil, h.toolError(in.Skill, err, runFacts(x))
	}
	pr := sandboxrun.NewPythonResult(in.Skill, res, err)
	return textResult(pythonText(&pr)+filesText(pr.Files), pr.ReturnCode != 0 || pr.Error != ""), &pr, nil
}

// run makes one Service call: cancelled when the request is (the client
// cancelled it or went away) or the server stops, and reporting progress
// while it lasts when the client asked for that. A workspace that could
// not be given stops it before the Service is asked: no Execution, and the
// error as the caller is told it.
func (h *handlers) run(ctx context.Context, req *mcpsdk.CallToolRequest, what, skillName string, a sandboxrun.Action, r sandboxrun.Request) (*sandboxrun.Execution, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.base, cancel)()
	if err := h.files.runIn(req, &r); err != nil {
		return nil, err
	}
	defer h.watch(ctx, req, what, &r)()
	return h.door.Execute(ctx, skillName, a, r), nil
}

// runResult answers a run of a script or a command: a run that never
// started is a tool error saying why; one that started is its result,
// marked as an error unless it succeeded.
func (h *handlers) runResult(skillName string, x *sandboxrun.Execution, err error) (*mcpsdk.CallToolResult, *RunOutput, error) {
	if err != nil {
		return nil, nil, h.toolError(skillName, err, facts{})
	}
	res, err := x.Answer()
	if err != nil && (res == nil || !res.Started) {
		return nil, nil, h.toolError(skillName, err, runFacts(x))
	}
	out := runOutput(res, err)
	return textResult(runText(out, res), !out.Success), out, nil
}

// maxTimeoutSeconds keeps the conversion to a Duration from overflowing;
// the policy's ceiling, far lower, is what refuses a long timeout.
const maxTimeoutSeconds = 1e9

// newRequest translates the tool inputs every run shares.
func newRequest(argsJSON *string, timeoutSeconds *float64) (sandboxrun.Request, error) {
	var r sandboxrun.Request
	if argsJSON != nil {
		r.Args = []byte(*argsJSON)
	}
	if t := timeoutSeconds; t != nil {
		if math.IsNaN(*t) || *t <= 0 || *t > maxTimeoutSeconds {
			return r, fmt.Errorf("timeout_seconds %v is not a positive number of seconds: pass e.g. 30, or null for the skill's own limit", *t)
		}
		r.Timeout = time.Duration(*t * float64(time.Second))
	}
	return r, nil
}

// busyHint is the overload answer, the HTTP API's 429 with Retry-After in
// words a model acts on: nothing ran, and the same call later may.
const busyHint = "busy: every sandbox slot of this server is taken and its queue is full, so nothing ran; retry the same call after about 1 second (retry_after_seconds: 1)"

// quotaHint is a quota's refusal, the HTTP API's 429 with Retry-After in
// words a model acts on: nothing ran, and when the same call may.
func quotaHint(err error) error {
	var qe *sandboxrun.QuotaError
	if !errors.As(err, &qe) {
		return fmt.Errorf("quota: %w", err)
	}
	if qe.RetryAfterSeconds() == 0 {
		return fmt.Errorf("quota: %s", qe.Error()) // stored_bytes: no wait frees it
	}
	return fmt.Errorf("quota: %s (retry_after_seconds: %d)", qe.Error(), qe.RetryAfterSeconds())
}

// toolError words a failure for the model. The Service's words are kept,
// except where they speak to an operator about host folders: a model names
// skills, so it is told about skills, and of folders as the sandbox has them.
// err is in sandbox terms already, its typed errors' fields too (the
// Service's remote answers); f names the skill's allowed tools.
func (h *handlers) toolError(skillName string, err error, f facts) error {
	var denied *policy.DeniedError
	var parseErr *skill.ParseError
	var manifestErr *skill.ManifestError
	switch {
	case errors.Is(err, skill.ErrSkillNotFound):
		return fmt.Errorf("no skill named %q: call list_skills for the names", skillName)
	case errors.As(err, &parseErr):
		return fmt.Errorf("skill %q does not load: its SKILL.md is invalid (%s); ask the operator to fix it", skillName, parseErr.Msg)
	case errors.As(err, &manifestErr):
		return fmt.Errorf("skill %q does not load: %s; ask the operator to fix it", skillName, strings.Join(manifestErr.Problems, "; "))
	case errors.As(err, &denied):
		msg := err.Error()
		if f.tools != nil {
			msg += ". The skill's allowed-tools: " + strings.Join(f.tools, ", ")
		}
		return errors.New(msg)
	case errors.Is(err, sandboxrun.ErrRefused):
		return errors.New("refused: " + err.Error())
	case errors.Is(err, sandboxrun.ErrBusy):
		return errors.New(busyHint)
	case errors.Is(err, sandboxrun.ErrQuota):
		return quotaHint(err)
	case errors.Is(err, context.Canceled):
		return errors.New("cancelled before the sandbox started")
	default:
		h.log.Warn("run failed before its sandbox started", "skill", skillName, "err", err)
		return errors.New("the sandbox could not be started: " + err.Error())
	}
}

// facts are what toolError words a failure with besides its error, from
// what the request loaded: the zero value when it loaded nothing.
type facts struct {
	// tools are the skill's allowed-tools with the operator's grants;
	// nil when the skill did not load.
	tools []string
}

// runFacts are the facts a run's Execution carries.
func runFacts(x *sandboxrun.Execution) facts {
	var f facts
	if t := x.AllowedTools(); t != nil {
		f.tools = make([]string, len(t))
		for i, tool := range t {
			f.tools[i] = tool.String()
		}
	}
	return f
}

func textResult(text string, isError bool) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}, IsError: isError}
}

func toolStrings(ts bashcheck.Tools) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
