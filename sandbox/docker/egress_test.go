package docker

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func egressSpec(t *testing.T) sandbox.Spec {
	t.Helper()
	spec := goldenSpec()
	spec.SkillDir = t.TempDir()
	spec.EgressSocket = filepath.Join(t.TempDir(), "egress.sock")
	spec.Limits.Egress = &policy.Egress{Allow: []string{"api.example.com"}}
	return spec
}

func TestEgressConfigKeepsTheSandboxOffline(t *testing.T) {
	spec := egressSpec(t)
	cfg, hc := containerConfig(&spec, runParams{user: "65532:65532", image: "img"})
	require.Equal(t, "none", string(hc.NetworkMode), "the proxy never comes with an interface")
	require.Len(t, hc.Mounts, 2)
	m := hc.Mounts[1]
	require.Equal(t, spec.EgressSocket, m.Source)
	require.Equal(t, sandbox.EgressSocketPath, m.Target)
	require.True(t, m.ReadOnly)
	require.Empty(t, hc.CapAdd)
	require.Equal(t, []string{"PATH=" + sandbox.InitPathEnv}, cfg.Env)

	job := sandbox.JobFor(&spec, "v", 0)
	require.Equal(t, sandbox.ProxyAddr, job.Egress.Listen)
	require.Equal(t, sandbox.EgressSocketPath, job.Egress.Socket)
	for _, kv := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "ALL_PROXY=http://127.0.0.1:3128", "NO_PROXY=", "no_proxy="} {
		require.Contains(t, job.Env, kv)
	}

	// A proxy that ends TLS for some host: its bundle, read-only, where
	// the variables point and over the image's own bundle.
	spec.EgressCA = filepath.Join(t.TempDir(), "ca.pem")
	_, hc = containerConfig(&spec, runParams{user: "65532:65532", image: "img"})
	require.Len(t, hc.Mounts, 4)
	for i, target := range []string{sandbox.EgressCAPath, sandbox.ImageCABundle} {
		m := hc.Mounts[2+i]
		require.Equal(t, spec.EgressCA, m.Source)
		require.Equal(t, target, m.Target)
		require.True(t, m.ReadOnly)
	}
	job = sandbox.JobFor(&spec, "v", 0)
	for _, name := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"} {
		require.Contains(t, job.Env, name+"="+sandbox.EgressCAPath)
	}

	plain := goldenSpec()
	job = sandbox.JobFor(&plain, "v", 0)
	require.Nil(t, job.Egress)
	for _, kv := range job.Env {
		require.NotContains(t, kv, "PROXY")
		require.NotContains(t, kv, "proxy")
	}
}

// An egress run is pooled: the engine keys it with its slot's socket and
// bundle (the same for every run), so its key is its configuration's,
// which differs from a plain run's and from one whose proxy ends TLS.
func TestWarmPoolKeysEgressRuns(t *testing.T) {
	d, err := New(WithVersion("t"), WithClient(nil), WithWarmPool(2, 1e9))
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	spec := egressSpec(t)
	spec.EgressSocket = "/egress-slot/egress.sock"
	egress := d.keyOf(&spec, usrMount{}, false)
	require.NotEmpty(t, egress, "an egress run is pooled")
	same := spec
	same.Limits.Egress = &policy.Egress{Allow: []string{"other.example.com"}}
	require.Equal(t, egress, d.keyOf(&same, usrMount{}, false), "the allowlist is the proxy's, not the container's")
	withCA := spec
	withCA.EgressCA = "/egress-slot/ca.pem"
	require.NotEqual(t, egress, d.keyOf(&withCA, usrMount{}, false), "a bundle is a mount more")
	plain := spec
	plain.EgressSocket, plain.Limits.Egress = "", nil
	require.NotEqual(t, egress, d.keyOf(&plain, usrMount{}, false), "a plain run has no socket")
}
