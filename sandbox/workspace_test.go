package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// rootCaller is sandboxrun run by root: scripts run as SandboxUID.
var rootCaller = identityFor(0, 0)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: files owned by the sandbox uid can only be made by root")
	}
}

// newWorkspace makes a small tree the sandbox user can reach on the host
// (the test's temp dirs are 0700 by default).
func newWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(ws), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "sub", "b.txt"), []byte("b"), 0o600))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(ws, "link")))
	return ws
}

func xattrACL(t *testing.T, path, name string) acl {
	t.Helper()
	buf := make([]byte, 1024)
	n, err := unix.Lgetxattr(path, name, buf)
	if errors.Is(err, unix.ENODATA) {
		return nil
	}
	require.NoError(t, err)
	a, err := parseACL(buf[:n])
	require.NoError(t, err)
	return a
}

// asSandbox runs a shell command as the sandbox user, as a script would.
func asSandbox(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: SandboxUID, Gid: SandboxGID}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "as uid %d: %s", SandboxUID, out)
}

func writableSpec(ws string) *Spec { return &Spec{Workspace: ws, WorkspaceWritable: true} }

func TestShareWorkspaceRoundTrip(t *testing.T) {
	requireRoot(t)
	ws := newWorkspace(t)
	release, err := shareWorkspace(context.Background(), writableSpec(ws), rootCaller, discard)
	require.NoError(t, err)

	a := xattrACL(t, filepath.Join(ws, "a.txt"), xattrACLAccess)
	e, ok := a.find(tagUser, SandboxUID)
	require.True(t, ok, "the sandbox user is granted the file")
	require.Equal(t, uint16(6), e.perm, "with the owner's permissions")
	require.True(t, xattrACL(t, filepath.Join(ws, "sub"), xattrACLDefault).hasUser(SandboxUID))

	// What a script does: edit, create, make directories, try set-id.
	asSandbox(t, ws, `echo more >> a.txt && echo new > new.txt && mkdir -p made/deeper &&
		echo x > made/deeper/f && echo y > sub/c.txt && echo z > suid && chmod 6755 suid && cat sub/b.txt >/dev/null`)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(filepath.Join(ws, "new.txt"), &st))
	require.Equal(t, uint32(SandboxUID), st.Uid, "while running, the sandbox owns what it made")

	require.NoError(t, release())

	err = filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(p, &st))
		require.Equal(t, uint32(0), st.Uid, "%s handed back to the caller", p)
		require.Equal(t, uint32(0), st.Gid, "%s handed back to the caller's group", p)
		if fi.Mode()&os.ModeSymlink == 0 {
			require.Nil(t, xattrACL(t, p, xattrACLAccess), "%s keeps no access ACL", p)
			require.Nil(t, xattrACL(t, p, xattrACLDefault), "%s keeps no default ACL", p)
		}
		return nil
	})
	require.NoError(t, err)
	mode := func(name string) os.FileMode {
		fi, err := os.Lstat(filepath.Join(ws, name))
		require.NoError(t, err)
		return fi.Mode()
	}
	require.Equal(t, os.FileMode(0o644), mode("a.txt"), "modes restored exactly")
	require.Equal(t, os.FileMode(0o600), mode("sub/b.txt"))
	require.Equal(t, os.ModeDir|0o755, mode("sub"))
	require.Equal(t, os.FileMode(0o644), mode("new.txt"))
	require.Equal(t, os.ModeDir|0o755, mode("made/deeper"))
	require.Zero(t, mode("suid")&(os.ModeSetuid|os.ModeSetgid), "no set-id file is handed to the caller")
	b, err := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "amore\n", string(b))

	var passwd unix.Stat_t
	require.NoError(t, unix.Stat("/etc/passwd", &passwd))
	require.Equal(t, uint32(0), passwd.Uid, "a symlink target is never touched")
}

