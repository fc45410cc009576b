package kube

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// caBundleMax bounds the egress proxy's trust bundle carried in a job (the
// system's roots and the run's CA take a few hundred KiB).
const caBundleMax = 4 << 20

// runDirBytes sizes the Pod's /run/sandboxrun, which holds the proxy's
// trust bundle.
const runDirBytes = 2 * caBundleMax

// jobFor is the job of spec in a Pod: what the Docker backend mounts (the
// proxy's socket and trust bundle, a writable workspace) goes over the
// job's side channel instead. The channel is nil when the run needs none.
func (k *Kube) jobFor(spec *sandbox.Spec, log *slog.Logger) (*frame.Job, *hostChannel, error) {
	job := sandbox.JobFor(spec, k.version, k.initGrace)
	if spec.EgressSocket == "" && !spec.WorkspaceWritable {
		return &job, nil, nil
	}
	job.Channel = true
	if spec.EgressSocket != "" {
		e := &frame.Egress{Listen: sandbox.ProxyAddr, Channel: true}
		if spec.EgressCA != "" {
			b, err := readCABundle(spec.EgressCA)
			if err != nil {
				return nil, nil, err
			}
			e.CABundle, e.CAPath = b, sandbox.EgressCAPath
		}
		job.Egress = e
	}
	if spec.WorkspaceWritable {
		job.Workspace = &frame.Workspace{Dir: sandbox.WorkspaceDir}
	}
	return &job, newHostChannel(spec, log), nil
}

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

// workspaceUsed is what a writable workspace's files take in a tmpfs; 0
// without one. Not rounded: the tmpfs's size is these and the write cap,
// and a round-up would let a run write past the cap.
func workspaceUsed(spec *sandbox.Spec) (int64, error) {
	if !spec.WorkspaceWritable {
		return 0, nil
	}
	return sandbox.TreeSize(spec.Workspace, 1<<62)
}

// workspaceSize is the size of the Pod's workspace tmpfs (Run has added
// the files' size to the write cap by then).
func workspaceSize(spec *sandbox.Spec) int64 { return spec.Limits.WorkspaceWriteBytes }
