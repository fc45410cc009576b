#!/usr/bin/env bash
# bench-podnet.sh [BENCH FLAGS...]: runs bench/kube on a podnet cluster
# (hack/with-k8s.sh with K8S_PROFILE=podnet; make bench-k8s-podnet), where
# sandbox Pods have eth0 and a run without network needs an enforced
# deny-all policy. Before the bench it applies one to the sandbox Pods of
# the namespace and starts a listening Pod (which no policy selects) as the
# isolation probe's target next to the cluster DNS; both are deleted after.
#
#   SANDBOXRUN_KUBECTL        kubectl (the Makefile names the cluster's)
#   SANDBOXRUN_K8S_NAMESPACE  the sandbox namespace (with-k8s.sh sets it)
#   RUNNER_IMAGE              the listener's image (the runner image, loaded)
#   GO                        go (default go)
set -euo pipefail
run=${SANDBOXRUN_K8S_RUN:?run under hack/with-k8s.sh}
ns=${SANDBOXRUN_K8S_NAMESPACE:?run under hack/with-k8s.sh}
image=${RUNNER_IMAGE:?name the runner image loaded into the node}
[[ $(cat "$run/profile") == podnet ]] || { echo "bench-podnet: the cluster in $run is not K8S_PROFILE=podnet" >&2; exit 2; }
kubectl=("${SANDBOXRUN_KUBECTL:?name the kubectl of the cluster}" --kubeconfig "$run/admin.kubeconfig" -n "$ns")

cleanup() {
	"${kubectl[@]}" delete pod/bench-listener networkpolicy/bench-deny-all --ignore-not-found --wait=false >/dev/null
}
trap cleanup EXIT
"${kubectl[@]}" apply -f - >/dev/null <<Y
# The chart's policy in substance: every sandbox Pod, no traffic either way.
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bench-deny-all}
spec:
  podSelector: {matchLabels: {io.sandboxrun.managed: "true"}}
  policyTypes: [Ingress, Egress]
---
apiVersion: v1
kind: Pod
metadata: {name: bench-listener, labels: {app: bench-listener}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: main
      image: $image
      imagePullPolicy: Never
      command: [python3, -m, http.server, "8080"]
      readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
      securityContext:
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
Y
"${kubectl[@]}" wait --for=condition=Ready pod/bench-listener --timeout=120s >/dev/null
ip=$("${kubectl[@]}" get pod bench-listener -o jsonpath='{.status.podIP}')
# The API server is on the node's own address, which kube-network-policies
# (forwarded traffic only) does not filter: not a target here.
echo "bench-podnet: deny-all policy on sandbox pods; isolation targets $ip:8080 and the cluster DNS (not the API server, on the node)"
"${GO:-go}" run ./bench/kube -isolation-targets "$ip:8080" -isolation-cluster-dns=true -isolation-api-server=false "$@"
