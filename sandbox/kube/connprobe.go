package kube

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// controlManaged is the io.sandboxrun.managed value of the connect probe's
// control Pod: not "true", so the chart's deny-all policy (matchLabels
// io.sandboxrun.managed: "true") does not select it; the reaper still
// finds it.
const controlManaged = "probe-control"

// Windows of the connect probe. The sandbox-like Pod tries every target
// again and again for denyWindow, and any connection that opens refuses:
// more tries only give a leak more chances to show. The control Pod tries
// each target until it opens, for at most controlWindow: a Pod's network,
// and a Service's rules, may be a moment behind its start.
const (
	denyWindow    = 3 * time.Second
	controlWindow = 20 * time.Second
	connectWait   = time.Second // one connection attempt
)

// connLimits are the connect probe's: one python3 process.
var connLimits = policy.Limits{
	Timeout:     controlWindow + 20*time.Second,
	MemoryBytes: 64 << 20,
	CPUs:        0.2,
	Pids:        16,
	OutputBytes: 8 << 10,
	TmpBytes:    1 << 20,
}

// connScript tries TCP connections to host port pairs (argv after the
// mode and the window) and prints one line per target: "open host:port",
// or "closed host:port reason". In mode deny it tries every target until
// the window ends (none may open); in mode control, each until it opens.
const connScript = `import socket, sys, time
mode, window, wait = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
args = sys.argv[4:]
targets = [(args[i], int(args[i + 1])) for i in range(0, len(args), 2)]
last = {t: "not tried" for t in targets}
opened = set()
end = time.monotonic() + window
while True:
    for t in targets:
        if t in opened:
            continue
        try:
            socket.create_connection(t, timeout=wait).close()
            opened.add(t)
        except OSError as e:
            last[t] = type(e).__name__ + ": " + str(e)
    if time.monotonic() >= end or (mode == "control" and len(opened) == len(targets)):
        break
    time.sleep(0.3)
for h, p in targets:
    name = ("[%s]:%d" if ":" in h else "%s:%d") % (h, p)
    print(("open " + name) if (h, p) in opened else ("closed " + name + " " + last[(h, p)]))
`

