package sandbox

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Permission bits a foreign sandbox user needs.
const (
	needRead   = 4
	needSearch = 1
)

// checkHostPaths checks, before any engine call, that the folders exist and
// that a foreign sandbox user can read what it must: every file of the
// skill, and the top of the workspace.
func checkHostPaths(spec *Spec, ids Identity) error {
	if err := checkDir("SkillDir", spec.SkillDir); err != nil {
		return err
	}
	if spec.Workspace != "" {
		if err := checkDir("Workspace", spec.Workspace); err != nil {
			return err
		}
	}
	if err := checkEgressSocket(spec, ids); err != nil {
		return err
	}
	if !ids.foreign() {
		return nil
	}
	err := walkTree(spec.SkillDir, func(n *node) error {
		if !canRead(n, ids) {
			return fmt.Errorf("%w: %s is not readable by the sandbox user (uid %d): make the skill world-readable, e.g. chmod -R o+rX %s",
				ErrSkillUnreadable, n.path, ids.uid, spec.SkillDir)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrSkillUnreadable) {
			return err
		}
		return where.Errorf("check skill folder %s: %w", where.Path(spec.SkillDir), err)
	}
	if spec.Workspace != "" && !spec.WorkspaceWritable {
		var st unix.Stat_t
		if err := unix.Stat(spec.Workspace, &st); err != nil {
			return workspaceError(spec.Workspace, "stat", err)
		}
		n := &node{path: spec.Workspace, st: st, fd: -1}
		if !canRead(n, ids) {
			return where.Errorf("%w: %s is not readable by the sandbox user (uid %d): make it world-readable (chmod o+rx %s), choose another workspace, or run sandboxrun as a non-root user",
				ErrWorkspace, where.Path(spec.Workspace), ids.uid, where.Path(spec.Workspace))
		}
	}
	return nil
}

func checkDir(field, path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &SpecError{Problems: []string{fmt.Sprintf("%s %s does not exist", field, path)}}
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrInvalidSpec, field, err)
	case !fi.IsDir():
		return &SpecError{Problems: []string{fmt.Sprintf("%s %s is not a directory", field, path)}}
	}
	return nil
}

// xattrACLAccess holds a file's POSIX access ACL.
const xattrACLAccess = "system.posix_acl_access"

// canRead reports whether the sandbox user can read a file or search and
// list a directory, from the permission bits. Objects with an ACL are given
// the benefit of the doubt: the engine will enforce whatever it says.
func canRead(n *node, ids Identity) bool {
	want := uint32(needRead)
	switch n.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		want |= needSearch
	case unix.S_IFREG:
	default:
		return true
	}
	if n.fd >= 0 {
		if sz, err := unix.Getxattr(n.procPath(), xattrACLAccess, nil); err == nil && sz > 0 {
			return true
		}
	}
	mode := n.st.Mode
	switch {
	case n.st.Uid == ids.uid:
		return (mode>>6)&want == want
	case n.st.Gid == ids.gid:
		return (mode>>3)&want == want
	default:
		return mode&want == want
	}
}
