#!/usr/bin/env bash
# The GPU tier (tests/gpu and the examples' tests) in parallel shards, on the GPU machine.
# Usage (from the repository root): bash benchmarks/gpu_tier.sh [SHARDS] [pytest args...]
# Each shard is one pytest process over every SHARDS-th test file (largest first, so the shards
# get even work; most of the tier's time is compiling, which runs on the host's cores); logs
# under $OUT (or /tmp/out): tier-<i>.log per shard and tier.txt, the shards' summary lines.
# Uses the python3 and NumPy of the machine (PYTHONPATH set by the caller where needed).
set -u
shards=${1:-4}; shift || true
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
files=$(ls -S tests/gpu/test_*.py; echo tests/unit/test_examples.py)
pids=()
for ((i = 0; i < shards; i++)); do
  mine=$(echo "$files" | awk -v n="$shards" -v i="$i" 'NR % n == i')
  # shellcheck disable=SC2086
  python3 -m pytest -q -p no:cacheprovider $mine "$@" > "$OUT/tier-$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
for ((i = 0; i < shards; i++)); do
  echo "shard $i: $(tail -n 1 "$OUT/tier-$i.log")"
done | tee "$OUT/tier.txt"
grep -ah "^FAILED\|^ERROR" "$OUT"/tier-*.log | tee -a "$OUT/tier.txt"   # -a: a log may hold a NUL byte
exit $rc
