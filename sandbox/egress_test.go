package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

// egressSpec is a valid Spec of a run through the egress proxy.
func egressSpec(t *testing.T) Spec {
	t.Helper()
	spec := goldenSpec()
	spec.SkillDir = t.TempDir()
	spec.EgressSocket = filepath.Join(t.TempDir(), "egress.sock")
	spec.Limits.Egress = &policy.Egress{Allow: []string{"api.example.com"}}
	return spec
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
		{"CA without socket", func(s *Spec) { s.EgressCA, s.EgressSocket, s.Limits.Egress = "/x/ca.pem", "", nil }, "EgressCA without EgressSocket"},
		{"relative CA", func(s *Spec) { s.EgressCA = "ca.pem" }, "EgressCA \"ca.pem\" is not an absolute path"},
		{"caller CA", func(s *Spec) { s.EgressCA, s.Env = "/x/ca.pem", map[string]string{"SSL_CERT_FILE": "/mine"} }, "Env: SSL_CERT_FILE is set by sandboxrun"},
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
	err := checkEgressSocket(&spec, IdentityFor(1000, 1000))
	require.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, os.WriteFile(spec.EgressSocket, nil, 0o600))
	require.ErrorContains(t, checkEgressSocket(&spec, IdentityFor(1000, 1000)), "is not a unix socket")
	require.NoError(t, os.Remove(spec.EgressSocket))

	ln, err := net.Listen("unix", spec.EgressSocket)
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, checkEgressSocket(&spec, IdentityFor(1000, 1000)), "a non-root caller's sandbox runs as the caller, who made the socket")
	if os.Getuid() == 0 {
		err := checkEgressSocket(&spec, IdentityFor(0, 0))
		require.ErrorContains(t, err, "the sandbox user (uid 65532) cannot connect")
		require.NoError(t, os.Lchown(spec.EgressSocket, SandboxUID, SandboxGID))
		require.NoError(t, checkEgressSocket(&spec, IdentityFor(0, 0)))
	}
}

func TestCheckProxyEnv(t *testing.T) {
	require.NoError(t, CheckProxyEnv(map[string]string{"MY_VAR": "1", "Http_Proxy": "x"}))
	require.ErrorContains(t, CheckProxyEnv(map[string]string{"HTTP_PROXY": "x"}), "[HTTP_PROXY]")
}
