package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
)

// Run runs one of a skill's scripts. A script that exits non-zero, times
// out or is killed is a Result, not an error; an error is a refusal or a
// failure of the server or the sandbox (an *Error; one from a sandbox that
// failed mid-run carries the Result known so far).
func (c *Client) Run(ctx context.Context, skill string, req RunRequest) (*Result, error) {
	return c.execute(ctx, "run", skill, req)
}

// Exec runs a Bash-tool command, checked against the skill's
// allowed-tools; a denied command is an *Error matching ErrRefused whose
// Part, Reason and Suggest say why.
func (c *Client) Exec(ctx context.Context, skill string, req ExecRequest) (*Result, error) {
	return c.execute(ctx, "exec", skill, req)
}

// Python runs model-written Python in the skill's sandbox.
func (c *Client) Python(ctx context.Context, skill string, req PythonRequest) (*Result, error) {
	return c.execute(ctx, "python", skill, req)
}

// Explain asks what a run of req would be (limits, image, network,
// runner, workspace) without running it; the server decides it as the
// run would. A refusal is an *Error matching ErrRefused, with Part,
// Reason and Suggest for a command and Explanation for what was decided
// before the refusal.
func (c *Client) Explain(ctx context.Context, skill string, req ExplainRequest) (*Explanation, error) {
	body, err := jsonBody(req)
	if err != nil {
		return nil, err
	}
	var e Explanation
	err = c.do(ctx, call{op: "explain", params: map[string]string{"name": skill}, body: body,
		header: map[string]string{"Content-Type": "application/json"}}, &e)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

func (c *Client) execute(ctx context.Context, op, skill string, req any) (*Result, error) {
	body, err := jsonBody(req)
	if err != nil {
		return nil, err
	}
	var res Result
	err = c.do(ctx, call{op: op, params: map[string]string{"name": skill}, body: body,
		header: map[string]string{"Content-Type": "application/json"}}, &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// RunStream is Run with the output as it comes: stdout and stderr events
// and "usage" events (Event.Usage, every RunRequest.UsageEveryMS), then
// one "result" event holding the Result. A failure yields an error
// (an *Error for the server's) and ends the sequence. Stopping the loop
// early closes the connection, which cancels the run.
func (c *Client) RunStream(ctx context.Context, skill string, req RunRequest) iter.Seq2[Event, error] {
	return c.stream(ctx, "run", skill, req)
}

// ExecStream is Exec with the output as it comes (see RunStream).
func (c *Client) ExecStream(ctx context.Context, skill string, req ExecRequest) iter.Seq2[Event, error] {
	return c.stream(ctx, "exec", skill, req)
}

// PythonStream is Python with the output as it comes (see RunStream).
func (c *Client) PythonStream(ctx context.Context, skill string, req PythonRequest) iter.Seq2[Event, error] {
	return c.stream(ctx, "python", skill, req)
}

// errNoResult is a stream that ended before its last event.
var errNoResult = errors.New("the stream ended before the result: the connection was cut")

func (c *Client) stream(ctx context.Context, op, skill string, req any) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		body, err := jsonBody(req)
		if err != nil {
			yield(Event{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, err := c.send(ctx, call{op: op, params: map[string]string{"name": skill}, body: body,
			header: map[string]string{"Content-Type": "application/json", "Accept": "application/x-ndjson"}})
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev Event
			if err := dec.Decode(&ev); err != nil {
				if errors.Is(err, io.EOF) {
					err = errNoResult
				}
				yield(Event{}, fmt.Errorf("%s stream: %w", op, err))
				return
			}
			switch ev.Type {
			case "error":
				e := ev.Error
				if e == nil {
					e = &Error{Message: "the stream ended with an error event and no error"}
				}
				// The status line went out with the first event: what
				// failed after it is the server's or the sandbox's.
				e.Status = http.StatusInternalServerError
				yield(ev, e)
				return
			case "result":
				if ev.Result == nil {
					yield(ev, fmt.Errorf("%s stream: a result event without a result", op))
					return
				}
				yield(ev, nil)
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}
