#!/usr/bin/env bash
# Runs the e2e suite RUNS times in a row (default 20), as issue 12 asks, and stops at the first failure.
# One line per run in OUT/summary (default build/e2e-loop): its exit code, seconds and pytest's last line. -rP keeps
# the passing drills' figure lines ("drill <name> recovery_s=...") in OUT/run<N>.log; a failing run's tmp dir (the
# components' logs) stays in OUT/run<N>. The commit and the hash of src/ and tests/e2e/ head the summary, so runs
# of several sessions can be counted together only when they tested the same code. OUT/figures.md has the drills'
# figures over this loop's runs so far (hack/drill_figures.py), brought up to date after each run.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20}
OUT=${OUT:-build/e2e-loop}
mkdir -p "$OUT"
rm -f "$OUT"/run*.log  # a loop's figures are of its own runs; the summary keeps the earlier loops' lines
tested=$(git rev-parse HEAD:src):$(git rev-parse HEAD:tests/e2e)
dirty=$(git status --porcelain -- src tests/e2e | head -1)
echo "commit $(git rev-parse --short HEAD) trees $tested${dirty:+ (uncommitted changes)} $(date -u +%FT%TZ)" >> "$OUT/summary"
for i in $(seq 1 "$RUNS"); do
  start=$(date +%s)
  rc=0
  .venv/bin/pytest -q -rP --durations=30 -p no:cacheprovider --basetemp="$OUT/run$i" tests/e2e > "$OUT/run$i.log" 2>&1 || rc=$?
  echo "run $i rc=$rc seconds=$(( $(date +%s) - start )) $(tail -1 "$OUT/run$i.log") $(date -u +%H:%MZ)" >> "$OUT/summary"
  .venv/bin/python hack/drill_figures.py "$OUT" > "$OUT/figures.md" || true
  if [ "$rc" -ne 0 ]; then
    echo "run $i failed: $OUT/run$i.log" >&2
    exit "$rc"
  fi
  rm -rf "$OUT/run$i"
done
echo "$RUNS runs in a row passed: $OUT/summary"