func TestShareWorkspaceRefusesForeignACLs(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name  string
		xattr string
		want  string
	}{
		{"access acl", xattrACLAccess, "setfacl -b"},
		{"default acl", xattrACLDefault, "setfacl -k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t)
			target := filepath.Join(ws, "sub")
			own := aclFromMode(0o755)
			if tt.xattr == xattrACLAccess {
				own = own.withUser(1234, 7)
			}
			require.NoError(t, unix.Setxattr(target, tt.xattr, own.encode(), 0))

			release, err := shareWorkspace(context.Background(), writableSpec(ws), rootCaller, discard)
			require.ErrorIs(t, err, ErrWorkspace)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, release)
			require.False(t, xattrACL(t, filepath.Join(ws, "a.txt"), xattrACLAccess).hasUser(SandboxUID),
				"a refused share leaves no grant behind")
			want, err := parseACL(own.encode())
			require.NoError(t, err)
			require.Equal(t, want, xattrACL(t, target, tt.xattr), "the caller's own ACL is untouched")
		})
	}
}

func TestShareWorkspaceConcurrentRuns(t *testing.T) {
	requireRoot(t)
	ws := newWorkspace(t)
	file := filepath.Join(ws, "a.txt")
	r1, err := shareWorkspace(context.Background(), writableSpec(ws), rootCaller, discard)
	require.NoError(t, err)
	r2, err := shareWorkspace(context.Background(), writableSpec(ws), rootCaller, discard)
	require.NoError(t, err)

	require.NoError(t, r1())
	require.True(t, xattrACL(t, file, xattrACLAccess).hasUser(SandboxUID), "still shared while another run uses it")
	require.NoError(t, r2())
	require.Nil(t, xattrACL(t, file, xattrACLAccess), "the last run out revokes")
}

func TestShareWorkspaceCleansUpAfterACrash(t *testing.T) {
	requireRoot(t)
	ws := newWorkspace(t)
	// A run that died mid-way: grant in place, a file still the sandbox's.
	require.NoError(t, walkTree(ws, func(n *node) error { return grantNode(n, SandboxUID) }))
	asSandbox(t, ws, "echo left > leftover.txt")

	release, err := shareWorkspace(context.Background(), writableSpec(ws), rootCaller, discard)
	require.NoError(t, err, "a leftover grant is sandboxrun's own and accepted")
	require.NoError(t, release())
	require.Nil(t, xattrACL(t, filepath.Join(ws, "sub"), xattrACLDefault))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(filepath.Join(ws, "leftover.txt"), &st))
	require.Equal(t, uint32(0), st.Uid)
}

func TestShareWorkspaceNoOp(t *testing.T) {
	ws := t.TempDir()
	tests := []struct {
		name string
		spec *Spec
		ids  identity
	}{
		{"read-only workspace", &Spec{Workspace: ws}, rootCaller},
		{"no workspace", &Spec{}, rootCaller},
		{"caller runs the sandbox as itself", writableSpec(ws), identityFor(1000, 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release, err := shareWorkspace(context.Background(), tt.spec, tt.ids, discard)
			require.NoError(t, err)
			require.NoError(t, release())
			require.Nil(t, xattrACL(t, ws, xattrACLAccess))
		})
	}
}

func TestLockDirHonoursContext(t *testing.T) {
	ws := t.TempDir()
	fd, err := lockDir(context.Background(), ws, unix.LOCK_EX)
	require.NoError(t, err)
	defer unlockDir(fd)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = lockDir(ctx, ws, unix.LOCK_SH)
	require.ErrorIs(t, err, context.Canceled)
}

func TestCheckHostPaths(t *testing.T) {
	requireRoot(t)
	skill := t.TempDir()
	require.NoError(t, os.Chmod(skill, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(skill, "scripts"), 0o755))
	script := filepath.Join(skill, "scripts", "x.py")
	require.NoError(t, os.WriteFile(script, []byte("print(1)"), 0o644))
	ws := t.TempDir()
	require.NoError(t, os.Chmod(ws, 0o755))

	require.NoError(t, checkHostPaths(&Spec{SkillDir: skill, Workspace: ws}, rootCaller))

	require.NoError(t, os.Chmod(script, 0o600))
	err := checkHostPaths(&Spec{SkillDir: skill}, rootCaller)
	require.ErrorIs(t, err, ErrSkillUnreadable)
	require.ErrorContains(t, err, "chmod -R o+rX")
	require.NoError(t, checkHostPaths(&Spec{SkillDir: skill}, identityFor(1000, 1000)),
		"a caller running as itself reads what it can read")
	require.NoError(t, os.Chmod(script, 0o644))

	require.NoError(t, os.Chmod(ws, 0o700))
	err = checkHostPaths(&Spec{SkillDir: skill, Workspace: ws}, rootCaller)
	require.ErrorIs(t, err, ErrWorkspace)
	require.ErrorContains(t, err, "chmod o+rx")
	require.NoError(t, checkHostPaths(&Spec{SkillDir: skill, Workspace: ws, WorkspaceWritable: true}, rootCaller),
		"a writable workspace is shared by ACL instead")
}

