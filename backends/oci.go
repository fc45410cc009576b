package backends

import (
	"fmt"
	"log/slog"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/oci"
)

// The oci backend gives the Service what it needs.
var _ sandboxrun.Engine = (*oci.Runner)(nil)

// newOCI builds the oci backend the policy's oci section describes. It
// needs root and the runtime; it runs nothing.
func newOCI(pol *policy.Operator, log *slog.Logger, maxConcurrent int) (*oci.Runner, error) {
	opts := []oci.Option{
		oci.WithLogger(log),
		oci.WithVersion(sandboxrun.Version),
		oci.WithDefaultImage(sandboxrun.RunnerImage()),
	}
	if r := pol.OCI.Runtime; r != "" {
		opts = append(opts, oci.WithRuntime(r))
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
