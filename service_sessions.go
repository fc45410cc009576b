package sandboxrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// ErrNoSessions is wrapped when a request uses sessions and the Service
// keeps none; it matches ErrRefused too.
var ErrNoSessions = errors.New("no sessions")

// sweepEvery is how often, at most, sessions idle past their TTL are
// looked for.
const sweepEvery = time.Minute

// sweepInterval is the sweep's period for a default idle TTL of ttl: every
// minute, or half the TTL when that is shorter (never under a second), so an
// operator's short TTL removes folders about when it says rather than up to
// a minute late. Access is refused at expiry whatever the period (the store
// checks on every call); the sweep is what frees the disk.
func sweepInterval(ttl time.Duration) time.Duration {
	return max(time.Second, min(sweepEvery, ttl/2))
}

// sessionsRoot is where the Service keeps sessions: Config.SessionsRoot,
// else the policy's sessions.root; "" keeps none.
func sessionsRoot(cfg Config, pol *policy.Operator) string {
	if cfg.SessionsRoot != "" {
		return cfg.SessionsRoot
	}
	return pol.Sessions.Root.Value
}

// openSessions opens the session store, or returns why sessions are
// refused: nil store and nil error when none were asked for.
func openSessions(cfg Config, pol *policy.Operator) (*session.Store, error) {
	root := sessionsRoot(cfg, pol)
	if root == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, where.Errorf("sessions root %q: %w", where.Path(root), err)
	}
	if pol.Backend.Kind() == policy.BackendKubernetes {
		if err := checkKubeSessions(abs, pol); err != nil {
			return nil, err
		}
	}
	// 0711: the sandbox user (another uid) must reach a session's folder
	// through it; listing the root is the server's alone.
	if err := os.MkdirAll(abs, 0o711); err != nil { //nolint:gosec // others may traverse, not list: see above
		return nil, where.Errorf("create the sessions root %s: %w (give serve --sessions a folder this user may create)", where.Path(abs), err)
	}
	// The folders under it are mounted into sandboxes: the same rules as a
	// workspace's apply (never a system tree, never beside the engine's
	// socket).
	if _, err := policy.ResolveWorkspace(abs, os.Getenv("DOCKER_HOST")); err != nil {
		return nil, fmt.Errorf("sessions root: %w", err)
	}
	r := pol.Sessions
	lim := session.Limits{
		TTL:           time.Duration(r.TTL.Value),
		MaxTTL:        time.Duration(r.MaxTTL.Value),
		Quota:         int64(r.Quota.Value),
		MaxPerOwner:   int(r.MaxPerToken.Value),
		MaxTotalBytes: int64(r.MaxTotalBytes.Value),
		MaxFiles:      int(r.MaxFiles.Value),
		MaxDepth:      int(r.MaxDepth.Value),
		MaxSnapshots:  int(r.MaxSnapshots.Value),
	}
	st, err := session.Open(abs, lim, session.WithLogger(cfg.Logger), session.WithReplica(cfg.Replica))
	if err != nil {
		return nil, fmt.Errorf("open sessions: %w", err)
	}
	return st, nil
}

// checkKubeSessions: writable sessions need nothing of the cluster (a
// run's workspace travels over its attach stream into the Pod and its
// changes come back the same way), but a read-only one is mounted into
// the Pod, from a volume claim or, where the policy allows host paths,
// from the node.
func checkKubeSessions(root string, pol *policy.Operator) error {
	if pol.Sessions.Write.Value || pol.Kubernetes.HostPathsAllowed() {
		return nil
	}
	for _, c := range pol.Kubernetes.Claims {
		if policy.PathWithin(root, c.Path) {
			return nil
		}
	}
	return refused(where.Errorf("%w: sessions are read-only (sessions.write: false), so pods mount them, but the sessions root %s is under no kubernetes.claims entry and host_paths is false: add a claim whose path holds it, or allow writes (the workspace then travels over the run's attach)", ErrNoSessions, where.Path(root)))
}

// sessionStore is the Service's session store, for the Door's session
// calls. It fails (matching ErrNoSessions and ErrRefused) when the Service
// keeps none, with the reason and the fix.
func (s *Service) sessionStore() (*session.Store, error) {
	if s.sessErr != nil {
		return nil, s.sessErr
	}
	if s.sessions == nil {
		return nil, refused(fmt.Errorf("%w: this server keeps no sessions: start it with --sessions DIR, or set sessions.root in the policy", ErrNoSessions))
	}
	return s.sessions, nil
}

// sessionRun takes the session a request names for the length of one run:
// runs in a session are serialized, its folder becomes /workspace, and the
// run is cancelled if the session is deleted meanwhile. The returned
// context is the run's; done releases the session.
func (s *Service) sessionRun(ctx context.Context, req *Request) (context.Context, func(), error) {
	if req.Session == "" {
		return ctx, func() {}, nil
	}
	if req.Workspace != "" {
		return ctx, nil, refused(errors.New("a run names a session or a workspace folder, not both"))
	}
	st, err := s.sessionStore()
	if err != nil {
		return ctx, nil, err
	}
	lease, err := st.Acquire(ctx, req.owner, req.Session)
	if err != nil {
		return ctx, nil, sessionError(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(lease.Ctx, cancel)
	req.lease = lease
	req.Workspace = lease.Dir
	return ctx, func() {
		stop()
		cancel()
		lease.Release()
	}, nil
}

// sessionError marks what a session refuses (a missing session, a limit,
// a bad path) as a refusal: nothing ran.
func sessionError(err error) error {
	if errors.Is(err, session.ErrNotFound) || errors.Is(err, session.ErrLimit) || errors.Is(err, session.ErrBadPath) {
		return refused(err)
	}
	return err
}

// setChanges gives a run with a writable workspace the one applier of its
// changes (sandbox.Spec.Changes): the session's lease, which counts them
// against its quota and takes turns with uploads, or, for a host folder
// (run --workspace, mcp --workspace), the folder held open for the run.
// The returned function releases what it opened.
func (s *Service) setChanges(req *Request, p *plan.Plan) (func(), error) {
	switch {
	case !p.Spec.WorkspaceWritable:
		return func() {}, nil
	case req.lease != nil:
		p.Spec.Changes = req.lease
		return func() {}, nil
	}
	f, err := session.OpenFolder(p.Spec.Workspace, session.Limits{}, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrWorkspace, err)
	}
	p.Spec.Changes = f
	return func() { _ = f.Close() }, nil // a folder handle: nothing to flush
}
