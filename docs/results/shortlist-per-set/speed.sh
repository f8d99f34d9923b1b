#!/bin/bash
# Before (BEFORE: a worktree of the commit before the change) and after (this checkout), in
# turn, ROUNDS times:  BEFORE=../denoisesum-before bash docs/results/shortlist-per-set/speed.sh 3
R=${1:-3}; BEFORE=$(cd "${BEFORE:?a worktree of the commit before}" && pwd)
for r in $(seq 1 "$R"); do
  PYTHONPATH="$BEFORE/src" python docs/results/shortlist-per-set/speed.py before
  PYTHONPATH="$(pwd)/src" python docs/results/shortlist-per-set/speed.py after
done
