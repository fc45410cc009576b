#!/usr/bin/env bash
# Builds Jaeger (all in one: OTLP receiver, in-memory store, query API) from
# the Go module proxy into a cache that survives between runs, for the
# tracing integration test. A complete cache is reused as is; the first
# build takes several minutes. Prints the binary's path on its last line
# (go-tool-build.sh does the work).
#
#   SANDBOXRUN_JAEGER_CACHE  cache root (default /var/cache/sandboxrun-jaeger)
#   JAEGER_VERSION           Jaeger release (default 1.76.0)
set -euo pipefail

version=${JAEGER_VERSION:-1.76.0}
cache=${SANDBOXRUN_JAEGER_CACHE:-/var/cache/sandboxrun-jaeger}
exec "$(dirname "${BASH_SOURCE[0]}")/go-tool-build.sh" jaeger github.com/jaegertracing/jaeger/cmd/jaeger "$version" "$cache"
