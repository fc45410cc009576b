#!/usr/bin/env bash
# fuzz.sh [FUZZTIME]: runs every fuzz target of the module, each for
# FUZZTIME (default 30s). The list is read from the sources (every
# `func FuzzX(` in a _test.go file), so a new fuzzer cannot be forgotten;
# their seed corpora already run in `make unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
go=${GO:-go}
found=0
while IFS=: read -r file line; do
	name=$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' <<<"$line")
	[[ -n $name ]] || continue
	pkg=./$(dirname "$file")
	found=$((found + 1))
	echo "fuzz: $pkg $name"
	"$go" test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 100x
done < <(git ls-files '*_test.go' | xargs grep -H '^func Fuzz' | sort)
echo "fuzz: $found targets ran for $fuzztime each"
