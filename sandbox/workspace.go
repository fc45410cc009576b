package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
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
// A non-root caller's scripts run under the caller's own uid and gid, so
// files they write in /workspace are the caller's without further work. A
// root caller's scripts run as SandboxUID: for a writable workspace that
// user is granted access with POSIX ACL entries for the duration of the run,
// and afterwards the entries are removed and whatever the sandbox created
// is handed back to the caller (see shareWorkspace).
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
// caller, so the caller's files need sharing and checking.
func (i identity) foreign() bool { return i.uid != i.callerUID }

// shareWorkspace makes a writable workspace writable for a foreign sandbox
// user and returns the function that undoes it. Runs that share one
// workspace, in this process or others, coordinate with flock on the
// directory: each holds a shared lock while it runs, and whoever finds no
// other holder afterwards (an exclusive lock succeeds) revokes the grant and
// hands new files back. A crash leaves the grant in place; the next run on
// the workspace cleans it up.
func shareWorkspace(ctx context.Context, spec *Spec, ids identity, log *slog.Logger) (func() error, error) {
	if spec.Workspace == "" || !spec.WorkspaceWritable || !ids.foreign() {
		return func() error { return nil }, nil
	}
	ws := spec.Workspace
	lock, err := lockDir(ctx, ws, unix.LOCK_SH)
	if err != nil {
		return nil, err
	}
	release := func() error {
		unlockDir(lock)
		return reclaimWorkspace(ws, ids, log)
	}
	if err := walkTree(ws, func(n *node) error { return grantNode(n, ids.uid) }); err != nil {
		return nil, errors.Join(workspaceError(ws, "grant the sandbox user access", err), release())
	}
	return release, nil
}

// reclaimWorkspace revokes the grant and hands files back when no other run
// uses the workspace.
func reclaimWorkspace(ws string, ids identity, log *slog.Logger) error {
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return workspaceError(ws, "reopen", err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			log.Debug("workspace still in use by another run; it will hand files back", "workspace", ws)
			return nil
		}
		return workspaceError(ws, "lock", err)
	}
	err = walkTreeAll(ws, func(n *node) error { return reclaimNode(n, ids) })
	if err != nil {
		// The walk went on past each failure, so only what is named here
		// is left to the sandbox user.
		return workspaceError(ws, fmt.Sprintf("hand files back to the caller (what is left there stays uid %d's: chown -R %d:%d %s)",
			ids.uid, ids.callerUID, ids.callerGID, ws), err)
	}
	return nil
}

// grantNode adds the sandbox user to a directory's or file's ACL, with the
// owner's permissions, and for directories to the default ACL so what the
// sandbox creates stays accessible to it.
func grantNode(n *node, uid uint32) error {
	if !n.isDir() && !n.isRegular() {
		return nil // symbolic links, devices, sockets: nothing to grant
	}
	a, err := readACL(n, xattrACLAccess)
	if err != nil {
		return err
	}
	if a == nil {
		a = aclFromMode(n.st.Mode)
	} else if err := ownACL(n, a, uid, "an access ACL"); err != nil {
		return err
	}
	owner, _ := a.find(tagUserObj, aclUndefinedID)
	perm := owner.perm
	if n.isRegular() {
		priv, err := privileged(n)
		if err != nil {
			return err
		}
		if priv {
			// A write through a shared mapping keeps set-id bits and
			// file capabilities (write(2) and truncate drop them), so a
			// writable privileged file would become the caller's
			// privileged program with the sandbox's content.
			perm &^= 2
		}
	}
	if err := writeACL(n, xattrACLAccess, a.withUser(uid, perm)); err != nil {
		return err
	}
	if !n.isDir() {
		return nil
	}
	d, err := readACL(n, xattrACLDefault)
	if err != nil {
		return err
	}
	switch {
	case d == nil:
		d = aclFromMode(n.st.Mode)
	case !d.hasUser(uid):
		// Removing our entry later could not tell this default ACL from
		// one we created, so it would be lost.
		return fmt.Errorf("%s has a default ACL of its own: remove it (setfacl -k) or run sandboxrun as a non-root user", n.path)
	default:
		if err := ownACL(n, d, uid, "a default ACL"); err != nil {
			return err
		}
	}
	return writeACL(n, xattrACLDefault, d.withUser(uid, 7))
}