// connArgv is the connect probe's command for targets (host:port, the
// host an address) in mode deny or control.
func connArgv(mode string, window time.Duration, targets []target) []string {
	argv := []string{"python3", "-c", connScript, mode, secs(window), secs(connectWait)}
	for _, t := range targets {
		argv = append(argv, t.host, strconv.Itoa(t.port))
	}
	return argv
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// provePolicy runs the connect probe for a Pod that sees interfaces seen:
// from a Pod made like a sandbox Pod, no target may open; from the control
// Pod, every one must. The two run side by side.
func (k *Runner) provePolicy(ctx context.Context, seen []string) (Isolation, error) {
	targets, err := k.isolationTargets(ctx)
	if err != nil {
		return Isolation{}, fmt.Errorf("%w: a probe pod in namespace %s saw interfaces %v, so a NetworkPolicy must be shown to stop it, and %w",
			ErrNetworkNotIsolated, k.namespace, seen, err)
	}
	type answer struct {
		open map[string]string // target → "" open, else why not
		err  error
	}
	deny, control := make(chan answer, 1), make(chan answer, 1)
	for _, side := range []struct {
		mode   string
		window time.Duration
		out    chan answer
	}{{"deny", denyWindow, deny}, {"control", controlWindow, control}} {
		go func() {
			spec := k.probeSpec("netprobe-"+side.mode, connArgv(side.mode, side.window, targets), connLimits)
			res, err := k.probeRun(ctx, spec, side.mode == "control")
			if err != nil {
				side.out <- answer{err: err}
				return
			}
			m, err := parseConn(res, targets)
			side.out <- answer{m, err}
		}()
	}
	d, c := <-deny, <-control
	names := targetNames(targets)
	if d.err != nil {
		return Isolation{}, fmt.Errorf("%w: the connect probe's sandbox-like pod: %w", ErrNetworkNotIsolated, d.err)
	}
	var reached []string
	for _, n := range names {
		if d.open[n] == "" {
			reached = append(reached, n)
		}
	}
	if len(reached) > 0 && len(reached) < len(names) {
		// Some refused: a policy is enforced, but not for these.
		return Isolation{}, fmt.Errorf("%w: a probe pod made like a sandbox pod (interfaces %v) reached %s%s, though the other targets were refused: a policy selecting %s=true is enforced in namespace %s, but not for these addresses; an enforcer that filters only traffic it forwards leaves the node's own addresses open (the API server, a DNS on the node's network): keep sandbox pods from them (a CNI or host firewall that filters traffic to the node), or run sandbox pods on a loopback-only CNI or gVisor with --network=none",
			ErrNetworkNotIsolated, seen, strings.Join(reached, ", "), controlSaw(c.open, c.err, names), sandbox.LabelManaged, k.namespace)
	}
	if len(reached) > 0 {
		return Isolation{}, fmt.Errorf("%w: a probe pod made like a sandbox pod (interfaces %v) reached %s%s: no deny-all NetworkPolicy selecting %s=true is enforced in namespace %s (the policy is missing, or the CNI does not enforce NetworkPolicy): install the chart's policy (sandbox.networkPolicy) on a CNI that enforces it, or run sandbox pods on a loopback-only CNI or gVisor with --network=none",
			ErrNetworkNotIsolated, seen, strings.Join(reached, ", "), controlSaw(c.open, c.err, names), sandbox.LabelManaged, k.namespace)
	}
	if c.err != nil {
		return Isolation{}, fmt.Errorf("%w: the connect probe's control pod: %w", ErrNetworkNotIsolated, c.err)
	}
	var unreached []string
	for _, n := range names {
		if why := c.open[n]; why != "" {
			unreached = append(unreached, n+" ("+why+")")
		}
	}
	if len(unreached) > 0 {
		return Isolation{}, fmt.Errorf("%w: the isolation probe proved nothing: a probe pod (interfaces %v) has a network, and from a control pod without %s=true, which no deny-all policy selects, %s did not open within %s, so their refusal to a sandbox-like pod does not show a policy at work: name targets that listen and that every pod in namespace %s reaches (kubernetes.isolation_targets: [host:port, ...])",
			ErrNetworkNotIsolated, seen, sandbox.LabelManaged, strings.Join(unreached, ", "), controlWindow, k.namespace)
	}
	return Isolation{Mechanism: IsolationPolicy, Interfaces: seen, Targets: names}, nil
}

// parseConn reads the connect probe's lines: for each target, "" when it
// opened, else why not. A target without a line, or a script that failed,
// is an error.
func parseConn(res *sandbox.Result, targets []target) (map[string]string, error) {
	if !res.Success {
		return nil, fmt.Errorf("the probe script failed (exit %d, %s): %s", res.ExitCode, strings.TrimSpace(res.Error), strings.TrimSpace(res.Stderr))
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(res.Stdout), "\n") {
		state, rest, _ := strings.Cut(line, " ")
		name, why, _ := strings.Cut(rest, " ")
		switch state {
		case "open":
			got[name] = ""
		case "closed":
			if why == "" {
				why = "closed"
			}
			got[name] = why
		}
	}
	for _, n := range targetNames(targets) {
		if _, ok := got[n]; !ok {
			return nil, fmt.Errorf("the probe script said nothing of %s: %q", n, res.Stdout)
		}
	}
	return got, nil
}

// controlSaw says what the control Pod reached, for a refusal that does
// not need it.
func controlSaw(open map[string]string, err error, names []string) string {
	if err != nil {
		return ""
	}
	var got []string
	for _, n := range names {
		if open[n] == "" {
			got = append(got, n)
		}
	}
	if len(got) == 0 {
		return " (the control pod reached none)"
	}
	return " (the control pod reached " + strings.Join(got, ", ") + ")"
}
