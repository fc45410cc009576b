#!/usr/bin/env bash
# go-tool-build.sh NAME PACKAGE VERSION CACHE [LDFLAGS]: builds the Go
# command PACKAGE at module version vVERSION from the Go module proxy into
# CACHE, a folder that survives between runs, as CACHE/NAME-vVERSION. A
# binary already there is reused as is. LDFLAGS are added to "-s -w".
# Prints the binary's path on its last line. helm-build.sh and
# jaeger-build.sh are its callers; they name the tool and its defaults.
set -euo pipefail

if [[ $# -lt 4 || $# -gt 5 ]]; then
	echo "usage: $0 NAME PACKAGE VERSION CACHE [LDFLAGS]" >&2
	exit 2
fi
name=$1 pkg=$2 version=$3 cache=$4 ldflags="-s -w${5:+ $5}"
bin=$cache/$name-v$version

if [[ -x $bin ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache/src"
export GOCACHE=$cache/gocache GOMODCACHE=$cache/gomod GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
cd "$cache/src"
# A module of its own: the tool's dependencies never enter sandboxrun's go.mod.
rm -f go.mod go.sum
go mod init "sandboxrun-$name-build" >/dev/null 2>&1
go get -tool "$pkg@v$version"
go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" "$pkg"
mv "$bin.tmp" "$bin"
echo "$bin"
