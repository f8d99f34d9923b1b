#!/usr/bin/env bash
# Train the bidirectional LM on the shared Yelp corpus (docs/results/bilm.md).
# Usage: bash scripts/train_bilm_yelp.sh [RUN_DIR] [extra train-lm options, e.g. --resume]
# Runs in the foreground; for a background run:
#   nohup bash scripts/train_bilm_yelp.sh runs/bilm-yelp > runs/bilm-yelp.log 2>&1 &
set -euo pipefail
DATA=${DENOISESUM_DATA:-../shared/data}
RUN=${1:-runs/bilm-yelp}
shift || true
[ -d "$DATA/yelp/corpus" ] || { echo "no Yelp corpus under $DATA (set DENOISESUM_DATA)"; exit 1; }
start=$(date +%s)
denoisesum train-lm "$DATA/yelp/corpus/part-*.jsonl.xz" --output "$RUN" \
  --config configs/bilm-yelp.toml "$@"
echo "wall seconds: $(( $(date +%s) - start ))"
