package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// A Pod always gets the interface its CNI plugin creates: Kubernetes has
// no "network none". sandboxrun therefore does not assume isolation, it
// proves it: before the first run without network, a probe Pod, made
// exactly like a sandbox Pod (namespace, runtime class, security), lists
// its network interfaces. Unless it sees the loopback interface alone,
// runs without network are refused. Mechanisms that pass (docs/kubernetes.md,
// "No network"): a node pool whose CNI gives pods loopback
// only, or a RuntimeClass whose handler is gVisor with --network=none.
// A NetworkPolicy does not pass: it filters traffic but leaves eth0.

// probeLimits are enough for `ls` and little else.
var probeLimits = policy.Limits{
	Timeout:     20 * time.Second,
	MemoryBytes: 32 << 20,
	CPUs:        0.1,
	Pids:        16,
	OutputBytes: 4 << 10,
	TmpBytes:    1 << 20,
}

// CheckNetwork proves, once per runner, that a sandbox Pod has no network
// interface but loopback. A failure is remembered for a while, so a
// cluster that cannot isolate is not probed by every run; the error
// matches ErrNetworkNotIsolated when the probe ran and saw more.
func (k *Kube) CheckNetwork(ctx context.Context) error {
	p := &k.net
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proven {
		return nil
	}
	if p.err != nil && k.now().Sub(p.failedAt) < p.retry {
		return p.err
	}
	err := k.probeNetwork(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return err // the caller gave up: nothing learnt
		}
		p.err, p.failedAt = err, k.now()
		return err
	}
	p.proven, p.err = true, nil
	k.log.Info("sandbox pods proven to have loopback only", "namespace", k.namespace, "runtime_class", k.runtimeClass)
	return nil
}

func (k *Kube) probeNetwork(ctx context.Context) error {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("generate probe id: %w", err)
	}
	spec := &sandbox.Spec{
		RunID:   "netprobe-" + hex.EncodeToString(b[:]),
		Skill:   "netprobe",
		Argv:    []string{"ls", "-1", "/sys/class/net"},
		Runtime: "ls",
		Image:   k.image,
		Limits:  probeLimits,
	}
	res := sandbox.NewResult(spec)
	if err := k.execute(ctx, spec, res, nil); err != nil {
		return fmt.Errorf("%w: the probe pod did not run: %w", ErrNetworkNotIsolated, err)
	}
	seen := strings.Fields(res.Stdout)
	if !res.Success || len(seen) != 1 || seen[0] != "lo" {
		return fmt.Errorf("%w: a probe pod in namespace %s saw interfaces %v (exit %d, %s): runs without network are refused; run sandbox pods on nodes whose CNI gives pods loopback only, or set a runtime class whose handler has no network (gVisor --network=none)",
			ErrNetworkNotIsolated, k.namespace, seen, res.ExitCode, strings.TrimSpace(res.Error))
	}
	return nil
}
