package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Client calls one sandboxrun server. It is safe for concurrent use.
type Client struct {
	base  string // scheme://host, no trailing slash
	token string
	hc    *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token (default $SANDBOXRUN_TOKEN).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient replaces the HTTP client (default: one with no overall
// timeout, since a run lasts as long as its own limit; pass a context with
// a deadline to bound a call). For a unix socket URL its transport is
// replaced by one dialing the socket. Either way a request other than GET
// or HEAD follows no redirect (see ErrRedirect); hc itself is not changed.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client of the server at rawURL: http://host:port,
// https://host:port or unix:/path/to.sock. An empty rawURL reads
// $SANDBOXRUN_URL.
func New(rawURL string, opts ...Option) (*Client, error) {
	if rawURL == "" {
		rawURL = os.Getenv("SANDBOXRUN_URL")
	}
	if rawURL == "" {
		return nil, errors.New("sandboxrun client: no server URL: pass one (http://127.0.0.1:8080 or unix:/run/sandboxrun.sock) or set SANDBOXRUN_URL")
	}
	c := &Client{token: os.Getenv("SANDBOXRUN_TOKEN"), hc: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	hc := *c.hc // the caller's client is not changed
	hc.CheckRedirect = followOnlyReads(hc.CheckRedirect)
	c.hc = &hc
	if sock, ok := strings.CutPrefix(rawURL, "unix:"); ok {
		if sock == "" {
			return nil, errors.New("sandboxrun client: unix: needs a socket path, e.g. unix:/run/sandboxrun.sock")
		}
		hc := *c.hc
		hc.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
		c.hc, c.base = &hc, "http://sandboxrun"
		return c, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sandboxrun client: URL %q: give http://host:port, https://host:port or unix:/path", rawURL)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("sandboxrun client: URL %q has a path; give the server's root, e.g. %s://%s", rawURL, u.Scheme, u.Host)
	}
	c.base = u.Scheme + "://" + u.Host
	return c, nil
}

// call is one request: the operation's path with its parameters, a body,
// extra headers.
type call struct {
	op     string
	params map[string]string // {name}, {id}, {path}
	query  url.Values
	body   io.Reader
	header map[string]string
}

// send makes the request and returns the response when its status is 2xx;
// otherwise it reads the error body into an *Error.
func (c *Client) send(ctx context.Context, cl call) (*http.Response, error) {
	op, ok := operations[cl.op]
	if !ok {
		panic("sandboxrun client: unknown operation " + cl.op)
	}
	p, err := pathOf(op.path, cl.params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cl.op, err)
	}
	u := c.base + p
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, op.method, u, cl.body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cl.op, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range cl.header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cl.op, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified {
		return nil, redirected(resp)
	}
	return nil, readError(resp)
}

// maxErrorBody bounds an error answer; one carrying a Result holds its
// capped output.
const maxErrorBody = 64 << 20

func readError(resp *http.Response) error {
	e := &Error{Status: resp.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err := json.Unmarshal(raw, e); err != nil || e.Message == "" {
		e.Message = strings.TrimSpace(string(raw))
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		}
	}
	return e
}

// do sends cl and decodes a JSON answer into out (when out is not nil).
func (c *Client) do(ctx context.Context, cl call, out any) error {
	resp, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s: reading the answer: %w", cl.op, err)
	}
	return nil
}

func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return bytes.NewReader(b), nil
}

// Healthz reports whether the server process is up.
func (c *Client) Healthz(ctx context.Context) (Status, error) {
	var s Status
	return s, c.do(ctx, call{op: "healthz"}, &s)
}

// Readyz reports whether the engine answers and the runner image is
// present; a server that is not ready answers an *Error matching
// ErrUnavailable with the reason.
func (c *Client) Readyz(ctx context.Context) (Status, error) {
	var s Status
	return s, c.do(ctx, call{op: "readyz"}, &s)
}

// Metrics returns the Prometheus text exposition (served when the server
// was started with metrics).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	resp, err := c.send(ctx, call{op: "metrics"})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// OpenAPI returns the server's OpenAPI document.
func (c *Client) OpenAPI(ctx context.Context) (map[string]any, error) {
	var doc map[string]any
	return doc, c.do(ctx, call{op: "openapi"}, &doc)
}

// Skills lists the skills, name and description only.
func (c *Client) Skills(ctx context.Context) ([]SkillSummary, error) {
	var out struct {
		Skills []SkillSummary `json:"skills"`
	}
	return out.Skills, c.do(ctx, call{op: "listSkills"}, &out)
}

// Activate returns a skill's instructions, files and allowed tools.
func (c *Client) Activate(ctx context.Context, skill string) (*Activation, error) {
	var a Activation
	if err := c.do(ctx, call{op: "activateSkill", params: map[string]string{"name": skill}}, &a); err != nil {
		return nil, err
	}
	return &a, nil
}
