//go:build kube

package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

const kubeSecret = "ghp_kube_secret_4e1a77c02b9d"

// A skill granted a secret on the kubernetes backend sees a placeholder;
// the run's proxy, in the sandboxrun process, puts the value into its
// requests to the one host it may go to; and the value is in no object the
// cluster's API stores: every version of every Pod the run made is read
// from a watch and searched for it.
func TestSecretsOnKubernetesStayInTheProcess(t *testing.T) {
	var mu sync.Mutex
	var seen strings.Builder
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fmt.Fprintf(&seen, "%s %s auth=%s\n", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprintf(w, "auth=%s", r.Header.Get("Authorization"))
	}))
	api.Config.ErrorLog = log.New(io.Discard, "", 0)
	api.StartTLS()
	t.Cleanup(api.Close)
	host := strings.TrimPrefix(api.URL, "https://")

	dir := t.TempDir()
	caFile := filepath.Join(dir, "upstream-ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}), 0o644))
	skills := filepath.Join(dir, "skills")
	require.NoError(t, os.MkdirAll(filepath.Join(skills, "caller/scripts"), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skills, "caller/SKILL.md"), []byte(fmt.Sprintf(
		"---\nname: caller\ndescription: calls an API.\nmetadata:\n  network_access: \"true\"\n  allowed_domains: \"%s\"\n  secrets: \"API_TOKEN\"\n---\nBody.\n", host)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(skills, "caller/scripts/call.py"), []byte(`import json, os, sys, urllib.request
tok = os.environ.get("API_TOKEN", "")
req = urllib.request.Request(sys.argv[1] + "/v1/me", headers={"Authorization": "Bearer " + tok})
with urllib.request.urlopen(req, timeout=20) as r:
    body = r.read().decode()
print(json.dumps({"token": tok, "body": body, "ifaces": sorted(os.listdir("/sys/class/net"))}))
`), 0o644))
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(fmt.Sprintf(`backend: kubernetes
kubernetes:
  kubeconfig: %s
  namespace: %s
network: allowlist
allowed_domains: ["%s"]
egress:
  allow_cidrs: [127.0.0.1/32]
  upstream_ca: %s
secrets:
  API_TOKEN: {from_env: KUBE_IT_TOKEN, hosts: ["%s"], header: "Authorization: Bearer {value}"}
skills:
  caller:
    secrets: [API_TOKEN]
`, os.Getenv("SANDBOXRUN_KUBECONFIG"), runner.Namespace(), host, caFile, host)), 0o600))

	// Every Pod version the API server keeps, while the run goes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := runner.Client().Pods(runner.Namespace()).Watch(ctx, metav1.ListOptions{LabelSelector: sandbox.LabelManaged + "=true"})
	require.NoError(t, err)
	var objects bytes.Buffer
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				continue
			}
			b, _ := json.Marshal(ev.Object)
			objects.Write(b)
		}
	}()

	bin := filepath.Join(t.TempDir(), "sandboxrun")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/sandboxrun").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	cmd := exec.Command(bin, "run", "--json", "--policy", pol, "--skills", skills, "caller", "scripts/call.py", "--", api.URL)
	cmd.Env = append(os.Environ(), "KUBE_IT_TOKEN="+kubeSecret, "TMPDIR="+shortTemp(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	w.Stop()
	<-watched

	var res sandbox.Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	requirePodGone(t, res.ID)
	var got struct {
		Token  string   `json:"token"`
		Body   string   `json:"body"`
		Ifaces []string `json:"ifaces"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &got), res.Stdout)
	require.True(t, strings.HasPrefix(got.Token, "sandboxrun-secret-"), "the sandbox holds a placeholder: %q", got.Token)
	require.Equal(t, []string{"lo"}, got.Ifaces)
	require.Equal(t, "auth=Bearer "+strings.Repeat("*", len(kubeSecret)), got.Body, "the API got the value; the proxy masked its echo")
	mu.Lock()
	require.Contains(t, seen.String(), "GET /v1/me auth=Bearer "+kubeSecret)
	mu.Unlock()
	require.NotZero(t, objects.Len(), "the watch saw the run's Pod")
	require.NotContains(t, objects.String(), kubeSecret, "the secret is in no Pod the API server stored")
	require.NotContains(t, stdout.String()+stderr.String(), kubeSecret)
	require.NotNil(t, res.Egress)
	require.Positive(t, res.Egress.Allowed)
	require.Zero(t, res.Egress.Denied)
}

// shortTemp is a folder whose path fits a unix socket (the proxy's).
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ks")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
