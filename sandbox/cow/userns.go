package cow

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// holderEnv marks the short-lived child whose only job is to own a user
// namespace while its parent opens it (see userNS).
const holderEnv = "_SANDBOXRUN_COW_USERNS_HOLDER"

func init() {
	if os.Getenv(holderEnv) == "1" {
		// Wait for the parent to close our stdin, then go.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
}

// idMap shows on-disk owner fromUID:fromGID as toUID:toGID.
type idMap struct{ fromUID, toUID, fromGID, toGID int }

var (
	nsMu    sync.Mutex
	nsCache = map[idMap]*os.File{}
)

// userNS returns a user namespace whose mapping is k's (an id-mapped mount
// shows a file of on-disk owner k.fromUID as k.toUID). It is made once per
// mapping and kept open for the process's life: a mount only needs it
// while it is set up, and a backend's runs use one or a few mappings.
func userNS(k idMap) (*os.File, error) {
	nsMu.Lock()
	defer nsMu.Unlock()
	if f := nsCache[k]; f != nil {
		return f, nil
	}
	// A user namespace needs a process in it to be created; a Go process
	// cannot unshare one itself (it has threads). The child is this
	// program again, which waits on its stdin (init above) and holds no
	// privilege in the namespace that matters: only its mapping is used.
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("id-mapped mount: find this program: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = []string{holderEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: k.fromUID, HostID: k.toUID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: k.fromGID, HostID: k.toGID, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("id-mapped mount: make a user namespace: %w", err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	_ = stdin.Close()
	werr := cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("id-mapped mount: open the user namespace: %w", err)
	}
	if werr != nil {
		_ = f.Close()
		return nil, fmt.Errorf("id-mapped mount: the namespace's holder failed: %w", werr)
	}
	nsCache[k] = f
	return f, nil
}
