#!/bin/bash
# Times N runs of a trivial script with a read-only and with a writable workspace.
set -e
N=${N:-15}
root=$(mktemp -d); ws=$(mktemp -d); chmod 755 $root $ws
for n in ro rw; do
  mkdir -p $root/ws-$n/scripts
  tools=""; [ $n = rw ] && tools="allowed-tools: Write"
  printf -- "---\nname: ws-$n\ndescription: bench\n$tools\n---\n" > $root/ws-$n/SKILL.md
  echo "print('ok')" > $root/ws-$n/scripts/ok.py
done
for i in $(seq 1 20); do echo "file $i" > $ws/f$i.txt; done
for n in ro rw; do
  start=$(date +%s%N)
  for i in $(seq 1 $N); do "${SANDBOXRUN:-bin/sandboxrun}" --skills $root run --workspace $ws ws-$n scripts/ok.py >/dev/null; done
  end=$(date +%s%N)
  echo "$n: $(( (end-start)/N/1000000 )) ms per run (mean of $N)"
done
rm -rf $root $ws
