package kube

import (
	"context"
	"errors"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// ClusterFacts are the cluster's answers to what a run needs of it, for
// `sandboxrun doctor`. Each error is nil when the cluster said yes.
type ClusterFacts struct {
	Namespace    string
	RuntimeClass string
	Image        string
	// Reach is listing Pods in the namespace: the API answers, the
	// credentials hold and reach the namespace.
	Reach error
	// Create is a server-side dry run of a sandbox Pod as a run makes it:
	// RBAC, admission (Pod security) and the runtime class all judge it,
	// and nothing is kept.
	Create error
	// Delete is a dry-run delete of a Pod that does not exist: "not found"
	// means the credentials may delete Pods.
	Delete error
	// ImageOnNode says whether a node lists the runner image.
	ImageOnNode error
	// Claims are the policy's volume claims by name.
	Claims map[string]error
	// NodeKernel is the kernel release every node reports, "" when they
	// differ or cannot be listed: a sandbox on another kernel is in a VM
	// or on gVisor.
	NodeKernel string
	// Network is the proof that a sandbox Pod without network has none,
	// made (CheckNetwork) when none holds: which mechanism proved it and
	// when, or why it failed. Zero when Create failed.
	Network Isolation
}

// ClusterFacts asks the cluster what a run of this runner needs of it.
func (k *Runner) ClusterFacts(ctx context.Context) ClusterFacts {
	f := ClusterFacts{Namespace: k.namespace, RuntimeClass: k.runtimeClass, Image: k.image, Claims: map[string]error{}}
	cctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	pods := k.client.Pods(k.namespace)
	if _, err := pods.List(cctx, metav1.ListOptions{Limit: 1}); err != nil {
		f.Reach = apiError("list pods in namespace "+k.namespace, err)
		return f
	}
	spec := k.dryRunSpec()
	pod := podFor(&spec, k.podParams(&spec))
	if _, err := pods.Create(cctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		f.Create = apiError("create a sandbox pod (dry run)", err)
	}
	err := pods.Delete(cctx, podName("doctor-missing"), metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case apierrors.IsNotFound(err):
	case err == nil:
		f.Delete = errors.New("a dry-run delete of a pod that does not exist succeeded, which proves nothing about the credentials")
	default:
		f.Delete = apiError("delete a pod (dry run)", err)
	}
	if _, err := k.CheckImage(cctx, ""); err != nil {
		f.ImageOnNode = err
	}
	if nodes, err := k.client.Nodes().List(cctx, metav1.ListOptions{}); err == nil {
		for i, n := range nodes.Items {
			kernel := n.Status.NodeInfo.KernelVersion
			if i > 0 && kernel != f.NodeKernel {
				f.NodeKernel = ""
				break
			}
			f.NodeKernel = kernel
		}
	}
	for _, c := range k.claims {
		f.Claims[c.Name] = k.checkClaim(cctx, c.Name)
	}
	cancel()
	if f.Create != nil {
		return f // a probe pod would be refused as well
	}
	if err := k.CheckNetwork(ctx); err != nil && k.Isolation().Err == nil {
		f.Network.Err = err // the doctor gave up waiting
	} else {
		f.Network = k.Isolation()
	}
	return f
}

// dryRunSpec is a run's Spec as the built-in policy decides it, for the
// dry-run Pod: the skill folder from the first claim when there is one,
// as runs on such a cluster take it.
func (k *Runner) dryRunSpec() sandbox.Spec {
	dir := os.TempDir()
	if len(k.claims) > 0 {
		dir = k.claims[0].Path
	}
	limits, _ := policy.BuiltinPolicy().Decide("sandboxrun-doctor", policy.SkillLimits{}, policy.Request{})
	return sandbox.Spec{
		RunID: "doctor-dry-run", Skill: "sandboxrun-doctor", SkillDir: dir,
		Argv: []string{"bash", "-c", "true"}, Image: k.image, Limits: limits,
	}
}
