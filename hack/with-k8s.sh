#!/usr/bin/env bash
# with-k8s.sh CMD...: builds (or reuses) the cached Kubernetes, starts a
# single-node cluster, runs CMD with SANDBOXRUN_KUBECONFIG and
# SANDBOXRUN_K8S_NAMESPACE pointing at it, and tears the cluster down
# whatever happened (also on SIGINT/SIGTERM). A cluster that does not come
# up fails the run, with the end of each daemon's log. Runs on one host
# take turns (a lock next to the run folder): a second run waits for the
# first instead of tearing its cluster down.
#
#   SANDBOXRUN_K8S_LOCK_WAIT  seconds to wait for the lock (default 1800)
#   K8S_PROFILE               loopback (default) or podnet: the node's
#                             network (hack/k8s-up.sh); podnet's pieces are
#                             built once by hack/net-build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=${SANDBOXRUN_K8S_RUN:-/tmp/sandboxrun-k8s}
export SANDBOXRUN_K8S_RUN=$run
start=$SECONDS

# fd 9 holds the lock; no child keeps it (9>&- below), so it goes with
# this script even if a daemon outlives it.
exec 9>"$run.lock"
if ! flock -n 9; then
	echo "with-k8s: another run holds $run.lock; waiting for it" >&2
	flock -w "${SANDBOXRUN_K8S_LOCK_WAIT:-1800}" 9 || { echo "with-k8s: FAIL: $run.lock still held" >&2; exit 1; }
fi

build=$SECONDS
"$here/k8s-build.sh" 9>&-
echo "with-k8s: kubernetes build ready in $((SECONDS - build)) s"
if [[ ${K8S_PROFILE:-loopback} == podnet ]]; then
	build=$SECONDS
	"$here/net-build.sh" 9>&- >/dev/null
	echo "with-k8s: pod network build ready in $((SECONDS - build)) s"
fi
"$here/k8s-down.sh" 9>&- # what an interrupted run left
trap '"$here/k8s-down.sh" 9>&-; echo "with-k8s: $((SECONDS - start)) s in all"' EXIT
# A signal ends what runs now (the child is waited for) and the script,
# and so the cluster.
child=
stop() {
	[[ -n $child ]] && kill -s "$1" "$child" 2>/dev/null && wait "$child"
	exit "$2"
}
trap 'stop INT 130' INT
trap 'stop TERM 143' TERM

up=$SECONDS
if ! "$here/k8s-up.sh" 9>&-; then
	echo "with-k8s: FAIL: the cluster did not come up; the end of each log:" >&2
	for f in "$run"/logs/*.log; do
		[[ -f $f ]] || continue
		echo "--- $f" >&2
		tail -n 15 "$f" >&2
	done
	exit 1
fi
echo "with-k8s: cluster (${K8S_PROFILE:-loopback}) up in $((SECONDS - up)) s"
cd "$here/.."
# In the background and waited for, so a signal is handled at once
# rather than when the command ends.
SANDBOXRUN_KUBECONFIG=$run/sandboxrun.kubeconfig SANDBOXRUN_K8S_NAMESPACE=sandboxrun "$@" 9>&- &
child=$!
wait "$child"
