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
// in a namespace that enforces the restricted Pod Security level, and
// follows a session across both replicas by their Pod addresses.
func TestPodnetProductionValues(t *testing.T) {
	c := newCluster(t)
	prof, err := os.ReadFile(filepath.Join(c.run, "profile"))
	require.NoError(t, err)
	require.Equal(t, "podnet", strings.TrimSpace(string(prof)), "needs the podnet test cluster: make test-podnet")
	token := hex.EncodeToString(randomBytes(t, 24))
	c.prepare(token, "restricted")
	t.Cleanup(func() {
		_, _, _ = c.exec("", helmBin(t), "uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
		_, _, _ = c.exec("", c.kubectlBin, "delete", "namespace", namespace, "--wait=false")
		_, _, _ = c.exec("", c.kubectlBin, "delete", "pv", "sbx-helm-skills", "sbx-helm-sessions-0", "sbx-helm-sessions-1", "--wait=false")
	})

	// --wait: both replicas Ready, which only the kubelet's readiness
	// probe on each Pod's address can make them.
	c.helm(append([]string{"install", release, chartDir, "-n", namespace, "-f", "testdata/podnet-values.yaml", "--wait", "--timeout", "4m"}, images()...)...)
	podRange := netip.MustParsePrefix("10.244.0.0/24")
	urls := make([]string, 2)
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

	// A session made through replica 0 and written through replica 1,
	// which forwards to the owner by its headless-Service name (the
	// chart's default peer URL), read back through the Service's
	// cluster address (kube-proxy) and through replica 0.
	var sess struct {
		ID string `json:"id"`
	}
	api.json(api.do("POST", urls[0]+"/v1/sessions", `{"ttl": "30m"}`, 201), &sess)
	require.True(t, strings.HasPrefix(sess.ID, fullname+"-0-"), "the id names its owner: %s", sess.ID)
	content := "written through replica 1\n"
	api.do("PUT", urls[1]+"/v1/sessions/"+sess.ID+"/files/in.txt", content, 201)
	svcIP := c.kubectl("-n", namespace, "get", "service", fullname, "-o", "jsonpath={.spec.clusterIP}")
	require.Equal(t, content, string(api.do("GET", "http://"+svcIP+":8080/v1/sessions/"+sess.ID+"/files/in.txt", "", 200)))
	require.Equal(t, content, string(api.do("GET", urls[0]+"/v1/sessions/"+sess.ID+"/files/in.txt", "", 200)))

	// A run without network: a probe Pod sees eth0 here, and the chart's
	// deny-all policy is proven enforced by the connect probe (the
	// replica's own address and the cluster DNS refused to a Pod made like
	// a sandbox Pod, reached by the control Pod), so it runs
	// (docs/kubernetes.md, "No network").
	start := time.Now()
	status, _, body := api.try("POST", urls[1]+"/v1/skills/hello/python", `{"code": "print(1)"}`)
	require.Equal(t, 200, status, "a run without network on a Pod network under the chart's enforced policy: %s", body)
	var res struct {
		Success bool   `json:"success"`
		Stdout  string `json:"stdout"`
	}
	api.json(body, &res)
	require.True(t, res.Success, "%s", body)
	require.Equal(t, "1\n", res.Stdout)
	t.Logf("a first run without network on the Pod network, its proof included: %s", time.Since(start).Round(time.Millisecond))

	c.helm("uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
	c.requireNothingLeft()
}