// TestShareWorkspaceKeepsPrivilegedFilesReadOnly: a write through a shared
// mapping keeps a file's set-id bits and capabilities (only write(2) and
// truncate drop them), so the sandbox user must never be able to write a
// privileged file of the caller's: it would become the caller's privileged
// program with the sandbox's content.
func TestShareWorkspaceKeepsPrivilegedFilesReadOnly(t *testing.T) {
	requireRoot(t)
	// VFS_CAP_REVISION_2 granting cap_net_raw, effective.
	fcap := []byte{0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	tests := []struct {
		name     string
		mode     os.FileMode
		fcap     bool
		wantPerm uint16
	}{
		{"setuid", 0o755 | os.ModeSetuid, false, 5},
		{"setgid executable", 0o755 | os.ModeSetgid, false, 5},
		{"file capabilities", 0o755, true, 5},
		{"setgid without group exec is not privileged", 0o744 | os.ModeSetgid, false, 7},
		{"plain executable", 0o755, false, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t)
			p := filepath.Join(ws, "prog")
			require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
			require.NoError(t, os.Chmod(p, tt.mode))
			if tt.fcap {
				require.NoError(t, unix.Setxattr(p, "security.capability", fcap, 0))
			}
			release, err := shareWorkspace(context.Background(), writableSpec(ws), rootCaller, discard)
			require.NoError(t, err)
			e, ok := xattrACL(t, p, xattrACLAccess).find(tagUser, SandboxUID)
			require.True(t, ok)
			require.Equal(t, tt.wantPerm, e.perm)
			if tt.wantPerm&2 == 0 {
				cmd := exec.Command("/bin/sh", "-c", "exec 3<>prog")
				cmd.Dir = ws
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: SandboxUID, Gid: SandboxGID}}
				out, err := cmd.CombinedOutput()
				require.Error(t, err, "the sandbox user opened a privileged file for writing: %s", out)
			}
			require.NoError(t, release())
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.Equal(t, tt.mode, fi.Mode(), "the mode is the caller's, exactly")
		})
	}
}

// TestReclaimGoesOnPastWhatItCannotHandBack: a script can make part of the
// tree too deep to walk; that part stays the sandbox's and is reported, but
// it must not stop everything else from being handed back and revoked.
func TestReclaimGoesOnPastWhatItCannotHandBack(t *testing.T) {
	requireRoot(t)
	ws := newWorkspace(t)
	release, err := shareWorkspace(context.Background(), writableSpec(ws), rootCaller, discard)
	require.NoError(t, err)
	// Many siblings, so some surely come after the deep tree in directory
	// order.
	asSandbox(t, ws, fmt.Sprintf(`d=deep; for i in $(seq %d); do d=$d/d; done; mkdir -p $d &&
		for i in $(seq 200); do echo x > f$i; done`, maxWalkDepth+10))

	err = release()
	require.ErrorIs(t, err, ErrWorkspace)
	require.ErrorIs(t, err, errWalkLimit)
	require.ErrorContains(t, err, "nested more than")
	for i := 1; i <= 200; i++ {
		var st unix.Stat_t
		require.NoError(t, unix.Stat(filepath.Join(ws, fmt.Sprintf("f%d", i)), &st))
		require.Equal(t, uint32(0), st.Uid, "f%d handed back", i)
	}
	require.Nil(t, xattrACL(t, filepath.Join(ws, "sub"), xattrACLDefault), "the grant is revoked")
	require.Nil(t, xattrACL(t, filepath.Join(ws, "a.txt"), xattrACLAccess), "the grant is revoked")
}
