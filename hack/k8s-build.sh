#!/usr/bin/env bash
# Builds a single-node Kubernetes for sandboxrun's tests into a cache that
# survives between runs: the six commands of k8s.io/kubernetes from the Go
# module proxy (kube-proxy for the Pod-network profile of hack/k8s-up.sh), a static pause binary from the same source, and etcd and the
# CNI plugins unpacked (not installed) from Debian's archive. A complete
# cache is reused as is; the first build takes about five minutes.
#
#   SANDBOXRUN_K8S_CACHE   cache root (default /var/cache/sandboxrun-k8s)
#   K8S_VERSION            Kubernetes release (default 1.36.3)
set -euo pipefail

version=${K8S_VERSION:-1.36.3}
cache=${SANDBOXRUN_K8S_CACHE:-/var/cache/sandboxrun-k8s}
out=$cache/v$version
stamp=$out/.complete
cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy)

# A complete cache made before kube-proxy was one of the commands gets
# the missing ones alone.
todo=("${cmds[@]}")
if [[ -f $stamp ]]; then
	todo=()
	for c in "${cmds[@]}"; do [[ -x $out/bin/$c ]] || todo+=("$c"); done
	if ((${#todo[@]} == 0)); then
		echo "k8s-build: v$version cached in $out"
		exit 0
	fi
fi
rm -f "$stamp"

mkdir -p "$out/bin" "$out/debian" "$out/pause"
# The Go build cache lives next to the binaries so a rebuild (new version,
# lost stamp) is incremental.
export GOCACHE=$cache/gocache GOMODCACHE=$cache/gomod GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local

src=$(go mod download -json "k8s.io/kubernetes@v$version" | jq -r .Dir)
work=$out/src
rm -rf "$work"
cp -r "$src" "$work"
chmod -R u+w "$work"
cd "$work"
rm -f go.work go.work.sum
# The module's go.mod points its k8s.io/* dependencies at ./staging, which a
# module download does not contain: use the published copies instead, whose
# versions are the release's with major 0 (v1.36.3 -> v0.36.3).
staging=v0.${version#1.}
sed -i -E -e '/=>[[:space:]]*\.\/staging\//d' \
	-e "s#^([[:space:]]+k8s\.io/[a-z0-9-]+) v0\.0\.0\$#\1 $staging#" go.mod

minor=${version#1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
pkgs=()
for c in "${todo[@]}"; do pkgs+=("./cmd/$c"); done
go build -trimpath -ldflags "$ldflags" -o "$out/bin/" "${pkgs[@]}"

# The pod sandbox image is the pause binary alone; built here so no registry
# is needed.
gcc -Os -static -DVERSION=3.10 -o "$out/pause/pause" build/pause/linux/pause.c

cd "$out/debian"
rm -f ./*.deb
apt-get download etcd-server containernetworking-plugins
rm -rf "$out/root"
for deb in ./*.deb; do dpkg-deb -x "$deb" "$out/root"; done

cd "$out"
rm -rf "$work"
for c in "${cmds[@]}"; do [[ -x $out/bin/$c ]]; done
[[ -x $out/root/usr/bin/etcd && -x $out/root/usr/lib/cni/bridge ]]
touch "$stamp"
echo "k8s-build: v$version built in $out"
