#!/usr/bin/env bash
# Builds helm from the Go module proxy into a cache that survives between
# runs, for the chart's lint and template checks and `make test-helm`. A
# complete cache is reused as is; the first build takes a few minutes.
# Prints the binary's path on its last line.
#
#   SANDBOXRUN_HELM_CACHE  cache root (default /var/cache/sandboxrun-helm)
#   HELM_VERSION           helm release (default 3.22.0)
set -euo pipefail

version=${HELM_VERSION:-3.22.0}
cache=${SANDBOXRUN_HELM_CACHE:-/var/cache/sandboxrun-helm}
bin=$cache/helm-v$version

if [[ -x $bin ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache/src"
export GOCACHE=$cache/gocache GOMODCACHE=$cache/gomod GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
cd "$cache/src"
# A module of its own: helm's dependencies never enter sandboxrun's go.mod.
rm -f go.mod go.sum
go mod init sandboxrun-helm-build >/dev/null 2>&1
go get -tool "helm.sh/helm/v3/cmd/helm@v$version"
# helm prints its version from these (as its own Makefile sets them).
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=v$version"
go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" helm.sh/helm/v3/cmd/helm
mv "$bin.tmp" "$bin"
echo "$bin"
