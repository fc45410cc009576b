//go:build helm

package helm

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPodnetProductionValues installs the chart with its production values
// (testdata/podnet-values.yaml: no hostNetwork, kubelet probes, peers by
// headless-Service names) on the podnet test cluster (make test-podnet),
// in a namespace that enforces the restricted Pod Security level, with
// uploads on a shared claim and an egress allowlist with a secret
// (testdata/podnet-egress-values.yaml), and through both replicas' Pod
// addresses checks: a run without network under the enforced policy;
// uploads; a session followed across the replicas; snapshots, forks and
// a restore; a run that reaches an upstream in the cluster with a secret
// its sandbox never holds; helm test; and an uninstall that leaves nothing.
func TestPodnetProductionValues(t *testing.T) {
	c := newCluster(t)
	prof, err := os.ReadFile(filepath.Join(c.run, "profile"))
	require.NoError(t, err)
	require.Equal(t, "podnet", strings.TrimSpace(string(prof)), "needs the podnet test cluster: make test-podnet")
	token := hex.EncodeToString(randomBytes(t, 24))
	secret := "sbxtest_" + hex.EncodeToString(randomBytes(t, 16))
	certPEM, keyPEM := upstreamCert(t)
	c.prepare(token, "restricted")
	c.prepareUploads()
	c.prepareEgress(certPEM, secret)
	t.Cleanup(func() {
		_, _, _ = c.exec("", helmBin(t), "uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
		_, _, _ = c.exec("", c.kubectlBin, "delete", "namespace", namespace, upstreamNS, "--wait=false")
		_, _, _ = c.exec("", c.kubectlBin, "delete", "pv", "sbx-helm-skills", "sbx-helm-sessions-0", "sbx-helm-sessions-1", "sbx-helm-uploads", "--wait=false")
	})

	// --wait: both replicas Ready, which only the kubelet's readiness
	// probe on each Pod's address can make them.
	// skills.send: operator skills travel to their Pods over the attach,
	// and the skills claim is the server's alone (the loopback profile's
	// TestClusterTwoReplicas mounts it into the Pods).
	values := append([]string{"-f", "testdata/podnet-values.yaml", "-f", "testdata/podnet-egress-values.yaml", "--set", "skills.send=true"}, uploadsValues...)
	c.helm(append(append([]string{"install", release, chartDir, "-n", namespace, "--wait", "--timeout", "4m"}, values...), images()...)...)
	podRange := netip.MustParsePrefix("10.244.0.0/24")
	var urls [2]string
	for i := range urls {
		name := fmt.Sprintf("%s-%d", fullname, i)
		require.Empty(t, c.kubectl("-n", namespace, "get", "pod", name, "-o", "jsonpath={.spec.hostNetwork}"), "production values: no hostNetwork")
		ip := c.kubectl("-n", namespace, "get", "pod", name, "-o", "jsonpath={.status.podIP}")
		require.True(t, podRange.Contains(netip.MustParseAddr(ip)), "replica %d at %s, outside the Pod range", i, ip)
		urls[i] = "http://" + ip + ":8080"
	}
	api := &client{t: t, token: token}
	for _, u := range urls {
		api.waitReady(u)
	}
	// The upstream runs the image the sandboxes run, which the cluster
	// has loaded.
	runner := c.kubectl("-n", namespace, "get", "statefulset", fullname, "-o",
		`jsonpath={.spec.template.spec.containers[0].env[?(@.name=="SANDBOXRUN_RUNNER_IMAGE")].value}`)
	require.NotEmpty(t, runner)
	c.startUpstream(runner, certPEM, keyPEM)

	// A run without network: a probe Pod sees eth0 here, and the chart's
	// deny-all policy is proven enforced by the connect probe (the
	// replica's own address and the cluster DNS refused to a Pod made like
	// a sandbox Pod, reached by the control Pod), so it runs
	// (docs/kubernetes.md, "No network"). The operator's skill was sent:
	// /skills is the Pod's tmpfs, not a mount of the claim, and the script
	// cannot write its files.
	start := time.Now()
	status, _, body := api.try("POST", urls[1]+"/v1/skills/hello/python",
		`{"code": "import os\nfs = [l.split()[2] for l in open('/proc/mounts') if l.split()[1] == '/skills']\ntry:\n    open('/skills/hello/SKILL.md', 'a').write('x')\n    w = 'wrote'\nexcept OSError:\n    w = 'refused'\nprint(fs, w, os.path.exists('/skills/hello/SKILL.md'))"}`)
	require.Equal(t, 200, status, "a run without network on a Pod network under the chart's enforced policy: %s", body)
	var res runResult
	api.json(body, &res)
	require.True(t, res.Success, "%s", body)
	require.Equal(t, "['tmpfs'] refused True\n", res.Stdout, "the skill was sent, read-only")
	t.Logf("a first run without network on the Pod network, its proof included: %s", time.Since(start).Round(time.Millisecond))

	uploadsAcrossReplicas(api, urls)

	// A session made through replica 0, used through replica 1, which
	// forwards to the owner by its headless-Service name (the chart's
	// default peer URL); read back through the Service's cluster address
	// (kube-proxy) too.
	id := sessionAcrossReplicas(api, urls)
	svcIP := c.kubectl("-n", namespace, "get", "service", fullname, "-o", "jsonpath={.spec.clusterIP}")
	require.Equal(t, sessionFile, string(api.do("GET", "http://"+svcIP+":8080/v1/sessions/"+id+"/files/notes/in.txt", "", 200)))
	snapshotsAcrossReplicas(api, urls, id)

	// Egress with a secret through each replica: each one's own proxy
	// carries its run's connections.
	for i, u := range urls {
		c.egressThroughReplica(api, u, fmt.Sprintf("replica-%d", i), secret)
	}

	// The smoke Pod reaches the Service by its DNS name.
	out := c.helm("test", release, "-n", namespace, "--timeout", "3m")
	require.Contains(t, out, "TEST SUITE:     "+fullname+"-smoke")
	require.Contains(t, out, "Phase:          Succeeded")

	c.helm("uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
	c.requireNothingLeft()
}
