package doctor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
	"github.com/sandboxrun/sandboxrun/sandbox/kube"
)

// Options say which setup to check. The zero value checks the built-in
// policy on the engine the environment names.
type Options struct {
	// Policy is the operator policy runs are made under; nil is the
	// built-in one. Its backend, runtime, limits and workspace rules are
	// the probe's, as for any run.
	Policy *policy.Operator
	// OCIRuntime asks for an engine runtime, as `--oci-runtime` does for a
	// run; the policy's, when set, must agree.
	OCIRuntime string
	// Engine replaces the backend the policy selects (tests: a runner
	// broken on purpose); nil connects as a run would.
	Engine sandboxrun.Engine
	// Logger logs what the Service does; nil discards.
	Logger *slog.Logger
	// TempDir holds the probe skill and its workspace while it runs;
	// empty is os.TempDir().
	TempDir string
}

// dockerHost is a backend that can describe its engine (sandbox/docker).
type dockerHost interface {
	HostFacts(ctx context.Context) (docker.HostFacts, error)
}

// Run checks the host, then the isolation from inside a sandbox made as a
// run's. The error is for a setup that cannot be started at all (an
// unreadable policy runtime, no temporary folder); everything else,
// including an unreachable engine, is a line of the Report.
func Run(ctx context.Context, o Options) (*Report, error) {
	pol := o.Policy
	if pol == nil {
		pol = policy.BuiltinPolicy()
	}
	runtime, err := pol.CheckRuntime(o.OCIRuntime)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.TempDir, "sandboxrun-doctor-")
	if err != nil {
		return nil, fmt.Errorf("make the probe's folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The sandbox's user reads the probe and the workspace: nothing here is
	// secret, and the folder goes when the doctor ends.
	if err := os.Chmod(tmp, 0o755); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("make the probe's folder: %w", err)
	}
	// The probe asks for a writable workspace on every backend: on
	// Kubernetes it travels over the run's attach, so this checks that
	// road as well.
	const write = true
	onCluster := pol.Backend.Kind() == policy.BackendKubernetes
	root, err := writeProbe(tmp, write)
	if err != nil {
		return nil, fmt.Errorf("write the probe: %w", err)
	}
	svc, err := sandboxrun.New(sandboxrun.Config{
		SkillRoots: []string{root}, Policy: pol, OCIRuntime: o.OCIRuntime,
		Runner: o.Engine, Logger: o.Logger, MaxConcurrent: 1,
		// The sandboxrun package links no backend: the probe's is the one
		// the policy selects, built as the run commands build theirs.
		Backend: backends.New,
		Images:  backends.Images(),
	})
	if err != nil {
		return nil, err
	}
	defer svc.Close()

	rep := &Report{Backend: pol.Backend.Kind()}
	eng, err := svc.Engine(ctx)
	if err != nil {
		rep.add(skip(AreaHost, "engine", oneLine(err), "start the engine (or fix the policy's backend) and run doctor again"))
		return rep, nil
	}
	var hostKernel string
	var policyIsolated bool
	places := []place{{"temp", os.TempDir()}}
	if r := pol.Sessions.Root.Value; r != "" {
		places = append(places, place{"sessions", r})
	}
	switch e := eng.(type) {
	case dockerHost:
		f, err := e.HostFacts(ctx)
		if err != nil {
			rep.add(skip(AreaHost, "engine", oneLine(err), "start the engine and run doctor again"))
			return rep, nil
		}
		hostKernel = f.KernelVersion
		for _, c := range judgeDocker(f, sandboxrun.Version) {
			rep.add(c)
		}
		places = append([]place{{"engine", f.RootDir}}, places...)
	case localHost:
		hostKernel = localKernel()
		rep.add(judgeLocal(e, hostKernel))
		places = append([]place{{"state", e.StateDir()}}, places...)
		if runtime == "" {
			// What the sandbox must show: gVisor under runsc.
			runtime = e.RuntimeName()
		}
	case clusterHost:
		f := e.ClusterFacts(ctx)
		hostKernel = f.NodeKernel
		policyIsolated = f.Network.Mechanism == kube.IsolationPolicy
		for _, c := range judgeClusterFacts(f, pol) {
			rep.add(c)
		}
	}
	for _, c := range judgeDisk(places, freeBytes) {
		rep.add(c)
	}
	probe(ctx, svc, rep, tmp, write, Expect{Runtime: runtime, HostKernel: hostKernel, PodPids: onCluster, PolicyIsolated: policyIsolated})
	return rep, nil
}

// probe runs the probe script as an ordinary run of the Service and adds
// its isolation checks.
func probe(ctx context.Context, svc *sandboxrun.Service, rep *Report, tmp string, write bool, e Expect) {
	ws := filepath.Join(tmp, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil { //nolint:gosec // the sandbox's user must read it
		rep.add(skip(AreaIsolation, "probe", oneLine(err), "check the temporary folder (TMPDIR)"))
		return
	}
	req := sandboxrun.Request{Workspace: ws}
	res, err := svc.RunScript(ctx, probeSkill, probeScript, req)
	if errors.Is(err, policy.ErrWorkspaceRoot) {
		// The policy keeps workspaces under its roots; the probe runs
		// without one rather than write into an operator's folder.
		req.Workspace = ""
		res, err = svc.RunScript(ctx, probeSkill, probeScript, req)
	}
	if err != nil {
		rep.add(skip(AreaIsolation, "probe", "the probe did not run: "+oneLine(err), "fix what the message names and run doctor again"))
		return
	}
	out := parseProbe(res.Stdout)
	if !res.Success || !out.complete() {
		rep.add(skip(AreaIsolation, "probe", fmt.Sprintf("the probe ended with exit code %d before its last line: %s", res.ExitCode, oneLine(errors.New(res.Stderr))),
			"run sandboxrun doctor -v and check the runner image"))
		return
	}
	e.Limits = res.Limits
	e.Workspace = req.Workspace != ""
	e.WorkspaceWritable = e.Workspace && write && svc.Policy().WorkspaceWritable(true)
	for _, c := range judge(out, e) {
		if c.Name == "workspace" && !e.Workspace {
			c = warn(AreaIsolation, "workspace", "not checked: the policy's workspace.roots do not hold the temporary folder",
				"run doctor with TMPDIR inside one of the policy's workspace roots")
		}
		rep.add(c)
	}
}

// oneLine is an error's message on one line, for a report line.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
