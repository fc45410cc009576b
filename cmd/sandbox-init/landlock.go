package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/layout"
)

// A skill sent over the channel (frame.SkillFiles) lives on a volume init
// must write, mounted read-write at /skills, and the child runs under
// init's uid: file modes alone would not stop it from chmod-ing a file
// back and writing it. So when /skills is a writable mount, every child
// init starts runs in a Landlock domain (kernel 5.13 and later, where the
// LSM is on) that allows the writing kinds of access only beneath the
// other writable mounts (/tmp, /workspace, /dev, ...): the skill's files
// cannot be written, truncated, removed, renamed or added to, whatever
// their modes. Modes and times are not Landlock's to guard; they are of
// the child's own copy, which ends with the Pod. Where the kernel offers
// no Landlock, the files are read-only by mode only (docs/kubernetes.md).

// writeRights are the kinds of access the domain restricts, by the
// Landlock ABI that introduced them.
var writeRights = []struct {
	abi    int
	rights uint64
}{
	{1, unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM},
	{2, unix.LANDLOCK_ACCESS_FS_REFER},
	{3, unix.LANDLOCK_ACCESS_FS_TRUNCATE},
}

// fileRights are the rights that apply to a file (a mount of one file,
// such as /etc/hosts) rather than a folder.
const fileRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE

// skillGuard is the domain's ruleset, made once: fd -1 when children need
// none (no writable /skills) or the kernel has no Landlock (then why
// says so).
var skillGuard = sync.OnceValue(func() guard {
	mounts, err := readMounts("/proc/self/mountinfo")
	if err != nil {
		return guard{fd: -1, why: err.Error()}
	}
	return newGuard(mounts, layout.SkillsRoot)
})

type guard struct {
	fd     int
	why    string // when fd is -1 though a guard was needed
	needed bool
}

// mount is one line of mountinfo: where, and whether it is writable.
type mount struct {
	point string
	rw    bool
}

// newGuard makes the ruleset for mounts when one at or under skills is
// writable.
func newGuard(mounts []mount, skills string) guard {
	needed := false
	for _, m := range mounts {
		if m.rw && within(m.point, skills) {
			needed = true
		}
	}
	if !needed {
		return guard{fd: -1}
	}
	g := guard{fd: -1, needed: true}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		g.why = "landlock unavailable: " + errno.Error()
		return g
	}
	var handled uint64
	for _, w := range writeRights {
		if int(abi) >= w.abi {
			handled |= w.rights
		}
	}
	attr := struct{ handledFS uint64 }{handled}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0) //nolint:gosec // the syscall takes a pointer to its attribute struct; x/sys has no wrapper
	if errno != 0 {
		g.why = "landlock ruleset: " + errno.Error()
		return g
	}
	for _, m := range mounts {
		// Not the skills volume, nothing under it, nothing holding it.
		if !m.rw || within(m.point, skills) || within(skills, m.point) {
			continue
		}
		if err := allowBeneath(int(fd), m.point, handled); err != nil {
			_ = unix.Close(int(fd))
			g.why = fmt.Sprintf("landlock rule for %s: %v", m.point, err)
			return g
		}
	}
	g.fd = int(fd)
	return g
}

// allowBeneath adds the rule that allows rights beneath dir. A mount that
// cannot be opened is left out: writes beneath it are then refused, which
// is the safe side.
func allowBeneath(ruleset int, dir string, rights uint64) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil //nolint:nilerr // left out, as said above
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileRights
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)} //nolint:gosec // an fd fits

	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0) //nolint:gosec // as above
	if errno != 0 {
		return errno
	}
	return nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// readMounts reads a mountinfo file: each mount point, and whether it is
// mounted read-write (its first per-mount option).
func readMounts(path string) ([]mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	infos, err := mountinfo.GetMountsFromReader(f, nil)
	if err != nil {
		return nil, err
	}
	out := make([]mount, 0, len(infos))
	for _, m := range infos {
		opts := strings.Split(m.Options, ",")
		out = append(out, mount{point: filepath.Clean(m.Mountpoint), rw: opts[0] == "rw"})
	}
	return out, nil
}

// forkExec is syscall.ForkExec, in the skill guard's domain when children
// need one: the fork is made from a thread of its own that enters the
// domain first and ends with its goroutine, so no other goroutine of init
// ever runs restricted (the thread is one of the reserve, threads.go).
func forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	return forkExecIn(skillGuard(), path, argv, attr)
}

func forkExecIn(g guard, path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	if !g.needed {
		return syscall.ForkExec(path, argv, attr)
	}
	if g.fd < 0 {
		// No Landlock here: the skill's files are read-only by mode.
		return syscall.ForkExec(path, argv, attr)
	}
	type result struct {
		pid int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- result{err: fmt.Errorf("no_new_privs: %w", err)}
			return
		}
		if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(g.fd), 0, 0); errno != 0 {
			done <- result{err: fmt.Errorf("enter the landlock domain: %w", errno)}
			return
		}
		pid, err := syscall.ForkExec(path, argv, attr)
		done <- result{pid, err}
	}()
	r := <-done
	return r.pid, r.err
}
