#!/usr/bin/env bash
# with-k8s.sh CMD...: builds (or reuses) the cached Kubernetes, starts a
# single-node cluster, runs CMD with SANDBOXRUN_KUBECONFIG and
# SANDBOXRUN_K8S_NAMESPACE pointing at it, and tears the cluster down
# whatever happened. A cluster that does not come up fails the run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=${SANDBOXRUN_K8S_RUN:-/tmp/sandboxrun-k8s}
export SANDBOXRUN_K8S_RUN=$run
start=$SECONDS

"$here/k8s-build.sh"
"$here/k8s-down.sh" # what an interrupted run left
trap '"$here/k8s-down.sh"; echo "with-k8s: $((SECONDS - start)) s in all"' EXIT
up=$SECONDS
"$here/k8s-up.sh"
echo "with-k8s: cluster up in $((SECONDS - up)) s"
cd "$here/.."
SANDBOXRUN_KUBECONFIG=$run/sandboxrun.kubeconfig SANDBOXRUN_K8S_NAMESPACE=sandboxrun "$@"
