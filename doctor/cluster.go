package doctor

import (
	"context"
	"sort"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/kube"
)

// clusterHost is a backend that can describe its cluster (sandbox/kube).
type clusterHost interface {
	ClusterFacts(ctx context.Context) kube.ClusterFacts
}

// judgeClusterFacts turns the cluster's answers into host checks.
func judgeClusterFacts(f kube.ClusterFacts, pol *policy.Operator) []Check {
	if f.Reach != nil {
		return []Check{fail(AreaHost, "cluster", oneLine(f.Reach),
			"check the kubeconfig (kubernetes.kubeconfig), that the cluster is up and that namespace "+f.Namespace+" exists and may be read")}
	}
	checks := []Check{pass(AreaHost, "cluster", "the API answers and pods in namespace "+f.Namespace+" may be listed")}
	if f.Create != nil {
		checks = append(checks, fail(AreaHost, "rbac_create", oneLine(f.Create),
			"grant create on pods and pods/attach in "+f.Namespace+" (hack/k8s-rbac.yaml); check the runtime class and the namespace's Pod security level"))
	} else {
		checks = append(checks, pass(AreaHost, "rbac_create", "a sandbox pod passes a server-side dry run (RBAC, admission, runtime class)"))
	}
	if f.Delete != nil {
		checks = append(checks, fail(AreaHost, "rbac_delete", oneLine(f.Delete), "grant delete on pods in "+f.Namespace+" (hack/k8s-rbac.yaml)"))
	} else {
		checks = append(checks, pass(AreaHost, "rbac_delete", "pods may be deleted"))
	}
	rc := f.RuntimeClass
	if rc == "" {
		checks = append(checks, pass(AreaHost, "runtime_class", "none: the cluster's default runtime (kubernetes.runtime_class: gvisor gives a user-space kernel)"))
	} else if f.Create == nil {
		checks = append(checks, pass(AreaHost, "runtime_class", rc+" is accepted"))
	}
	if f.ImageOnNode != nil {
		checks = append(checks, warn(AreaHost, "runner_image", oneLine(f.ImageOnNode), "load the runner image on the nodes (hack/k8s-up.sh does), or let them pull it"))
	} else {
		checks = append(checks, pass(AreaHost, "runner_image", f.Image+" is on a node"))
	}
	checks = append(checks, judgeIsolationProof(f.Network))
	names := make([]string, 0, len(f.Claims))
	for n := range f.Claims {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := f.Claims[n]; err != nil {
			checks = append(checks, fail(AreaHost, "claim_"+n, oneLine(err), "create the claim in "+f.Namespace+" or fix kubernetes.claims in the policy "+pol.Source))
		} else {
			checks = append(checks, pass(AreaHost, "claim_"+n, "bound, in "+f.Namespace))
		}
	}
	return checks
}

// judgeIsolationProof says how the backend proved that a sandbox Pod
// without network has none, or why it could not: then runs without
// network are refused.
func judgeIsolationProof(iso kube.Isolation) Check {
	switch {
	case iso.Mechanism != "":
		return pass(AreaHost, "network_isolation", iso.String())
	case iso.Err != nil:
		return fail(AreaHost, "network_isolation", oneLine(iso.Err),
			"runs without network are refused until it is proven: on a CNI that enforces NetworkPolicy, install the chart's deny-all policy (sandbox.networkPolicy) and name targets pods reach (kubernetes.isolation_targets); or run sandbox pods on a loopback-only CNI, or gVisor with --network=none (docs/kubernetes.md, \"No network\")")
	}
	return warn(AreaHost, "network_isolation", iso.String(), "run doctor again")
}
