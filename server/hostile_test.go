package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/server"
)

// TestMalformedBodiesAreRefused: what a broken or hostile client sends is a
// 4xx naming the problem, and never reaches the engine.
func TestMalformedBodiesAreRefused(t *testing.T) {
	f := start(t, nil, server.Options{})
	eng := &engine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc})
	require.NoError(t, err)
	withSessions := httptest.NewServer(srv.Handler())
	t.Cleanup(withSessions.Close)
	run := "/v1/skills/hello/python"
	tests := []struct {
		name, path, body string
		status           int
		says             string
	}{
		{"invalid UTF-8 in code", run, "{\"code\": \"print('\xff')\"}", 400, "UTF-8"},
		{"invalid UTF-8 in env", run, "{\"code\": \"1\", \"env\": {\"A\": \"\xc3\"}}", 400, "UTF-8"},
		{"invalid UTF-8 in argv", run, "{\"code\": \"1\", \"argv\": [\"\xed\xa0\x80\"]}", 400, "UTF-8"},
		{"invalid UTF-8 in command", "/v1/skills/hello/exec", "{\"command\": \"echo \xfe\"}", 400, "UTF-8"},
		{"lone surrogate escape", run, `{"code": "print('\ud800')"}`, 400, "surrogate"},
		{"lone low surrogate", run, `{"code": "\udc00"}`, 400, "surrogate"},
		{"field name in another case", run, `{"Code": "print(1)"}`, 400, "case-sensitive"},
		{"field name in capitals", "/v1/skills/hello/run", `{"SCRIPT": "scripts/echo.py"}`, 400, "unknown field"},
		{"two values", run, `{"code": "1"} {"code": "2"}`, 400, "more than one"},
		{"wrong type", run, `{"code": 1}`, 400, "cannot unmarshal"},
		{"huge number", run, `{"code": "1", "memory_mib": 1e400}`, 400, "not the JSON object"},
		{"huge timeout", run, `{"code": "1", "timeout": 1e308}`, 400, "timeout"},
		{"deep nesting", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "args": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, 400, "depth"},
		{"over the bound", run, `{"code": "` + strings.Repeat("x", 40<<20) + `"}`, 413, "over"},
		{"session body in another case", "/v1/sessions", `{"TTL": "1m"}`, 400, "unknown field"},
		{"session body then more", "/v1/sessions", `{"ttl": "1m"} trailing`, 400, "more than one"},
		{"session body over the bound", "/v1/sessions", `{"ttl": "` + strings.Repeat("1", 8<<10) + `"}`, 413, "over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := f.url
			if strings.HasPrefix(tt.path, "/v1/sessions") {
				url = withSessions.URL
			}
			r := call(t, "POST", url+tt.path, tt.body)
			require.Equal(t, tt.status, r.status, string(r.body))
			require.Contains(t, string(r.body), tt.says)
		})
	}
	require.Zero(t, f.eng.runs, "nothing refused reached the engine")
	r := call(t, "POST", f.url+run, `{"code": "print('é \ud83d\ude00')"}`)
	require.Equal(t, http.StatusOK, r.status, "a surrogate pair and UTF-8 are fine: %s", r.body)
}
