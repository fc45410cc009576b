#!/usr/bin/env bash
# Builds (or reuses) the cached Kubernetes, starts a single-node cluster,
# runs the conformance suite and the kube-tagged integration cases against
# it with the Kubernetes backend, and tears the cluster down whatever
# happened. A cluster that does not come up fails the run: nothing is
# skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=${SANDBOXRUN_K8S_RUN:-/tmp/sandboxrun-k8s}
export SANDBOXRUN_K8S_RUN=$run
start=$SECONDS

"$here/k8s-build.sh"
"$here/k8s-down.sh" # what an interrupted run left
trap '"$here/k8s-down.sh"; echo "test-k8s: $((SECONDS - start)) s in all"' EXIT
up=$SECONDS
"$here/k8s-up.sh"
echo "test-k8s: cluster up in $((SECONDS - up)) s"
cd "$here/.."
SANDBOXRUN_KUBECONFIG=$run/sandboxrun.kubeconfig SANDBOXRUN_K8S_NAMESPACE=sandboxrun \
	go test -tags kube -race -count=1 -timeout 20m "$@" ./integration/kube/
