package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

func egressSpec(t *testing.T) Spec {
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
	require.Equal(t, egressSocketPath, m.Target)
	require.True(t, m.ReadOnly)
	require.Empty(t, hc.CapAdd)
	require.Equal(t, []string{"PATH=" + defaultPath}, cfg.Env)

	job := jobFor(&spec, "v", 0)
	require.Equal(t, ProxyAddr, job.Egress.Listen)
	require.Equal(t, egressSocketPath, job.Egress.Socket)
	for _, kv := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "ALL_PROXY=http://127.0.0.1:3128", "NO_PROXY=", "no_proxy="} {
		require.Contains(t, job.Env, kv)
	}

	plain := goldenSpec()
	job = jobFor(&plain, "v", 0)
	require.Nil(t, job.Egress)
	for _, kv := range job.Env {
		require.NotContains(t, kv, "PROXY")
		require.NotContains(t, kv, "proxy")
	}
}

func TestEgressSpecProblems(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Spec)
		want   string
	}{
		{"proxy without socket", func(s *Spec) { s.EgressSocket = "" }, "Limits.Egress is set but EgressSocket is empty"},
		{"both", func(s *Spec) { s.Limits.Network = true }, "either the egress proxy or a full network"},
		{"relative", func(s *Spec) { s.EgressSocket = "egress.sock" }, "not an absolute path"},
		{"caller proxy", func(s *Spec) { s.Env = map[string]string{"https_proxy": "http://evil:1", "NO_PROXY": "*"} }, "[NO_PROXY https_proxy] are set by sandboxrun"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := egressSpec(t)
			tt.mutate(&spec)
			err := spec.Validate()
			require.ErrorIs(t, err, ErrInvalidSpec)
			require.ErrorContains(t, err, tt.want)
		})
	}
	spec := egressSpec(t)
	require.NoError(t, spec.Validate())
	spec.Limits.Egress = nil
	require.NoError(t, spec.Validate(), "a socket alone is a coherent spec")
}

func TestCheckEgressSocket(t *testing.T) {
	spec := egressSpec(t)
	err := checkEgressSocket(&spec, identityFor(1000, 1000))
	require.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, os.WriteFile(spec.EgressSocket, nil, 0o600))
	require.ErrorContains(t, checkEgressSocket(&spec, identityFor(1000, 1000)), "is not a unix socket")
	require.NoError(t, os.Remove(spec.EgressSocket))

	ln, err := net.Listen("unix", spec.EgressSocket)
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, checkEgressSocket(&spec, identityFor(1000, 1000)), "a non-root caller's sandbox runs as the caller, who made the socket")
	if os.Getuid() == 0 {
		err := checkEgressSocket(&spec, identityFor(0, 0))
		require.ErrorContains(t, err, "the sandbox user (uid 65532) cannot connect")
		require.NoError(t, os.Lchown(spec.EgressSocket, SandboxUID, SandboxGID))
		require.NoError(t, checkEgressSocket(&spec, identityFor(0, 0)))
	}
}

func TestCheckProxyEnv(t *testing.T) {
	require.NoError(t, CheckProxyEnv(map[string]string{"MY_VAR": "1", "Http_Proxy": "x"}))
	require.ErrorContains(t, CheckProxyEnv(map[string]string{"HTTP_PROXY": "x"}), "[HTTP_PROXY]")
}

func TestWarmPoolSkipsEgressRuns(t *testing.T) {
	d, err := NewDocker(WithVersion("t"), WithClient(nil), WithWarmPool(2, 1e9))
	require.NoError(t, err)
	t.Cleanup(func() { d.pool.close() })
	spec := egressSpec(t)
	require.Empty(t, d.pool.key(&spec), "a run's egress socket is its own")
	spec.EgressSocket, spec.Limits.Egress = "", nil
	require.NotEmpty(t, d.pool.key(&spec))
}
