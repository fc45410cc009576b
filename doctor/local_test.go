package doctor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type fakeLocal struct{}

func (fakeLocal) RuntimeName() string { return "runc" }
func (fakeLocal) StateDir() string    { return "/var/lib/sandboxrun/oci" }

// A local backend's host is this one: its kernel lets the runtime check
// tell a shared kernel from gVisor's.
func TestJudgeLocal(t *testing.T) {
	k := localKernel()
	require.NotEmpty(t, k)
	c := judgeLocal(fakeLocal{}, k)
	require.Equal(t, Pass, c.Status)
	require.Contains(t, c.Reason, "runc")
	require.Contains(t, c.Reason, k)
	seen := judgeRuntime(probeOutput{"kernel": k}, Expect{HostKernel: k})
	require.Equal(t, Pass, seen.Status, seen.Reason)
}
