package kube

import (
	"fmt"
	"os"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// caBundleMax bounds the egress proxy's trust bundle carried in a job (the
// system's roots and the run's CA take a few hundred KiB).
const caBundleMax = 4 << 20

// runDirBytes sizes the Pod's /run/sandboxrun, which holds the proxy's
// trust bundle.
const runDirBytes = 2 * caBundleMax

func readCABundle(p string) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%w: EgressCA: %w", sandbox.ErrInvalidSpec, err)
	}
	if fi.Size() > caBundleMax {
		return nil, fmt.Errorf("%w: EgressCA %s is %d bytes, over %d", sandbox.ErrInvalidSpec, p, fi.Size(), caBundleMax)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%w: EgressCA: %w", sandbox.ErrInvalidSpec, err)
	}
	return b, nil
}
