#!/usr/bin/env bash
# The measured MBPP table (docs/evaluation.md): six pipelines, built-in 0.5B, greedy, n=1, on the first
# MBPP test problems, grown in rounds (2, 5, 10, 20 ... problems) so that every pipeline always covers the same problems.
# Resumable: a killed run continues where it stopped. LIMITS="5 10" runs only those rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/mbpp/mbpp.jsonl}
OUT=${OUT:-runs/mbpp-table}
mkdir -p "$OUT"
PIPES="direct cot scot planner_coder reflexion mapcoder"
for limit in ${LIMITS:-2 5 10 20 30 40 50}; do
  for p in $PIPES; do
    echo "$(date -u +%T) limit=$limit $p"
    corecode eval --benchmark mbpp --data-path "$DATA" --limit "$limit" --n 1 --temperature 0 \
      --pipeline "$p" --out "$OUT/$p" --no-progress >> "$OUT/$p.log" 2>&1
  done
  corecode report $(for p in $PIPES; do echo "$OUT/$p"; done) > "$OUT/table-$limit.md"
  echo "$(date -u +%T) table-$limit.md done"
done
