package doctor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// localHost is a backend whose sandboxes run on this very host, with no
// engine in between (sandbox/oci): the host's kernel is this process's.
type localHost interface {
	RuntimeName() string
	StateDir() string
}

// localKernel is this host's kernel release, "" when unknown.
func localKernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// judgeLocal is the host line of a local backend.
func judgeLocal(h localHost, kernel string) Check {
	return pass(AreaHost, "engine", fmt.Sprintf("OCI runtime %s driven directly on this host, kernel %s", h.RuntimeName(), kernel))
}
