//go:build kube

// Package kube runs the conformance suite and the Kubernetes backend's own
// cases against a real cluster (make test-k8s starts one with hack/). It
// fails loudly when the cluster was asked for and does not answer.
package kube

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	kubebackend "github.com/sandboxrun/sandboxrun/sandbox/kube"
)

var runner *kubebackend.Runner

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	kubeconfig := os.Getenv("SANDBOXRUN_KUBECONFIG")
	if kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "kube: FAIL: SANDBOXRUN_KUBECONFIG is not set: start a cluster with `make test-k8s` (or hack/k8s-up.sh) and point it at its kubeconfig")
		return 1
	}
	ns := os.Getenv("SANDBOXRUN_K8S_NAMESPACE")
	if ns == "" {
		ns = "sandboxrun"
	}
	cfg, err := kubebackend.RESTConfig(kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube: FAIL:", err)
		return 1
	}
	runner, err = kubebackend.New(kubebackend.WithRESTConfig(cfg), kubebackend.WithNamespace(ns),
		kubebackend.WithVersion(sandboxrun.Version), kubebackend.WithDefaultImage(sandboxrun.RunnerImage()),
		kubebackend.WithMaxConcurrent(4))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube: FAIL:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runner.Ping(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kube: FAIL:", err)
		return 1
	}
	if _, err := runner.CheckImage(ctx, ""); err != nil {
		fmt.Fprintln(os.Stderr, "kube: FAIL:", err)
		return 1
	}
	code := m.Run()
	// The suite's own promise: every pod it made is deleted (the API
	// server may still be finishing a graceful deletion).
	left, err := livePods(context.Background(), sandbox.LabelOwnerPID+"="+fmt.Sprint(os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube: FAIL: list pods:", err)
		return 1
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "kube: FAIL: %d sandbox pod(s) left behind: %v\n", len(left), left)
		return 1
	}
	return code
}

// livePods are managed pods matching selector that are not being deleted.
func livePods(ctx context.Context, selector string) ([]string, error) {
	list, err := runner.Client().Pods(runner.Namespace()).List(ctx, metav1.ListOptions{
		LabelSelector: sandbox.LabelManaged + "=true," + selector,
	})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// requirePodGone asserts the run's pod is deleted or being deleted; a run
// with a report has its pod deleted in the background, so it waits a
// while for that.
func requirePodGone(t *testing.T, runID string) {
	t.Helper()
	var left []string
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		left, err = livePods(context.Background(), sandbox.LabelRunID+"="+runID)
		require.NoError(t, err)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Empty(t, left, "pod of run %s left behind", runID)
}
