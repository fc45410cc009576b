//go:build helm

package helm

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
)

// egressThroughReplica runs egressSkill's script through base (one
// replica): the sandbox Pod's connections go over its attach stream to
// the run's proxy in that replica, which puts the secret's value into the
// request to the upstream (verified with the chart's egress.upstreamCA)
// and refuses refusedHost. name marks the request's path.
func (c *cluster) egressThroughReplica(api *client, base, name, secret string) {
	t := api.t
	start := time.Now()
	body := api.do("POST", base+"/v1/skills/"+egressSkill+"/run", `{"script": "scripts/call.py", "argv": ["`+name+`"]}`, 200)
	t.Logf("a run with egress and a secret through %s: %s", name, time.Since(start).Round(time.Millisecond))
	var res struct {
		runResult
		Output struct {
			Token   string `json:"token"`
			Body    string `json:"body"`
			Refused string `json:"refused"`
		} `json:"output"`
		Egress *struct {
			Requests int64 `json:"requests"`
			Allowed  int64 `json:"allowed"`
			Denied   int64 `json:"denied"`
			Hosts    []struct {
				Host    string `json:"host"`
				Port    int    `json:"port"`
				Allowed int64  `json:"allowed"`
				Denied  int64  `json:"denied"`
			} `json:"hosts"`
		} `json:"egress"`
	}
	api.json(body, &res)
	require.Equal(t, 0, res.ExitCode, "%s", body)
	require.True(t, strings.HasPrefix(res.Output.Token, "sandboxrun-secret-"), "the sandbox holds a placeholder: %q", res.Output.Token)
	require.Equal(t, "auth=Bearer "+strings.Repeat("*", len(secret)), res.Output.Body, "the upstream got the value; the proxy masked its echo")
	require.Contains(t, res.Output.Refused, "403", "the proxy refuses a host outside the allowlist")
	require.NotContains(t, string(body), secret, "the value is nowhere in the Result")
	require.Contains(t, c.upstreamSaw(), fmt.Sprintf("seen GET /v1/me/%s auth=Bearer %s", name, secret),
		"the upstream received the real value")

	// Allowed: the tunnel to the upstream and the one request in it,
	// which the proxy ended (the host carries a secret); denied: the
	// tunnel to refusedHost.
	require.NotNil(t, res.Egress, "%s", body)
	require.EqualValues(t, 3, res.Egress.Requests, "%+v", res.Egress)
	require.EqualValues(t, 2, res.Egress.Allowed, "%+v", res.Egress)
	require.EqualValues(t, 1, res.Egress.Denied, "%+v", res.Egress)
	hosts := map[string][2]int64{}
	for _, h := range res.Egress.Hosts {
		hosts[fmt.Sprintf("%s:%d", h.Host, h.Port)] = [2]int64{h.Allowed, h.Denied}
	}
	require.Equal(t, map[string][2]int64{upstreamHost + ":443": {2, 0}, refusedHost + ":443": {0, 1}}, hosts,
		"allowed and denied per host: %+v", res.Egress.Hosts)
	out, err := json.Marshal(res.Egress)
	require.NoError(t, err)
	t.Logf("egress of the run through %s: %s", name, out)
}
