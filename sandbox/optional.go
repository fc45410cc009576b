package sandbox

import "context"

// Optional abilities of a backend. A Runner is all a backend must be; the
// Service asks for the rest with a type assertion, so a backend offers
// what its engine can do and nothing has to be faked.

// Pinger is a backend that can tell whether its engine answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// ImageChecker is a backend that can look up an image where its sandboxes
// start, returning its id; a missing image matches ErrImageNotFound.
type ImageChecker interface {
	CheckImage(ctx context.Context, ref string) (string, error)
}

// Reaper is a backend that can find and remove the sandboxes its owners
// left behind (a crashed host, SIGKILL).
type Reaper interface {
	Reap(ctx context.Context, opts ReapOptions) ([]Reaped, error)
}

// PoolReporter is a backend that keeps warm sandboxes and reports on them.
type PoolReporter interface {
	PoolStats() PoolStats
}

// ImagePreparer is a backend that keeps state per image beside the image
// itself (sandbox/docker's usr volumes): it can make that state ahead of
// the image's first run, and remove what images no longer present left.
type ImagePreparer interface {
	// PrepareImage makes ref's state and names it ("" when the backend
	// keeps none for ref).
	PrepareImage(ctx context.Context, ref string) (string, error)
	// PruneImageState removes the state of images that are gone.
	PruneImageState(ctx context.Context, dryRun bool) ([]Reaped, error)
}

// SpecChecker is a backend that checks a Spec against what its host offers
// (CPUs, memory, engine runtimes) before anything starts. Its Run makes
// the same check, so CheckSpec refuses exactly what Run would refuse there
// (matching ErrBeyondHost); an unreachable engine is its error.
type SpecChecker interface {
	CheckSpec(ctx context.Context, spec Spec) error
}

// IsolationReporter is a backend that proves, rather than sets up, that a
// sandbox without network has none (sandbox/kube), and tells how the proof
// stands, without probing: which mechanism proved it and when, or why none
// holds. For the operator's eyes (explain, doctor).
type IsolationReporter interface {
	IsolationReport() string
}
