#!/usr/bin/env bash
# storage-driver.sh: the bench against the engine's own storage driver and
# against overlay2, in the same run. The running engine is left as it is
# (no restart, no change to /etc/docker/daemon.json): a second dockerd with
# overlay2, its own data root, socket and no bridge is started for the
# measurement, given the runner image, and stopped and removed afterwards,
# also on failure or Ctrl-C. It runs in a network namespace of its own
# (unshare -n): a dockerd told --bridge none deletes any docker0 it finds,
# and in the host's namespace that is the running engine's default bridge. Needs root and a file system overlay2 accepts
# (ext4 or xfs) under /var/lib.
#
#   N   latency samples per method (default 20)
#   T   executions per throughput cell (default 40)
#   C   concurrencies (default 2,8)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-20} T=${T:-40} C=${C:-2,8}
image=${SANDBOXRUN_RUNNER_IMAGE:-sandboxrun/runner:$(sed -n 's/^const Version = "\(.*\)"$/\1/p' version.go)}
dir=$(mktemp -d /var/lib/sandboxrun-bench-overlay2.XXXXXX)
sock=$dir/docker.sock
bridge=$(docker network inspect bridge --format '{{index .Options "com.docker.network.bridge.name"}}' 2>/dev/null || true)
stop() {
	if [[ -f $dir/exec/dockerd.pid ]]; then
		kill "$(cat "$dir/exec/dockerd.pid")" 2>/dev/null || true
		for _ in $(seq 1 50); do [[ -f $dir/exec/dockerd.pid ]] || break; sleep 0.2; done
	fi
	umount -R "$dir/data" 2>/dev/null || true
	rm -rf "$dir"
	if [[ -n $bridge ]] && ! ip link show "$bridge" >/dev/null 2>&1; then
		echo "storage-driver: the engine's bridge $bridge is gone; restart the Docker engine to recreate it" >&2
	fi
}
trap stop EXIT
trap 'exit 130' INT TERM
mkdir -p "$dir/exec"
echo '{}' >"$dir/daemon.json" # not the engine's own file: its data root and driver would clash
setsid unshare --net dockerd --config-file "$dir/daemon.json" --data-root "$dir/data" --exec-root "$dir/exec" \
	--pidfile "$dir/exec/dockerd.pid" -H "unix://$sock" --storage-driver overlay2 \
	--bridge none --iptables=false --ip-masq=false >"$dir/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 100); do DOCKER_HOST=unix://$sock docker info >/dev/null 2>&1 && break; sleep 0.2; done
DOCKER_HOST=unix://$sock docker info >/dev/null 2>&1 || { echo "storage-driver: the overlay2 engine did not start:" >&2; tail "$dir/dockerd.log" >&2; exit 1; }
docker save "$image" | DOCKER_HOST=unix://$sock docker load >/dev/null
go build -o "$dir/bench" ./bench
echo "=== storage driver: $(docker info --format '{{.Driver}}') (the engine's own)"
"$dir/bench" -n "$N" -t "$T" -c "$C" -only latency,throughput -image "$image"
echo "=== storage driver: overlay2 (a second engine, same machine)"
DOCKER_HOST=unix://$sock "$dir/bench" -n "$N" -t "$T" -c "$C" -only latency,throughput -image "$image"
