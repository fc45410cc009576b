package oci

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A library user who links only this backend links no engine client and no
// Kubernetes client: runs need neither dockerd nor a cluster.
func TestLinksNoEngineClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/docker/docker/", "k8s.io/", "github.com/sandboxrun/sandboxrun/sandbox/docker", "github.com/sandboxrun/sandboxrun/sandbox/kube"} {
			require.False(t, strings.HasPrefix(dep, banned), "sandbox/oci links %s", dep)
		}
	}
}
