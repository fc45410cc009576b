package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/server"
)

// awayEngine fails as the Docker backend does when its socket is gone,
// before a run starts or (started) in the middle of one.
type awayEngine struct {
	engine
	started bool
}

func (e *awayEngine) Run(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	err := fmt.Errorf("remove sandbox container: %w: start Docker, or point DOCKER_HOST at a running engine: %w",
		sandbox.Unavailable("docker daemon unreachable"), errors.New("dial unix /run/secret/docker.sock: connect: no such file"))
	if e.started {
		return &sandbox.Result{Started: true, Skill: spec.Skill, ExitCode: -1, Error: "sandbox-init exited"}, err
	}
	return nil, err
}

// TestEngineAwayIs503: an unreachable engine is a 503 with Retry-After in
// the backend's words, never the host's socket path, and a run cut
// mid-way carries its Result saying so.
func TestEngineAwayIs503(t *testing.T) {
	for _, started := range []bool{false, true} {
		eng := &awayEngine{started: started}
		url := startWith(t, eng)
		r := call(t, "POST", url+"/v1/skills/hello/python", `{"code": "print(1)"}`)
		require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
		require.Equal(t, "5", r.header.Get("Retry-After"))
		require.Contains(t, string(r.body), "docker daemon unreachable")
		require.NotContains(t, string(r.body), "/run/secret")
		require.NotContains(t, string(r.body), "DOCKER_HOST")
		if started {
			require.Contains(t, string(r.body), `"result"`)
			require.Contains(t, string(r.body), `"error": "the sandbox engine cannot be reached`)
		}
	}
}

// startWith serves a Service over runner.
func startWith(t *testing.T, runner sandboxrun.Engine) string {
	t.Helper()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: runner})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// notIsolatedEngine refuses runs without network as the Kubernetes backend
// does when its probe Pod saw more than loopback.
type notIsolatedEngine struct{ engine }

func (*notIsolatedEngine) Run(context.Context, sandbox.Spec) (*sandbox.Result, error) {
	return nil, fmt.Errorf("%w: a probe pod in namespace sbx saw interfaces [eth0 lo]", sandbox.NotIsolated("pods in this namespace are not proven network-isolated"))
}

// TestNotIsolatedIs503: a backend that cannot prove a run without network
// is isolated refuses it until the operator changes the setup: 503 in the
// backend's words, not a 500, and no Retry-After (waiting does not fix it).
func TestNotIsolatedIs503(t *testing.T) {
	url := startWith(t, &notIsolatedEngine{})
	r := call(t, "POST", url+"/v1/skills/hello/python", `{"code": "print(1)"}`)
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	require.Empty(t, r.header.Get("Retry-After"))
	require.Contains(t, string(r.body), "not proven network-isolated")
	require.True(t, errors.Is(fmt.Errorf("x: %w", sandbox.NotIsolated("y")), sandbox.ErrNotIsolated))
}
