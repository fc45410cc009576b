package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
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
func (k *Runner) CheckNetwork(ctx context.Context) error {
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

func (k *Runner) probeNetwork(ctx context.Context) error {
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
	res, err := k.probeRun(ctx, spec)
	if err != nil {
		return fmt.Errorf("%w: the probe pod did not run: %w", ErrNetworkNotIsolated, err)
	}
	seen := strings.Fields(res.Stdout)
	if !res.Success || len(seen) != 1 || seen[0] != "lo" {
		return fmt.Errorf("%w: a probe pod in namespace %s saw interfaces %v (exit %d, %s): runs without network are refused; run sandbox pods on nodes whose CNI gives pods loopback only, or set a runtime class whose handler has no network (gVisor --network=none)",
			ErrNetworkNotIsolated, k.namespace, seen, res.ExitCode, strings.TrimSpace(res.Error))
	}
	return nil
}

// probeRun runs the probe in a Pod of its own straight through the
// driver: it is no run of the engine's (no skill folder, no slot, no warm
// pool, no proof of its own). The Pod is deleted before it returns.
func (k *Runner) probeRun(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	// As a run's, the create is not cut short (driver.startPod).
	eb, err := driver{k}.Start(context.WithoutCancel(ctx), spec, engine.Plan{Data: &plan{}})
	if eb != nil {
		defer func() {
			_ = eb.Kill(ctx)
			if err := eb.Remove(ctx); err != nil {
				k.log.Warn("delete the probe pod", "error", err)
			}
		}()
	}
	if err != nil {
		return nil, err
	}
	b := eb.(*box)
	job, err := json.Marshal(sandbox.JobFor(spec, k.version, k.initGrace))
	if err != nil {
		return nil, fmt.Errorf("encode job: %w", err)
	}
	go func() {
		if _, err := b.sess.stdin.Write(job); err == nil {
			_ = b.sess.stdin.Close()
		}
	}()
	out := sandbox.NewOutput(spec)
	var rep *frame.Report
	var decodeErr error
	decoded := make(chan struct{})
	go func() {
		defer close(decoded)
		rep, decodeErr = out.Decode(b.sess.frames, nil)
	}()
	backstop := time.NewTimer(probeLimits.Timeout + k.initGrace + k.backstopMargin)
	defer backstop.Stop()
	select {
	case <-decoded:
	case <-backstop.C:
	case <-ctx.Done():
	}
	_ = b.Kill(ctx) // ends the stream, if it has not ended
	<-decoded
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run cancelled: %w", err)
	}
	if rep == nil {
		return nil, sandbox.NoReportError(-1, b.sess.initLog.FirstLine(), decodeErr)
	}
	res := sandbox.NewResult(spec)
	out.Finish(res, sandbox.Outcome{Report: rep, InitExit: -1})
	return res, nil
}
