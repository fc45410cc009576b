package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// A Pod always gets the interface its CNI plugin creates: Kubernetes has
// no "network none". sandboxrun therefore does not assume isolation, it
// proves it (docs/kubernetes.md, "No network"), before the first run
// without network and again every while (netproof.go). A probe Pod, made
// exactly like a sandbox Pod (namespace, labels, runtime class, security),
// lists its network interfaces. Loopback alone is proof (a loopback-only
// CNI, gVisor with --network=none). With more, a NetworkPolicy must be
// shown to stop it (connprobe.go): connections to targets known to listen
// fail from a Pod made like a sandbox Pod, and open from a control Pod
// that lacks the label the deny-all policy selects. Anything else refuses
// runs without network.

// probeLimits are enough for listing the interfaces and little else.
var probeLimits = policy.Limits{
	Timeout:     20 * time.Second,
	MemoryBytes: 32 << 20,
	CPUs:        0.1,
	Pids:        16,
	OutputBytes: 4 << 10,
	TmpBytes:    1 << 20,
}

// ifacesArgv lists the Pod's network interfaces, one a line: from
// /sys/class/net, or from /proc/net/dev where sysfs has no class/net
// (gVisor).
var ifacesArgv = []string{"sh", "-c", `ls -1 /sys/class/net 2>/dev/null | grep . || sed -n 's/^ *\([^:]*\):.*/\1/p' /proc/net/dev`}

// proveIsolation makes one proof: the interfaces first, then, when the
// Pod sees more than loopback, the connect probe.
func (k *Runner) proveIsolation(ctx context.Context) (Isolation, error) {
	spec := k.probeSpec("netprobe-ifaces", ifacesArgv, probeLimits)
	res, err := k.probeRun(ctx, spec, false)
	if err != nil {
		return Isolation{}, fmt.Errorf("%w: the probe pod did not run: %w", ErrNetworkNotIsolated, err)
	}
	seen := strings.Fields(res.Stdout)
	slices.Sort(seen)
	if !res.Success || len(seen) == 0 {
		return Isolation{}, fmt.Errorf("%w: a probe pod in namespace %s could not list its interfaces (exit %d, %s): runs without network are refused",
			ErrNetworkNotIsolated, k.namespace, res.ExitCode, strings.TrimSpace(res.Error))
	}
	if len(seen) == 1 && seen[0] == "lo" {
		return Isolation{Mechanism: IsolationLoopback, Interfaces: seen}, nil
	}
	return k.provePolicy(ctx, seen)
}

// probeSpec is a probe's Spec: the runner's image, a run id of its own
// (kind names it in `kubectl get pods`).
func (k *Runner) probeSpec(kind string, argv []string, limits policy.Limits) *sandbox.Spec {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail (Go 1.24)
	return &sandbox.Spec{
		RunID:   kind + "-" + hex.EncodeToString(b[:]),
		Skill:   "netprobe",
		Argv:    argv,
		Runtime: argv[0],
		Image:   k.image,
		Limits:  limits,
	}
}

// probeRun runs a probe in a Pod of its own straight through the driver:
// it is no run of the engine's (no skill folder, no slot, no warm pool, no
// proof of its own). A control Pod lacks the label the deny-all policy
// selects. The Pod is deleted before it returns.
func (k *Runner) probeRun(ctx context.Context, spec *sandbox.Spec, control bool) (*sandbox.Result, error) {
	// As a run's, the create is not cut short (driver.startPod).
	eb, err := driver{k}.Start(context.WithoutCancel(ctx), spec, engine.Plan{Data: &plan{control: control}})
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
	backstop := time.NewTimer(spec.Limits.Timeout + k.initGrace + k.backstopMargin)
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
