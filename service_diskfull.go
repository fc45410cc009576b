package sandboxrun

import (
	"errors"
	"syscall"

	"github.com/sandboxrun/sandboxrun/sandbox"
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
