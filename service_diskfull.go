package sandboxrun

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// handBackFull turns a run whose changes could not be handed back to its
// session because the host's file system is full into what it is for the
// caller: a run that reached the workspace's limit (workspace_full), with
// nothing of its changes kept, rather than a failure of the service. The
// cause, which names host paths, is for the operator's log.
func (s *Service) handBackFull(res *sandbox.Result, err error) (*sandbox.Result, error) {
	if res == nil || !res.Started || !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
		return res, err
	}
	s.log.Warn("a run's changes could not be handed back: the sessions folder's file system is full", "run_id", res.ID, "err", err)
	res.WorkspaceFull, res.Success = true, false
	res.Error = "the run's changes to /workspace could not be handed back: the server's disk is full. List the session's files to see what it holds, delete files you no longer need or ask the operator to free space, then run again"
	return res, nil
}

// pastQuota says in res what of a session run's changes did not fit the
// session (its quota, or the room left under all sessions' total) and
// were left out: the session keeps what fitted, each file whole
// (session.Lease.ApplyChanges). The run is then no success, and
// workspace_full, though its script may have seen no ENOSPC (the sandbox
// leaves a few pages of slack past a nearly full session).
func pastQuota(res *sandbox.Result, lease *session.Lease) {
	if res == nil || lease == nil {
		return
	}
	nk := lease.NotKept()
	if nk == nil {
		return
	}
	res.WorkspaceFull, res.Success = true, false
	names := make([]string, len(nk.Files))
	for i, f := range nk.Files {
		names[i] = strconv.Quote(f)
	}
	list := strings.Join(names, ", ")
	if more := nk.Count - len(nk.Files); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	msg := fmt.Sprintf("the run wrote more than the session may hold (%s): %d file(s) were not kept: %s. "+
		"The rest of its changes were kept (files lists them); a file not kept is as it was before the run. Fix: %s, then run again",
		nk.Limit.Limit, nk.Count, list, nk.Limit.Hint)
	if res.Error != "" {
		msg = res.Error + "; " + msg
	}
	res.Error = msg
}
