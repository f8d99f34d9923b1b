#!/usr/bin/env bash
# `denoisesum fit` on one shard of the Yelp corpus (57,586 reviews of 1,764 businesses), twice:
# with --dev (model selection and decoding length on the first 50 MeanSum dev businesses) and
# without (fully unsupervised), the second reusing the first's LM so that both summarizers get the
# same training time; then docs/results/fit.md (scripts/report_fit.py scores both on the other
# 50 dev businesses).
# Usage: bash scripts/fit_yelp_slice.sh [ROOT]   (BUDGET hours, default 0.25; PAIRS, default 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
DATA=${DENOISESUM_DATA:-../shared/data}
ROOT=${1:-runs/fit-slice}
BUDGET=${BUDGET:-0.25}
PAIRS=${PAIRS:-5000}
SLICE="$DATA/yelp/corpus/part-00.jsonl.xz"
DEV="$DATA/yelp/meansum_dev.jsonl"
# cpu-small gives the LM 20% of the budget; with --lm the summarizer gets all of it
SUMMARIZER_BUDGET=$(python -c "print(round($BUDGET * 0.8, 4))")
denoisesum fit "$SLICE" -o "$ROOT/with-dev" --preset cpu-small --budget "$BUDGET" --dev "$DEV" \
  --set synthesize.pairs="$PAIRS" --set train.train.dev_entities=50
denoisesum fit "$SLICE" -o "$ROOT/no-dev" --preset cpu-small --budget "$SUMMARIZER_BUDGET" \
  --lm "$ROOT/with-dev/work/lm" --set synthesize.pairs="$PAIRS"
python -m scripts.report_fit "$ROOT/with-dev" "$ROOT/no-dev" --dev "$DEV" --skip 50 \
  --command "BUDGET=$BUDGET PAIRS=$PAIRS bash scripts/fit_yelp_slice.sh $ROOT" \
  --markdown docs/results/fit.md
