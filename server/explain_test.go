package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

// explanation is the part of an Explanation these tests read.
type explanation struct {
	Skill     string         `json:"skill"`
	Action    string         `json:"action"`
	Argv      []string       `json:"argv"`
	Command   string         `json:"command"`
	Limits    map[string]any `json:"limits"`
	Runner    string         `json:"runner"`
	Image     string         `json:"image"`
	Workspace string         `json:"workspace"`
	Session   string         `json:"session"`
}

// startExplain serves the repository's skills under a policy read from a
// file, with sessions, so that every host path an answer could leak is
// known: the skills' folder, the policy file and the sessions' root.
func startExplain(t *testing.T) (url string, eng *specEngine, hostPaths []string) {
	t.Helper()
	dir := t.TempDir()
	polPath := filepath.Join(dir, "operator-policy.yaml")
	require.NoError(t, os.WriteFile(polPath, []byte("limits:\n  timeout: {default: 5s, max: 20s}\n"), 0o600))
	pol, err := policy.LoadPolicy(polPath)
	require.NoError(t, err)
	sessions := filepath.Join(dir, "sessions")
	eng = &specEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{eng},
		SessionsRoot: sessions, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	skills, err := filepath.Abs("../skills")
	require.NoError(t, err)
	return ts.URL, eng, []string{dir, skills, polPath, sessions}
}

// requireNoHostPath fails when body names any of the host's folders.
func requireNoHostPath(t *testing.T, body []byte, hostPaths []string) {
	t.Helper()
	for _, p := range hostPaths {
		require.NotContains(t, string(body), p, "the answer leaks a host path")
		if real, err := filepath.EvalSymlinks(p); err == nil {
			require.NotContains(t, string(body), real, "the answer leaks a host path")
		}
	}
}

func TestExplainAllowed(t *testing.T) {
	url, eng, host := startExplain(t)
	sess := newSession(t, url, tokenA)
	tests := []struct {
		name, body, action, argv0 string
	}{
		{"script", `{"script": "scripts/echo.py", "argv": ["a"], "timeout": 7}`, "script", "python3"},
		{"command", `{"command": "python3 scripts/echo.py"}`, "command", "bash"},
		{"python", `{"code": "print(1)"}`, "python", "python3"},
		{"in a session", `{"script": "scripts/echo.py", "session": "` + sess + `"}`, "script", "python3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "POST", url+"/v1/skills/hello/explain", tt.body, as(tokenA)...)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			requireSchema(t, "Explanation", r.body)
			requireNoHostPath(t, r.body, host)
			var e explanation
			require.NoError(t, json.Unmarshal(r.body, &e))
			require.Equal(t, "hello", e.Skill)
			require.Equal(t, tt.action, e.Action)
			require.Equal(t, tt.argv0, e.Argv[0])
			require.NotEmpty(t, e.Runner)
			require.NotEmpty(t, e.Image)
			require.Equal(t, false, e.Limits["network"])
		})
	}
	t.Run("the skill's references are resolved in the sandbox", func(t *testing.T) {
		r := call(t, "POST", url+"/v1/skills/hello/explain", `{"command": "python3 scripts/echo.py"}`, as(tokenA)...)
		var e explanation
		require.NoError(t, json.Unmarshal(r.body, &e))
		require.Equal(t, "python3 /skills/hello/scripts/echo.py", e.Command)
	})
	t.Run("the request's timeout is the limit", func(t *testing.T) {
		r := call(t, "POST", url+"/v1/skills/hello/explain", `{"script": "scripts/echo.py", "timeout": 7}`, as(tokenA)...)
		var e explanation
		require.NoError(t, json.Unmarshal(r.body, &e))
		require.InDelta(t, 7.0, e.Limits["timeout_s"], 0.001)
	})
	t.Run("a session is named by its id and mounted at /workspace", func(t *testing.T) {
		r := call(t, "POST", url+"/v1/skills/hello/explain", `{"code": "print(1)", "session": "`+sess+`"}`, as(tokenA)...)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var e explanation
		require.NoError(t, json.Unmarshal(r.body, &e))
		require.Equal(t, "/workspace", e.Workspace)
		require.Equal(t, sess, e.Session)
	})
	require.Empty(t, eng.workspaces, "explain started nothing")
}

func TestExplainRefusedAndErrors(t *testing.T) {
	url, eng, host := startExplain(t)
	sess := newSession(t, url, tokenA)
	tests := []struct {
		name, skill, body string
		status            int
		part, want        string
		explained         bool // the plan got far enough to say something
	}{
		{"denied command", "hello", `{"command": "echo hi && curl http://x"}`, 403, "curl http://x", "Bash(curl:*)", true},
		{"timeout above the policy's ceiling", "hello", `{"script": "scripts/echo.py", "timeout": 100}`, 403, "", "operator policy line 2", true},
		{"reserved variable", "hello", `{"code": "print(1)", "env": {"BASH_ENV": "/x"}}`, 403, "", "BASH_ENV", true},
		{"script outside the skill", "hello", `{"script": "../../etc/passwd"}`, 403, "", `\"..\"`, false},
		{"unknown skill", "nope", `{"script": "scripts/echo.py"}`, 404, "", "nope", false},
		{"no action", "hello", `{"timeout": 3}`, 400, "", "exactly one of", false},
		{"two actions", "hello", `{"script": "scripts/echo.py", "code": "print(1)"}`, 400, "", "exactly one of", false},
		{"argv with a command", "hello", `{"command": "echo", "argv": ["x"]}`, 400, "", "argv", false},
		{"unknown field", "hello", `{"code": "1", "image": "evil"}`, 400, "", "image", false},
		{"someone else's session", "hello", `{"code": "1", "session": "` + sess + `"}`, 404, "", "session", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := tokenA
			if tt.name == "someone else's session" {
				tok = tokenB
			}
			r := call(t, "POST", url+"/v1/skills/"+tt.skill+"/explain", tt.body, as(tok)...)
			require.Equal(t, tt.status, r.status, string(r.body))
			requireSchema(t, "Error", r.body)
			requireNoHostPath(t, r.body, host)
			require.Contains(t, string(r.body), tt.want)
			var body struct {
				Part        string       `json:"part"`
				Explanation *explanation `json:"explanation"`
			}
			require.NoError(t, json.Unmarshal(r.body, &body))
			require.Equal(t, tt.part, body.Part)
			if !tt.explained {
				require.Nil(t, body.Explanation)
				return
			}
			require.NotNil(t, body.Explanation, "a refusal says what was decided before it")
			require.Equal(t, "hello", body.Explanation.Skill)
		})
	}
	require.Empty(t, eng.workspaces, "explain started nothing")
}

func TestExplainRequestSchema(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"script": "scripts/x.py", "argv": ["a"]}`: true,
		`{"command": "echo hi", "timeout": "5s"}`:   true,
		`{"code": "print(1)", "session": "abc"}`:    true,
		`{"timeout": 5}`:                            false,
		`{"script": "scripts/x.py", "code": "1"}`:   false,
		`{"code": "1", "image": "alpine"}`:          false,
	} {
		if ok {
			require.NoError(t, checkSchema("ExplainRequest", []byte(body)), body)
		} else {
			require.Error(t, checkSchema("ExplainRequest", []byte(body)), body)
		}
	}
}

func TestExplainNeedsTheToken(t *testing.T) {
	url, _, _ := startExplain(t)
	r := call(t, "POST", url+"/v1/skills/hello/explain", `{"code": "print(1)"}`)
	require.Equal(t, http.StatusUnauthorized, r.status)
}
