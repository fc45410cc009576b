package sandbox

import (
	"fmt"
	"math"
	"os"
	"strconv"
)

// SandboxUID and SandboxGID are the ids scripts run as when the caller is
// root: a sandbox never runs as uid or gid 0. They match the `sandbox` user
// of the runner image and are reserved for sandboxrun on the host.
const (
	SandboxUID = 65532
	SandboxGID = 65532
)

// identity says who calls and who the sandbox runs as.
//
// A non-root caller's scripts run under the caller's own uid and gid; a root
// caller's run as SandboxUID. A writable workspace is a copy owned by the
// sandbox user (wsvolume.go), so no host file needs sharing; a read-only one
// must be readable by that user (checkHostPaths).
type identity struct {
	callerUID, callerGID uint32
	uid, gid             uint32
}

func currentIdentity() identity { return identityFor(idOf(os.Getuid()), idOf(os.Getgid())) }

// idOf narrows an id from package os; Linux ids are 32-bit and never
// negative, and anything else is treated as root, the stricter case.
func idOf(v int) uint32 {
	if v < 0 || v > math.MaxUint32 {
		return 0
	}
	return uint32(v)
}

func identityFor(callerUID, callerGID uint32) identity {
	id := identity{callerUID: callerUID, callerGID: callerGID, uid: callerUID, gid: callerGID}
	if callerUID == 0 {
		id.uid, id.gid = SandboxUID, SandboxGID
	} else if callerGID == 0 {
		id.gid = SandboxGID // group root grants too much as well
	}
	return id
}

// user is the container's User field.
func (i identity) user() string {
	return strconv.FormatUint(uint64(i.uid), 10) + ":" + strconv.FormatUint(uint64(i.gid), 10)
}

// foreign reports whether the sandbox runs as someone other than the
// caller, so the caller's files need checking.
func (i identity) foreign() bool { return i.uid != i.callerUID }

func workspaceError(ws, doing string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", ErrWorkspace, doing, ws, err)
}
