#!/usr/bin/env bash
# Builds Jaeger (all in one: OTLP receiver, in-memory store, query API) from
# the Go module proxy into a cache that survives between runs, for the
# tracing integration test. A complete cache is reused as is; the first
# build takes several minutes. Prints the binary's path on its last line.
#
#   SANDBOXRUN_JAEGER_CACHE  cache root (default /var/cache/sandboxrun-jaeger)
#   JAEGER_VERSION           Jaeger release (default 1.76.0)
set -euo pipefail

version=${JAEGER_VERSION:-1.76.0}
cache=${SANDBOXRUN_JAEGER_CACHE:-/var/cache/sandboxrun-jaeger}
bin=$cache/jaeger-v$version

if [[ -x $bin ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache/src"
export GOCACHE=$cache/gocache GOMODCACHE=$cache/gomod GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
cd "$cache/src"
# A module of its own: Jaeger's dependencies never enter sandboxrun's go.mod.
rm -f go.mod go.sum
go mod init sandboxrun-jaeger-build >/dev/null 2>&1
go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@v$version"
go build -trimpath -ldflags '-s -w' -o "$bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger
mv "$bin.tmp" "$bin"
echo "$bin"
