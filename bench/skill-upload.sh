#!/bin/bash
# Times upload-to-first-run of a small skill against a real `serve`: N times,
# a new version each time (POST /v1/skills, then the first run pinned to the
# digest it answered); then a run of an operator skill (a cache miss) next
# to the same request answered from the result cache, p50 of each.
set -e
N=${N:-10}
BIN=${SANDBOXRUN:-bin/sandboxrun}
dir=$(mktemp -d); chmod 755 $dir
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf $dir' EXIT
printf 'skill_uploads:\n  allow: tokens\n  store: %s/store\ncache:\n  ttl: 10m\n' $dir > $dir/policy.yaml
tok=bench-token-0123456789abcdef; echo $tok > $dir/tokens
port=$((20000 + RANDOM % 20000))
$BIN --skills skills --policy $dir/policy.yaml serve --listen 127.0.0.1:$port --tokens $dir/tokens 2>$dir/serve.log & pid=$!
until curl -sf http://127.0.0.1:$port/readyz >/dev/null; do sleep 0.1; done
url=http://127.0.0.1:$port; auth="Authorization: Bearer $tok"
ms() { echo $(( ($2 - $1) / 1000000 )); }
up=0; first=0
for i in $(seq 1 $N); do
  mkdir -p $dir/s/bench-up/scripts
  printf -- '---\nname: bench-up\ndescription: Bench. Use it to time uploads.\n---\nRun scripts/ok.py.\n' > $dir/s/bench-up/SKILL.md
  echo "print('ok $i')" > $dir/s/bench-up/scripts/ok.py
  tar -C $dir/s -cf $dir/up.tar bench-up
  t0=$(date +%s%N)
  digest=$(curl -sf -H "$auth" -H 'Content-Type: application/x-tar' --data-binary @$dir/up.tar $url/v1/skills | sed -n 's/.*"digest": "\(sha256:[0-9a-f]*\)".*/\1/p')
  t1=$(date +%s%N)
  curl -sf -H "$auth" -d '{"script": "scripts/ok.py"}' "$url/v1/skills/bench-up@$digest/run" | grep -q "ok $i"
  t2=$(date +%s%N)
  up=$((up + t1 - t0)); first=$((first + t2 - t1))
done
# Runs of an operator skill, each with other arguments (cache misses),
# then the same request N times (cache hits): p50 of each.
p50() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for i in $(seq 1 $N); do
  t0=$(date +%s%N); curl -sf -H "$auth" -d '{"script": "scripts/echo.py", "args": {"i": '$i'}}' $url/v1/skills/hello/run >/dev/null; t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 ))
done | p50 > $dir/run.p50
curl -sf -H "$auth" -d '{"script": "scripts/echo.py", "args": {"i": 0}}' $url/v1/skills/hello/run >/dev/null
for i in $(seq 1 $N); do
  t0=$(date +%s%N); curl -sf -H "$auth" -d '{"script": "scripts/echo.py", "args": {"i": 0}}' $url/v1/skills/hello/run | grep -q '"cache": "hit"'; t1=$(date +%s%N)
  echo $(( (t1 - t0) * 1000 / 1000000 ))
done | p50 > $dir/hit.p50
echo "upload (POST /v1/skills, 3-file skill): $((up / N / 1000000)) ms mean of $N"
echo "first run of the new version, pinned by digest: $((first / N / 1000000)) ms mean of $N"
echo "upload to first run: $(((up + first) / N / 1000000)) ms mean of $N"
echo "run of an operator skill (hello), cache miss: p50 $(cat $dir/run.p50) ms of $N"
echo "the same request answered from the result cache: p50 $(cat $dir/hit.p50) us of $N"
