//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// storeCall is tenantCall with a body of bytes and a Content-Type.
func storeCall(t *testing.T, url, method, path, label, media string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tenantTokens[label])
	if media != "" {
		req.Header.Set("Content-Type", media)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

// TestTenantsStoredBytesQuota: a token whose sessions and uploads hold its
// stored_bytes is refused a new session, a file, an upload and a run into
// its session (429 naming the quota, no Retry-After: only deleting frees
// it), while a run without a session still runs; GET /v1/usage and
// /metrics show the bytes; deleting a file makes room again.
func TestTenantsStoredBytesQuota(t *testing.T) {
	const name = "tenants-stored"
	dir := t.TempDir()
	flags := tenantFiles(t, "skill_uploads:\n  allow: tokens\n  store: "+filepath.Join(dir, "uploads")+"\n  max_upload_bytes: 64Ki\n"+
		"tenants:\n  labels:\n    store: {stored_bytes: 4Ki}\n")
	srv := startServer(t, tenantSkill(t, name), append(flags, "--sessions", filepath.Join(dir, "sessions"), "--warm-pool", "0")...)
	run := "/v1/skills/" + name + "/run"

	status, _, b := storeCall(t, srv.url, "POST", "/v1/skills", "store", "application/zip", sayZip(t, "stored"))
	require.Equal(t, http.StatusCreated, status, string(b))
	status, _, b = storeCall(t, srv.url, "POST", "/v1/sessions", "store", "application/json", []byte(`{}`))
	require.Equal(t, http.StatusCreated, status, string(b))
	var sess sandboxrun.SessionInfo
	require.NoError(t, json.Unmarshal(b, &sess))
	status, _, b = storeCall(t, srv.url, "PUT", "/v1/sessions/"+sess.ID+"/files/big", "store", "", bytes.Repeat([]byte("x"), 5000))
	require.Less(t, status, 300, "a write that starts below the quota is let in: %s", b)

	u := usageOf(t, srv.url, "store")
	require.NotNil(t, u.Stored)
	require.Equal(t, int64(5000), u.Stored.SessionBytes)
	require.Positive(t, u.Stored.UploadBytes)
	require.Equal(t, u.Stored.SessionBytes+u.Stored.UploadBytes, u.Stored.Bytes)
	require.Equal(t, int64(4096), u.Stored.Limit)

	refused := func(what string, status int, h http.Header, b []byte) {
		t.Helper()
		require.Equal(t, http.StatusTooManyRequests, status, "%s: %s", what, b)
		require.Contains(t, string(b), "quota stored_bytes reached", what)
		require.Contains(t, string(b), "delete sessions, snapshots or uploads", what)
		require.Empty(t, h.Get("Retry-After"), "%s: no wait frees stored bytes", what)
	}
	status, h, b := storeCall(t, srv.url, "POST", "/v1/sessions", "store", "application/json", []byte(`{}`))
	refused("a new session", status, h, b)
	status, h, b = storeCall(t, srv.url, "PUT", "/v1/sessions/"+sess.ID+"/files/more", "store", "", []byte("x"))
	refused("a file", status, h, b)
	status, h, b = storeCall(t, srv.url, "POST", "/v1/skills", "store", "application/zip", sayZip(t, "again"))
	refused("an upload", status, h, b)
	status, h, b = storeCall(t, srv.url, "POST", run, "store", "", []byte(`{"script": "scripts/work.py", "session": "`+sess.ID+`"}`))
	refused("a run into the session", status, h, b)
	require.Equal(t, int64(0), usageOf(t, srv.url, "store").Total.Runs, "the refused run neither ran nor counted")

	status, _, b = storeCall(t, srv.url, "POST", run, "store", "", []byte(`{"script": "scripts/work.py"}`))
	require.Equal(t, http.StatusOK, status, "a run without a session stores nothing: %s", b)

	status, _, b = storeCall(t, srv.url, "GET", "/metrics", "store", "", nil)
	require.Equal(t, http.StatusOK, status)
	page := string(b)
	require.Contains(t, page, fmt.Sprintf("sandboxrun_tenant_stored_bytes{tenant=%q} %d", "store", u.Stored.Bytes))
	require.Contains(t, page, `sandboxrun_tenant_refused_total{reason="stored_bytes",tenant="store"} 4`)
	require.Contains(t, page, `sandboxrun_tenant_stored_bytes{tenant="quiet"} 0`, "every token of the tokens file, from the start")

	status, _, b = storeCall(t, srv.url, "DELETE", "/v1/sessions/"+sess.ID+"/files/big", "store", "", nil)
	require.Less(t, status, 300, string(b))
	status, _, b = storeCall(t, srv.url, "POST", run, "store", "", []byte(`{"script": "scripts/work.py", "session": "`+sess.ID+`"}`))
	require.Equal(t, http.StatusOK, status, "below the quota a run into the session is let in: %s", b)
	status, _, b = storeCall(t, srv.url, "POST", "/v1/sessions", "store", "application/json", []byte(`{}`))
	require.Equal(t, http.StatusCreated, status, string(b))
	eventuallyNoSkillContainers(t, name)
}

// TestTenantsEgressBytesQuota: runs that fetch from a loopback server
// through the egress proxy count the proxy's bytes both ways; once a
// window's egress_bytes are reached the next run is refused (429, the
// quota's name, Retry-After) and the next window lets one in. The usage
// equals the Results' egress bytes.
func TestTenantsEgressBytesQuota(t *testing.T) {
	const name = "tenants-egress"
	const window = 8 * time.Second
	up := startUpstreams(t)
	host := "127.0.0.1:" + up.pp
	root := cliSkill(t, name, fmt.Sprintf("metadata:\n  network_access: \"true\"\n  allowed_domains: %q\n", host), map[string]string{
		"ca.pem":           up.caPEM(),
		"scripts/fetch.py": fetchPy + fmt.Sprintf("print(json.dumps(fetch(%q)))\n", "http://"+host+"/tenant"),
	})
	flags := tenantFiles(t, fmt.Sprintf("network: allowlist\nallowed_domains: [%q]\negress:\n  allow_cidrs: [127.0.0.1/32]\n", host)+
		"tenants:\n  labels:\n    egress: {quotas: [{window: 8s, egress_bytes: 1B}]}\n")
	env := []string{"TMPDIR=" + shortDir(t), "SANDBOXRUN_RUNNER_IMAGE=" + sandboxrun.RunnerImage()}
	srv := startServerEnv(t, env, "", root, append(flags, "--warm-pool", "0")...)
	path := "/v1/skills/" + name + "/run"
	body := `{"script": "scripts/fetch.py"}`

	status, _, b := tenantCall(t, srv.url, "POST", path, "egress", body)
	require.Equal(t, http.StatusOK, status, string(b))
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(b, &res))
	var got fetched
	require.NoError(t, json.Unmarshal(res.Output, &got), res.Stdout+res.Stderr)
	require.Equal(t, fetched{Status: 200, Body: "hello /tenant"}, got)
	require.NotNil(t, res.Egress)
	moved := res.Egress.BytesUp + res.Egress.BytesDown
	require.Positive(t, moved)
	require.Equal(t, moved, usageOf(t, srv.url, "egress").Total.EgressBytes, "the usage is the Result's egress bytes")

	quotaRefusesThenNextWindow(t, srv.url, path, "egress", "egress_bytes", body, window)
	require.Contains(t, strings.Join(up.requests(), "\n"), "/tenant")
	eventuallyNoSkillContainers(t, name)
}
