package sandboxrun

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// EgressRunner runs each execution through Runner, and gives the ones
// whose limits carry an egress allowlist (Spec.Limits.Egress, decided by
// the operator's policy) their own egress proxy: started just before the
// sandbox, stopped as soon as Runner returns (the container is gone by
// then), its summary put in Result.Egress and every decision in
// Result.EgressRecord for the audit log. Other executions pass through
// unchanged. It is safe for concurrent use when Runner is.
type EgressRunner struct {
	Runner sandbox.Runner
	// Options apply to every proxy: a resolver, a logger, an observer
	// counting decisions for metrics.
	Options []egress.Option
}

var _ sandbox.Runner = EgressRunner{}

// Run starts the run's proxy when it needs one, runs, and stops the proxy.
// A proxy that cannot start is an environment failure: nothing ran.
func (e EgressRunner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	if spec.Limits.Egress == nil || spec.EgressSocket != "" {
		return e.Runner.Run(ctx, spec)
	}
	if spec.RunID == "" {
		// The proxy's folder carries the id, so a leaked one can be traced.
		id, err := sandbox.NewRunID()
		if err != nil {
			return nil, err
		}
		spec.RunID = id
	}
	cfg, err := egress.ConfigFor(spec.RunID, spec.Limits.Egress)
	if err != nil {
		return nil, fmt.Errorf("%w: Limits.Egress: %w", sandbox.ErrInvalidSpec, err)
	}
	uid, gid := sandbox.UserIDs()
	p, err := egress.Start(cfg, append([]egress.Option{egress.WithSocketOwner(uid, gid), egress.WithOwner(sandbox.OwnerLabels())}, e.Options...)...)
	if err != nil {
		return nil, err
	}
	spec.EgressSocket = p.Socket()
	if err := withSecrets(&spec, p); err != nil {
		return nil, errors.Join(err, p.Close())
	}
	res, err := e.Runner.Run(ctx, spec)
	if cerr := p.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if res != nil {
		rec := p.Record()
		res.Egress, res.EgressRecord = &rec.Summary, &rec
	}
	return res, err
}

// ReapEgressFolders removes the egress proxies' folders in dir
// (os.TempDir() when empty) whose owner process on this host is gone: what
// a sandboxrun killed mid-run left behind. Folders of live owners, of other
// hosts and without an owner record are kept. With dryRun nothing is
// removed. It returns the folders selected.
func ReapEgressFolders(dir string, dryRun bool) ([]string, error) {
	folders, err := egress.Folders(dir)
	if err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("reap egress folders: host name: %w", err)
	}
	var out []string
	var errs []error
	for _, f := range folders {
		if _, gone := sandbox.OwnerGone(f.Owner, host, sandbox.ProcessAlive); !gone {
			continue
		}
		out = append(out, f.Path)
		if !dryRun {
			if err := os.RemoveAll(f.Path); err != nil {
				errs = append(errs, fmt.Errorf("remove egress folder: %w", err))
			}
		}
	}
	return out, errors.Join(errs...)
}