// privileged reports whether running the file gains privileges: set-user-id,
// set-group-id with group execute (without it the bit means mandatory
// locking), or file capabilities.
func privileged(n *node) (bool, error) {
	if n.st.Mode&unix.S_ISUID != 0 || n.st.Mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP {
		return true, nil
	}
	_, err := unix.Getxattr(n.procPath(), xattrCapability, nil)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ENODATA), errors.Is(err, unix.EOPNOTSUPP):
		return false, nil
	}
	return false, xattrError(n, "read", xattrCapability, err)
}

// ownACL refuses ACLs with entries sandboxrun did not add: their mask could
// not be restored exactly.
func ownACL(n *node, a acl, uid uint32, what string) error {
	if len(a.namedExcept(uid)) > 0 {
		return fmt.Errorf("%s has %s of its own: remove it (setfacl -b) or run sandboxrun as a non-root user", n.path, what)
	}
	return nil
}

// reclaimNode removes the sandbox user's ACL entries and gives what the
// sandbox user owns to the caller, clearing set-id bits on the way.
func reclaimNode(n *node, ids identity) error {
	uid := ids.uid
	if n.isDir() || n.isRegular() {
		for _, name := range []string{xattrACLAccess, xattrACLDefault} {
			a, err := readACL(n, name)
			if err != nil {
				return err
			}
			if a == nil || !a.hasUser(uid) {
				continue
			}
			rest := a.withoutUser(uid)
			if name == xattrACLDefault && !rest.hasNamed() {
				err = removeXattr(n, name)
			} else {
				err = writeACL(n, name, rest)
			}
			if err != nil {
				return err
			}
		}
	}
	newUID, newGID := -1, -1
	if n.st.Uid == uid {
		newUID = int(ids.callerUID)
	}
	if n.st.Gid == ids.gid {
		newGID = int(ids.callerGID)
	}
	if newUID == -1 && newGID == -1 {
		return nil
	}
	if err := unix.Fchownat(n.fd, "", newUID, newGID, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chown", Path: n.path, Err: err}
	}
	// A set-id file the sandbox wrote must not become the caller's set-id
	// file. The kernel clears the bits on chown; make sure of it.
	if n.isRegular() {
		var st unix.Stat_t
		if err := unix.Fstat(n.fd, &st); err != nil {
			return &os.PathError{Op: "stat", Path: n.path, Err: err}
		}
		if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			if err := unix.Chmod(n.procPath(), st.Mode&0o1777); err != nil {
				return &os.PathError{Op: "chmod", Path: n.path, Err: err}
			}
		}
	}
	return nil
}

// readACL returns the ACL stored in the named attribute, or nil when there
// is none.
func readACL(n *node, name string) (acl, error) {
	buf := make([]byte, 256)
	for {
		sz, err := unix.Getxattr(n.procPath(), name, buf)
		switch {
		case errors.Is(err, unix.ENODATA):
			return nil, nil
		case errors.Is(err, unix.ERANGE):
			buf = make([]byte, len(buf)*4)
			continue
		case err != nil:
			return nil, xattrError(n, "read", name, err)
		}
		a, err := parseACL(buf[:sz])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", n.path, name, err)
		}
		return a, nil
	}
}

func writeACL(n *node, name string, a acl) error {
	if err := unix.Setxattr(n.procPath(), name, a.encode(), 0); err != nil {
		return xattrError(n, "write", name, err)
	}
	return nil
}

func removeXattr(n *node, name string) error {
	if err := unix.Removexattr(n.procPath(), name); err != nil && !errors.Is(err, unix.ENODATA) {
		return xattrError(n, "remove", name, err)
	}
	return nil
}

func xattrError(n *node, op, name string, err error) error {
	if errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("%s: the file system does not support POSIX ACLs, which a root caller needs to share a writable workspace: run sandboxrun as a non-root user or use a workspace on another file system: %w", n.path, err)
	}
	return fmt.Errorf("%s %s of %s: %w", op, name, n.path, err)
}

func workspaceError(ws, doing string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", ErrWorkspace, doing, ws, err)
}

// lockDir takes a flock on a directory, waiting until ctx ends.
func lockDir(ctx context.Context, dir string, how int) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, workspaceError(dir, "open", err)
	}
	delay := 5 * time.Millisecond
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		if err == nil {
			return fd, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			unix.Close(fd)
			return -1, workspaceError(dir, "lock", err)
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return -1, fmt.Errorf("wait for workspace %s: %w", dir, ctx.Err())
		case <-time.After(delay):
			delay = min(2*delay, 200*time.Millisecond)
		}
	}
}

func unlockDir(fd int) { unix.Close(fd) } // closing the last descriptor drops the flock
