package backends

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/oci"
)

// The oci backend gives the Service what it needs.
var _ sandboxrun.Engine = (*oci.Runner)(nil)

// newOCI builds the oci backend the policy's oci section describes. It
// needs root and the runtime; it runs nothing. runtime is the one the
// policy's top-level runtime or the caller asked for (Config.OCIRuntime,
// already checked against the policy): it is the oci runtime when
// oci.runtime names none, and must agree with it when it does, so that a
// policy's runsc is never run with another runtime.
func newOCI(pol *policy.Operator, log *slog.Logger, maxConcurrent int, runtime string) (*oci.Runner, error) {
	opts := []oci.Option{
		oci.WithLogger(log),
		oci.WithVersion(sandboxrun.Version),
		oci.WithDefaultImage(sandboxrun.RunnerImage()),
	}
	rt := pol.OCI.Runtime
	switch {
	case rt == "":
		rt = runtime
	case runtime != "" && runtime != rt:
		return nil, fmt.Errorf("policy %s: backend oci: the runtime %q was asked for, but oci.runtime (line %d) is %q: make them agree", pol.Source, runtime, pol.OCI.Line, rt)
	}
	if rt != "" {
		opts = append(opts, oci.WithRuntime(rt))
	}
	if s := pol.OCI.State; s != "" {
		opts = append(opts, oci.WithState(s))
	}
	if w := pol.OCI.Warm; w > 0 {
		opts = append(opts, oci.WithWarmPool(w, pol.OCI.WarmIdleOrDefault()))
	}
	if maxConcurrent > 0 {
		opts = append(opts, oci.WithMaxConcurrent(maxConcurrent))
	}
	r, err := oci.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("policy %s: backend oci: %w", pol.Source, err)
	}
	return r, nil
}

// UnpackOCIImage makes ref runnable by the oci backend pol describes (its
// state folder and runtime): from source, an OCI image layout or a docker
// save tarball, or from the local Docker engine when source is empty. It
// returns the image id.
func UnpackOCIImage(ctx context.Context, pol *policy.Operator, ref, source string) (string, error) {
	if pol == nil {
		pol = policy.BuiltinPolicy()
	}
	r, err := newOCI(pol, slog.New(slog.DiscardHandler), 1, "")
	if err != nil {
		return "", err
	}
	defer func() { _ = r.Close() }()
	if source != "" {
		return r.Import(ctx, ref, source)
	}
	return r.ImportFromEngine(ctx, ref)
}
