#!/bin/bash
# The service benchmark of service.md's top section: the release against this checkout (two
# worker processes, then one), in turn, ROUNDS times. Usage:
#   BASE=../denoisesum-base CHECKOUT=. bash docs/results/service/bench.sh TAG ROUNDS
# BASE: a worktree of the release (git worktree add ../denoisesum-base 597967c).
TAG=$1; R=${2:-1}; OUT=$(pwd)/docs/results/service
BASE=$(cd "${BASE:?a worktree of the release}" && pwd); CHECKOUT=$(cd "${CHECKOUT:-.}" && pwd)
for r in $(seq 1 "$R"); do
  (cd "$BASE" && PYTHONPATH="$BASE/src" python benchmarks/service_load.py --clients 8 --duration 45 --output "$OUT/$TAG-release-r$r.json")
  (cd "$CHECKOUT" && PYTHONPATH="$CHECKOUT/src" python benchmarks/service_load.py --clients 8 --duration 45 --workers 2 --output "$OUT/$TAG-two-r$r.json")
  (cd "$CHECKOUT" && PYTHONPATH="$CHECKOUT/src" python benchmarks/service_load.py --clients 8 --duration 45 --output "$OUT/$TAG-one-r$r.json")
done
