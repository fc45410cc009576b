//go:build helm

package helm

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	release   = "rel"
	fullname  = "rel-sandboxrun"
	namespace = "sbx-helm"
)

// replicaURL is where replica i listens under the test values (loopback,
// port 1808<i>).
func replicaURL(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", 18080+i) }

// cluster is the test cluster hack/with-k8s.sh started, driven as its
// admin (the chart makes namespaces' objects and cluster roles).
type cluster struct {
	t          *testing.T
	run        string // hack/k8s-up.sh's run folder
	kubeconfig string
	kubectlBin string
}

func newCluster(t *testing.T) *cluster {
	run := os.Getenv("SANDBOXRUN_K8S_RUN")
	if run == "" || os.Getenv("SANDBOXRUN_KUBECONFIG") == "" {
		t.Fatal("no test cluster: run under hack/with-k8s.sh (make test-helm does)")
	}
	bin := os.Getenv("SANDBOXRUN_KUBECTL")
	if bin == "" {
		t.Fatal("SANDBOXRUN_KUBECTL is not set: make test-helm points it at the cached kubectl")
	}
	return &cluster{t: t, run: run, kubeconfig: filepath.Join(run, "admin.kubeconfig"), kubectlBin: bin}
}

// exec runs bin with args as the cluster's admin; stdin may be nil.
func (c *cluster) exec(stdin string, bin string, args ...string) (string, string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (c *cluster) kubectl(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.exec("", c.kubectlBin, args...)
	require.NoError(c.t, err, "kubectl %s: %s", strings.Join(args, " "), errOut)
	return out
}

func (c *cluster) apply(manifest string) {
	c.t.Helper()
	_, errOut, err := c.exec(manifest, c.kubectlBin, "apply", "-f", "-")
	require.NoError(c.t, err, errOut)
}

func (c *cluster) helm(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.exec("", helmBin(c.t), args...)
	require.NoError(c.t, err, "helm %s: %s%s", strings.Join(args, " "), out, errOut)
	return out
}

// TestClusterDefaultsPassRestricted: the chart's default objects, the
// server and the helm test Pod included, are admitted by a namespace that
// enforces the restricted Pod Security level, with no warning.
func TestClusterDefaultsPassRestricted(t *testing.T) {
	c := newCluster(t)
	ns := "sbx-helm-psa"
	c.kubectl("create", "namespace", ns)
	t.Cleanup(func() { _, _, _ = c.exec("", c.kubectlBin, "delete", "namespace", ns, "--wait=false") })
	c.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
	manifest, err := helm(t, "template", release, chartDir, "--namespace", ns)
	require.NoError(t, err)
	out, errOut, err := c.exec(manifest, c.kubectlBin, "apply", "--dry-run=server", "-f", "-")
	require.NoError(t, err, errOut)
	require.NotContains(t, errOut, "PodSecurity", out)
}

// TestClusterTwoReplicas installs the chart with two replicas and follows
// one session across both, through the loss of its owner and an upgrade.
func TestClusterTwoReplicas(t *testing.T) {
	c := newCluster(t)
	token := hex.EncodeToString(randomBytes(t, 24))
	c.prepare(token, "privileged") // hostNetwork (the test values) is beyond the restricted level
	c.prepareUploads()
	t.Cleanup(func() {
		_, _, _ = c.exec("", helmBin(t), "uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
		_, _, _ = c.exec("", c.kubectlBin, "delete", "namespace", namespace, "--wait=false")
		_, _, _ = c.exec("", c.kubectlBin, "delete", "pv", "sbx-helm-skills", "sbx-helm-sessions-0", "sbx-helm-sessions-1", "sbx-helm-uploads", "--wait=false")
	})

	values := append(append([]string{"-f", "testdata/hostnetwork-values.yaml"}, uploadsValues...), images()...)
	c.helm(append([]string{"install", release, chartDir, "-n", namespace, "--wait", "--timeout", "4m"}, values...)...)
	api := &client{t: t, token: token}
	for i := range 2 {
		api.waitReady(replicaURL(i))
	}
	urls := [2]string{replicaURL(0), replicaURL(1)}
	uploadsAcrossReplicas(api, urls)

	// A session made through replica 0, used through replica 1, read
	// back through replica 0.
	id := sessionAcrossReplicas(api, urls)
	// Replica 1 lists the session replica 0 holds.
	var list struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
		Partial     bool     `json:"partial"`
		Unreachable []string `json:"unreachable"`
	}
	api.json(api.do("GET", replicaURL(1)+"/v1/sessions", "", 200), &list)
	require.False(t, list.Partial, "%+v", list)
	require.Len(t, list.Sessions, 1)
	require.Equal(t, id, list.Sessions[0].ID)

	// The owner goes: its sessions answer 503 with Retry-After through
	// the other replica (never 404), and are all there once it is back.
	file := replicaURL(1) + "/v1/sessions/" + id + "/files/notes/in.txt"
	c.kubectl("-n", namespace, "delete", "pod", fullname+"-0", "--wait=false")
	saw503, n503, deleted := false, 0, time.Now()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		require.True(t, time.Now().Before(deadline), "replica 0 did not come back (saw 503: %v)", saw503)
		status, hdr, body := api.try("GET", file, "")
		switch status {
		case 503:
			require.NotEmpty(t, hdr.Get("Retry-After"), "a 503 for a session whose owner is down says when to retry")
			saw503 = true
			n503++
		case 200:
			require.Equal(t, sessionFile, string(body))
		default:
			t.Fatalf("%s while the owner was away: %d %s", file, status, body)
		}
		if saw503 && status == 200 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("owner Pod deleted: its session answered 503 with Retry-After %d times, and 200 again after %s", n503, time.Since(deleted).Round(time.Millisecond))
	api.waitReady(replicaURL(0))
	require.Equal(t, sessionFile, string(api.do("GET", replicaURL(0)+"/v1/sessions/"+id+"/files/notes/in.txt", "", 200)))
	require.Equal(t, strings.ToUpper(sessionFile), string(api.do("GET", replicaURL(0)+"/v1/sessions/"+id+"/files/notes/out.txt", "", 200)),
		"what a run wrote is on the owner's claim after its Pod came back")

	// An upgrade that changes a value rolls both replicas; the session is
	// still there through either.
	c.helm(append([]string{"upgrade", release, chartDir, "-n", namespace, "--set", "serve.maxRunning=3", "--wait", "--timeout", "4m"},
		values...)...)
	c.kubectl("-n", namespace, "rollout", "status", "statefulset/"+fullname, "--timeout=3m")
	args := c.kubectl("-n", namespace, "get", "pod", fullname+"-0", "-o", "jsonpath={.spec.containers[0].args}")
	require.Contains(t, args, "--max-running=3", "the replica runs the upgraded release")
	for i := range 2 {
		api.waitReady(replicaURL(i))
		require.Equal(t, sessionFile, string(api.do("GET", replicaURL(i)+"/v1/sessions/"+id+"/files/notes/in.txt", "", 200)))
	}

	// The smoke Pod is deleted once it succeeded (its logs with it).
	out := c.helm("test", release, "-n", namespace, "--timeout", "3m")
	require.Contains(t, out, "TEST SUITE:     "+fullname+"-smoke")
	require.Contains(t, out, "Phase:          Succeeded")

	c.helm("uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
	c.requireNothingLeft()
}

// prepare makes the namespace, enforcing Pod Security level psa, the
// tokens Secret, and the volumes the chart's claims bind: the skills (a
// copy of the repository's, read-only) and one folder per replica's
// sessions (hostPath volumes: the test cluster has no provisioner).
func (c *cluster) prepare(token, psa string) {
	t := c.t
	dir := filepath.Join(c.run, "helm-test")
	skills := filepath.Join(dir, "skills")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	out, err := exec.Command("cp", "-r", "../../skills", skills).CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command("chmod", "-R", "a+rX,go-w", skills).CombinedOutput()
	require.NoError(t, err, string(out))
	for i := range 2 {
		d := filepath.Join(dir, fmt.Sprintf("sessions-%d", i))
		require.NoError(t, os.MkdirAll(d, 0o700))
		require.NoError(t, os.Chown(d, 65532, 65532))
	}
	c.kubectl("create", "namespace", namespace)
	c.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce="+psa)
	c.kubectl("-n", namespace, "create", "secret", "generic", "sandboxrun-tokens", "--from-literal=tokens="+token)
	c.apply(fmt.Sprintf(`
apiVersion: v1
kind: PersistentVolume
metadata: {name: sbx-helm-skills}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadOnlyMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: %[1]s, name: sandboxrun-skills}
  hostPath: {path: %[2]s, type: Directory}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: sandboxrun-skills, namespace: %[1]s}
spec:
  accessModes: [ReadOnlyMany]
  storageClassName: ""
  volumeName: sbx-helm-skills
  resources: {requests: {storage: 1Gi}}
`, namespace, skills))
	for i := range 2 {
		c.apply(fmt.Sprintf(`
apiVersion: v1
kind: PersistentVolume
metadata: {name: sbx-helm-sessions-%[1]d}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: sandboxrun-test-sessions
  claimRef: {namespace: %[2]s, name: sessions-%[3]s-%[1]d}
  hostPath: {path: %[4]s/sessions-%[1]d, type: Directory}
`, i, namespace, fullname, dir))
	}
}

// requireNothingLeft: after uninstall no object of the release remains,
// its session claims included (retainOnUninstall: false in the test
// values), and no sandbox Pod.
func (c *cluster) requireNothingLeft() {
	t := c.t
	sel := "app.kubernetes.io/instance=" + release
	deadline := time.Now().Add(90 * time.Second)
	for {
		left := strings.TrimSpace(c.kubectl("-n", namespace, "get",
			"statefulsets,pods,services,configmaps,serviceaccounts,roles,rolebindings,poddisruptionbudgets,networkpolicies,persistentvolumeclaims",
			"-l", sel, "-o", "name"))
		left += strings.TrimSpace(c.kubectl("get", "clusterroles,clusterrolebindings", "-l", sel, "-o", "name"))
		left += strings.TrimSpace(c.kubectl("-n", namespace, "get", "pods", "-l", "io.sandboxrun.managed=true", "-o", "name"))
		if left == "" {
			return
		}
		require.True(t, time.Now().Before(deadline), "left after helm uninstall:\n%s", left)
		time.Sleep(time.Second)
	}
}

// client calls the installed server with the release's token.
type client struct {
	t     *testing.T
	token string
}

func (a *client) try(method, url, body string) (int, http.Header, []byte) {
	a.t.Helper()
	return a.tryMedia(method, url, "", body)
}

func (a *client) tryMedia(method, url, media, body string) (int, http.Header, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+a.token)
	if media != "" {
		req.Header.Set("Content-Type", media)
	}
	hc := &http.Client{Timeout: 2 * time.Minute}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return resp.StatusCode, resp.Header, b
}

// do calls url and requires status.
func (a *client) do(method, url, body string, status int) []byte {
	a.t.Helper()
	return a.doMedia(method, url, "", body, status)
}

// doMedia is do with a Content-Type.
func (a *client) doMedia(method, url, media, body string, status int) []byte {
	a.t.Helper()
	got, _, b := a.tryMedia(method, url, media, body)
	require.Equal(a.t, status, got, "%s %s: %s", method, url, b)
	return b
}

func (a *client) json(b []byte, v any) {
	a.t.Helper()
	require.NoError(a.t, json.Unmarshal(b, v), string(b))
}

// waitReady polls base's /readyz: the kubelet cannot probe replicas that
// each listen on their own port of the node's network.
func (a *client) waitReady(base string) {
	a.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		status, _, body := a.try("GET", base+"/readyz", "")
		if status == 200 {
			return
		}
		require.True(a.t, time.Now().Before(deadline), "%s/readyz: %d %s", base, status, body)
		time.Sleep(250 * time.Millisecond)
	}
}

// images passes $SANDBOXRUN_RUNNER_IMAGE and $SANDBOXRUN_SERVER_IMAGE
// (the images the cluster was loaded with, repository:tag) to the chart
// when they are set.
func images() []string {
	var sets []string
	if ref := os.Getenv("SANDBOXRUN_RUNNER_IMAGE"); ref != "" {
		sets = append(sets, "--set", "runnerImage="+ref)
	}
	if ref := os.Getenv("SANDBOXRUN_SERVER_IMAGE"); ref != "" {
		i := strings.LastIndex(ref, ":")
		if i < 0 || strings.Contains(ref[i:], "/") {
			panic("SANDBOXRUN_SERVER_IMAGE " + ref + " has no tag: give repository:tag")
		}
		sets = append(sets, "--set", "image.repository="+ref[:i], "--set", "image.tag="+ref[i+1:])
	}
	return sets
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}
