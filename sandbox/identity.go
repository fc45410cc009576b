package sandbox

import (
	"math"
	"os"
	"strconv"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// SandboxUID and SandboxGID are the ids scripts run as when the caller is
// root: a sandbox never runs as uid or gid 0. They match the `sandbox` user
// of the runner image and are reserved for sandboxrun on the host.
const (
	SandboxUID = layout.UID
	SandboxGID = layout.GID
)

// Identity says who calls and who the sandbox runs as.
//
// A non-root caller's scripts run under the caller's own uid and gid; a root
// caller's run as SandboxUID. A writable workspace is a copy owned by the
// sandbox user (wsvolume.go), so no host file needs sharing; a read-only one
// must be readable by that user (checkHostPaths).
type Identity struct {
	callerUID, callerGID uint32
	uid, gid             uint32
}

// CurrentIdentity is this process's Identity.
func CurrentIdentity() Identity { return IdentityFor(idOf(os.Getuid()), idOf(os.Getgid())) }

// idOf narrows an id from package os; Linux ids are 32-bit and never
// negative, and anything else is treated as root, the stricter case.
func idOf(v int) uint32 {
	if v < 0 || v > math.MaxUint32 {
		return 0
	}
	return uint32(v)
}

// IdentityFor is the Identity of a caller with these ids.
func IdentityFor(callerUID, callerGID uint32) Identity {
	id := Identity{callerUID: callerUID, callerGID: callerGID, uid: callerUID, gid: callerGID}
	if callerUID == 0 {
		id.uid, id.gid = SandboxUID, SandboxGID
	} else if callerGID == 0 {
		id.gid = SandboxGID // group root grants too much as well
	}
	return id
}

// User is "uid:gid" of the sandbox user, as an engine's User field takes it.
func (i Identity) User() string {
	return strconv.FormatUint(uint64(i.uid), 10) + ":" + strconv.FormatUint(uint64(i.gid), 10)
}

// foreign reports whether the sandbox runs as someone other than the
// caller, so the caller's files need checking.
func (i Identity) foreign() bool { return i.uid != i.callerUID }

// UID is the user id the sandbox runs as.
func (i Identity) UID() uint32 { return i.uid }

// GID is the sandbox user's group.
func (i Identity) GID() uint32 { return i.gid }

func workspaceError(ws, doing string, err error) error {
	return where.Errorf("%w: %s %s: %w", ErrWorkspace, doing, where.Path(ws), err)
}
