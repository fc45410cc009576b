// Package engine owns the run flow of a sandbox once, for every backend:
// the Spec's checks and the host capacity check, the admission slots, the
// warm pool, the job and its frames, the Result and its workspace figures,
// the hand-back of a writable workspace's changes, the teardown in the
// background, cancellation safety and the run's trace span. A backend is a
// Driver: it translates a Spec into its own configuration (a container
// config, a runtime bundle, a Pod) and makes the few calls of a Box.
package engine
