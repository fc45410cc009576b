package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// maxBodyBytes bounds a request body: the largest arguments or code plus
// room for the other fields.
const maxBodyBytes = policy.MaxArgsBytes + sandboxrun.MaxCodeBytes + 64<<10

// execBody is the JSON body of the run, exec and python endpoints. Which of
// script, command and code is required depends on the endpoint; the others
// must be absent.
type execBody struct {
	Script    string            `json:"script,omitempty"`
	Command   string            `json:"command,omitempty"`
	Code      string            `json:"code,omitempty"`
	Args      json.RawMessage   `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Timeout   json.RawMessage   `json:"timeout,omitempty"`
	MemoryMiB int64             `json:"memory_mib,omitempty"`
	CPUs      float64           `json:"cpus,omitempty"`
	Session   string            `json:"session,omitempty"`
	// Workspace is refused with directions: workspace ids became sessions.
	Workspace json.RawMessage `json:"workspace,omitempty"`
	// Argv are the script's (or the code's) command-line arguments, as
	// `sandboxrun run SKILL SCRIPT -- ARG...` passes them; bounded by
	// policy.CheckArgv. Not on exec: a command carries its own.
	Argv []string `json:"argv,omitempty"`
	// UsageEveryMS is how often a run's resource use is sampled, in
	// milliseconds: absent is every sandbox.DefaultUsageEvery on a stream
	// and never otherwise, 0 is never; the server raises a shorter
	// interval to its floor (serve --usage-every-min). Samples are usage
	// events on a stream; the Result keeps the peaks.
	UsageEveryMS *int64 `json:"usage_every_ms,omitempty"`
}

// errBadRequest marks a body the server cannot use; the message says why.
var errBadRequest = errors.New("bad request")

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, a...))
}

// decodeBody reads one JSON object, bounded (413 past it), UTF-8, with no
// unknown field and keys spelled exactly (decodeStrict), and
// checks that it carries exactly the field its endpoint needs.
func decodeBody(w http.ResponseWriter, r *http.Request, need string) (execBody, error) {
	var b execBody
	raw, err := readBody(w, r, maxBodyBytes)
	if err != nil {
		return b, err
	}
	if err := decodeStrict(raw, &b); err != nil {
		return b, badRequest("the body is not the JSON object this endpoint takes: %v", err)
	}
	given := map[string]bool{"script": b.Script != "", "command": b.Command != "", "code": b.Code != ""}
	if need == anyAction {
		if need = b.action(); need == "" {
			return b, badRequest(`give exactly one of "script", "command" and "code"`)
		}
	}
	for field, set := range given {
		if field != need && set {
			return b, badRequest("%q does not belong to this endpoint; it takes %q", field, need)
		}
	}
	if !given[need] {
		return b, badRequest("%q is required", need)
	}
	if need == "command" && len(b.Argv) > 0 {
		return b, badRequest(`"argv" does not belong to this endpoint: a command carries its own arguments, write them into "command"`)
	}
	return b, nil
}

// anyAction is the need of the explain endpoint: any one of the three.
const anyAction = "script, command or code"

// action is the one of script, command and code the body sets, or "" when
// it sets none or more than one.
func (b execBody) action() string {
	set := ""
	for field, v := range map[string]string{"script": b.Script, "command": b.Command, "code": b.Code} {
		if v == "" {
			continue
		}
		if set != "" {
			return ""
		}
		set = field
	}
	return set
}

// timeout reads "timeout": a number of seconds or a duration string ("10s").
func (b execBody) timeout() (time.Duration, error) {
	raw := bytes.TrimSpace(b.Timeout)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var text string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, badRequest("timeout: %v", err)
		}
	} else {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return 0, badRequest("timeout %s: give seconds (10) or a duration (\"10s\")", raw)
		}
		text = strconv.FormatFloat(f, 'f', -1, 64)
	}
	d, err := policy.ParseSeconds(text)
	if err != nil {
		return 0, badRequest("timeout: %v", err)
	}
	return d, nil
}

// request turns a body into a Service request. A session id makes the
// session's folder the run's /workspace; without one the run has an empty,
// read-only /workspace.
func (b execBody) request() (sandboxrun.Request, error) {
	timeout, err := b.timeout()
	if err != nil {
		return sandboxrun.Request{}, err
	}
	if b.MemoryMiB < 0 || b.CPUs < 0 {
		return sandboxrun.Request{}, badRequest("memory_mib and cpus must not be negative")
	}
	if len(b.Workspace) > 0 {
		return sandboxrun.Request{}, badRequest("\"workspace\" is gone: create a session (POST /v1/sessions), put files in it, and pass \"session\": ID")
	}
	if b.UsageEveryMS != nil && *b.UsageEveryMS < 0 {
		return sandboxrun.Request{}, badRequest("usage_every_ms must not be negative: give 0 for no usage samples")
	}
	return sandboxrun.Request{Args: b.Args, Argv: b.Argv, Env: b.Env, Timeout: timeout, MemoryMiB: b.MemoryMiB, CPUs: b.CPUs,
		Session: b.Session}, nil
}

// usageEvery is the sampling interval the body asks for: streamed says
// whether the answer is a stream, where sampling is on by default.
func (b execBody) usageEvery(streamed bool) time.Duration {
	switch {
	case b.UsageEveryMS != nil:
		return time.Duration(*b.UsageEveryMS) * time.Millisecond
	case streamed:
		return sandbox.DefaultUsageEvery
	}
	return 0
}
