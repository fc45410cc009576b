#!/usr/bin/env bash
# Print the JSON arguments read from stdin inside a JSON object.
set -euo pipefail

args=$(cat)
if [[ -z "${args//[[:space:]]/}" ]]; then
  args='{}'
fi

if command -v jq >/dev/null 2>&1; then
  # jq checks that the input is JSON; it reads it from stdin, not argv, so
  # large arguments do not hit the kernel's per-argument size limit.
  if ! printf '%s' "$args" | jq -c '{skill: "hello", runtime: "bash", args: .}' 2>/dev/null; then
    echo "echo.sh: standard input is not JSON" >&2
    exit 1
  fi
else
  printf '{"skill":"hello","runtime":"bash","args":%s}\n' "$args"
fi
