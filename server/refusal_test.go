package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A refused run, on every run endpoint and in either answer form, tells the
// caller the policy's words without the operator's folders: the policy
// file, the skills' folder and the sessions' root stay on the host.
func TestRefusedRunNamesNoHostPath(t *testing.T) {
	url, eng, host := startExplain(t)
	sess := newSession(t, url, tokenA)
	tests := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"script over the ceiling", "hello/run", `{"script": "scripts/echo.py", "timeout": 100}`, 403, "operator policy line 2"},
		{"command over the ceiling", "hello/exec", `{"command": "python3 scripts/echo.py", "timeout": 100}`, 403, "operator policy line 2"},
		{"python over the ceiling", "hello/python", `{"code": "print(1)", "timeout": 100}`, 403, "operator policy line 2"},
		{"in a session", "hello/python", `{"code": "print(1)", "timeout": 100, "session": "` + sess + `"}`, 403, "operator policy line 2"},
		{"denied command", "hello/exec", `{"command": "curl http://x"}`, 403, "Bash(curl:*)"},
		{"script outside the skill", "hello/run", `{"script": "../../etc/passwd"}`, 403, `\"..\"`},
		{"unknown skill", "nope/run", `{"script": "scripts/echo.py"}`, 404, "the skills folder"},
	}
	for _, tt := range tests {
		for _, accept := range []string{"", "application/x-ndjson"} {
			t.Run(tt.name+" "+accept, func(t *testing.T) {
				header := as(tokenA)
				if accept != "" {
					header = append(header, "Accept", accept)
				}
				r := call(t, "POST", url+"/v1/skills/"+tt.path, tt.body, header...)
				require.Equal(t, tt.status, r.status, string(r.body))
				requireSchema(t, "Error", r.body)
				requireNoHostPath(t, r.body, host)
				require.NotContains(t, string(r.body), "../skills", "the skills' folder as the operator named it")
				require.Contains(t, string(r.body), tt.want)
			})
		}
	}
	t.Run("activating an unknown skill", func(t *testing.T) {
		r := call(t, "GET", url+"/v1/skills/nope", "", as(tokenA)...)
		require.Equal(t, http.StatusNotFound, r.status, string(r.body))
		requireNoHostPath(t, r.body, host)
		require.NotContains(t, string(r.body), "../skills")
	})
	require.Empty(t, eng.workspaces, "a refused run starts nothing")
}
