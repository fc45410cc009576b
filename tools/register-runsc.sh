#!/bin/sh
# Registers gVisor's runsc with the Docker engine as the runtime "runsc", so
# `sandboxrun run --oci-runtime runsc` (or `runtime: runsc` in the operator
# policy) can use it. Run by `make runsc`, as root.
#
# It edits the engine's configuration, /etc/docker/daemon.json (or
# $DOCKER_DAEMON_JSON), adding runtimes.runsc and keeping everything else
# (the previous file is kept as daemon.json.sandboxrun-backup), then sends
# dockerd SIGHUP: the engine re-reads its runtimes without a restart, so
# running containers are not touched. It never restarts the engine.
set -eu
conf=${DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}
runsc=$(command -v runsc) || { echo "runsc is not installed: apt-get install runsc (make runsc does)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "this edits $conf and signals dockerd: run it as root" >&2; exit 1; }

# runsc before 2023 tells the host's network namespace from a container's
# by /proc/sys/net/core/rmem_default, which Linux 6.x shows in every
# namespace; it then refuses to start any container with "cannot run with
# network enabled in root network namespace". There, runsc is registered
# with --network=none: its sandboxes get loopback only, whatever the
# container's network (a skill's network_access gets no network under it).
args=""
if unshare -n sh -c 'test -e /proc/sys/net/core/rmem_default' 2>/dev/null; then
    args="--network=none"
    echo "note: this kernel ($(uname -r)) shows net.core.rmem_default in every network namespace, which runsc $(runsc --version 2>/dev/null | head -n1 | cut -d' ' -f3) takes for the host's;"
    echo "      registering it with --network=none: sandboxes under runsc get loopback only (network_access skills get no network)"
fi

status=0
python3 - "$conf" "$runsc" "$args" <<'PY' || status=$?
import json, os, shutil, sys
path, runsc, args = sys.argv[1], sys.argv[2], sys.argv[3].split()
try:
    with open(path) as f:
        conf = json.load(f)
except FileNotFoundError:
    conf = {}
runtimes = conf.setdefault("runtimes", {})
entry = {"path": runsc}
if args:
    entry["runtimeArgs"] = args
if runtimes.get("runsc") == entry:
    print(f"{path}: runsc already registered ({runsc} {' '.join(args)}); nothing to reload")
    sys.exit(10)
runtimes["runsc"] = entry
if os.path.exists(path):
    shutil.copy2(path, path + ".sandboxrun-backup")
tmp = path + ".sandboxrun-tmp"
with open(tmp, "w") as f:
    json.dump(conf, f, indent=2)
    f.write("\n")
os.chmod(tmp, 0o644)
os.replace(tmp, path)
print(f"{path}: registered runsc ({runsc} {' '.join(args)})")
PY
case $status in
0) ;;
10) exit 0 ;;
*) exit "$status" ;;
esac

pid=$(pidof dockerd) || { echo "dockerd is not running here; the runtime is registered for its next start" >&2; exit 0; }
kill -HUP $pid
i=0
until docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' 2>/dev/null | grep -qw runsc; do
    i=$((i + 1))
    [ $i -lt 20 ] || { echo "dockerd did not pick up runsc after SIGHUP; check $conf and the engine's log" >&2; exit 1; }
    sleep 0.5
done
echo "dockerd reloaded (SIGHUP): runtimes $(docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')"
