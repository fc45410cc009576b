#!/usr/bin/env bash
# Builds helm from the Go module proxy into a cache that survives between
# runs, for the chart's lint and template checks and `make test-helm`. A
# complete cache is reused as is; the first build takes a few minutes.
# Prints the binary's path on its last line (go-tool-build.sh does the work).
#
#   SANDBOXRUN_HELM_CACHE  cache root (default /var/cache/sandboxrun-helm)
#   HELM_VERSION           helm release (default 3.22.0)
set -euo pipefail

version=${HELM_VERSION:-3.22.0}
cache=${SANDBOXRUN_HELM_CACHE:-/var/cache/sandboxrun-helm}
# helm prints its version from this (as its own Makefile sets it).
exec "$(dirname "${BASH_SOURCE[0]}")/go-tool-build.sh" helm helm.sh/helm/v3/cmd/helm "$version" "$cache" \
	"-X helm.sh/helm/v3/internal/version.version=v$version"
