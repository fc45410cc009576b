package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Mechanisms by which a probe proves that a sandbox Pod has no network.
const (
	// IsolationLoopback: a probe Pod made like a sandbox Pod saw the
	// loopback interface alone (a loopback-only CNI, gVisor with
	// --network=none).
	IsolationLoopback = "loopback-only"
	// IsolationPolicy: the probe Pod has more than loopback, but an
	// enforced deny-all NetworkPolicy stops it: from a Pod made like a
	// sandbox Pod no connection to a listening target opened, while from
	// a control Pod without the label the policy selects every one did.
	IsolationPolicy = "enforced-policy"
)

// Isolation is the state of the proof that a run without network has
// none: the mechanism that proved it and when, or the last failure.
type Isolation struct {
	// Mechanism is IsolationLoopback or IsolationPolicy; empty when no
	// proof holds.
	Mechanism string
	// Interfaces are what the probe Pod saw in /sys/class/net.
	Interfaces []string
	// Targets are the addresses (host:port) the control Pod reached and
	// the sandbox-like Pod did not (IsolationPolicy).
	Targets []string
	// ProvenAt is when the proof was made; it holds until ValidUntil,
	// and is made again from half way there by the runs that need it.
	ProvenAt   time.Time
	ValidUntil time.Time
	// Err is the last failure while it is remembered (then FailedAt);
	// runs without network are refused with it. Nil with no Mechanism:
	// no probe has run yet.
	Err      error
	FailedAt time.Time
	// Probing is true while a probe is under way.
	Probing bool
}

// String says what the proof is, in a line: which mechanism proved it and
// when, or why none holds.
func (i Isolation) String() string {
	const stamp = "2006-01-02T15:04:05Z07:00"
	switch {
	case i.Mechanism == IsolationLoopback:
		return fmt.Sprintf("proven %s: a probe pod saw loopback only (%s); holds until %s",
			i.ProvenAt.UTC().Format(stamp), strings.Join(i.Interfaces, ", "), i.ValidUntil.UTC().Format(stamp))
	case i.Mechanism == IsolationPolicy:
		return fmt.Sprintf("proven %s: an enforced deny-all NetworkPolicy (interfaces %s; %s refused to a sandbox-like pod, reached by a control pod); holds until %s",
			i.ProvenAt.UTC().Format(stamp), strings.Join(i.Interfaces, ", "), strings.Join(i.Targets, ", "), i.ValidUntil.UTC().Format(stamp))
	case i.Err != nil:
		return fmt.Sprintf("not proven (probe at %s): %v", i.FailedAt.UTC().Format(stamp), i.Err)
	case i.Probing:
		return "not proven yet: a probe is under way"
	}
	return "not proven yet: the first run without network probes"
}

// netProof is the runner's proof of isolation. One probe runs at a time,
// in the background under the runner's life (Close ends it), so a caller
// that gives up does not waste it for the others; runs wait for it only
// when no proof holds. A proof holds for valid; from half way the next run
// starts a new probe and does not wait for it. A failure refuses runs
// without network at once, and is remembered for retry, so a cluster that
// cannot isolate is not probed by every run.
type netProof struct {
	mu      sync.Mutex
	valid   time.Duration
	retry   time.Duration
	state   Isolation
	running chan struct{} // closed when the probe under way ends
	probes  sync.WaitGroup
}

// Isolation returns the state of the proof, without probing.
func (k *Runner) Isolation() Isolation {
	p := &k.net
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state
	st.Probing = p.running != nil
	return st
}

// IsolationReport is Isolation in a line (sandbox.IsolationReporter).
func (k *Runner) IsolationReport() string { return k.Isolation().String() }

// CheckNetwork returns nil when a proof that sandbox Pods have no network
// holds (network.go says how one is made), probing first when none does.
// The error matches ErrNetworkNotIsolated when the probe ran and did not
// prove it, or could not run.
func (k *Runner) CheckNetwork(ctx context.Context) error {
	p := &k.net
	for {
		p.mu.Lock()
		now := k.now()
		st := p.state
		if st.Mechanism != "" && now.Before(st.ValidUntil) {
			if p.running == nil && !now.Before(st.ProvenAt.Add(p.valid/2)) {
				k.startProbe()
			}
			p.mu.Unlock()
			return nil
		}
		if st.Err != nil && now.Sub(st.FailedAt) < p.retry {
			p.mu.Unlock()
			return st.Err
		}
		if p.running == nil {
			k.startProbe()
		}
		done := p.running
		p.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("wait for the network isolation probe: %w", ctx.Err())
		}
	}
}

// startProbe starts a probe in the background; p.mu is held.
func (k *Runner) startProbe() {
	p := &k.net
	done := make(chan struct{})
	p.running = done
	p.probes.Add(1)
	go func() {
		defer p.probes.Done()
		defer close(done)
		ctx, cancel := context.WithTimeout(k.life, probeBudget)
		iso, err := k.proveIsolation(ctx)
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.running = nil
		now := k.now()
		if err != nil {
			p.state = Isolation{Err: err, FailedAt: now}
			k.log.Warn("sandbox pods not proven network-isolated: runs without network are refused",
				"namespace", k.namespace, "runtime_class", k.runtimeClass, "error", err)
			return
		}
		iso.ProvenAt, iso.ValidUntil = now, now.Add(p.valid)
		p.state = iso
		k.log.Info("sandbox pods proven network-isolated", "mechanism", iso.Mechanism, "interfaces", iso.Interfaces,
			"targets", iso.Targets, "namespace", k.namespace, "runtime_class", k.runtimeClass, "valid_until", iso.ValidUntil)
	}()
}

// probeBudget bounds one whole proof: the loopback probe, then the two
// connect probes side by side, each a Pod's start and its script.
const probeBudget = 3 * time.Minute
