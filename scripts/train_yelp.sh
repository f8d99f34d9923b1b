#!/usr/bin/env bash
# The whole DenoiseSum chain on the shared Yelp corpus, sized for a 2-core CPU machine
# (docs/results/yelp.md records the wall time of each stage):
#   1. the bidirectional LM (scripts/train_bilm_yelp.sh; skipped when $LM already holds one)
#   2. synthetic pairs: segment + document noise      (denoisesum synthesize)
#   3. the LDA topic model of the discriminator       (denoisesum topics)
#   4. the summarizer, started from the LM's embeddings, selected on dev ROUGE (denoisesum train)
#   5. decoding length and n-gram blocking chosen on the dev set (scripts/tune_decoding.py), then test-set
#      evaluation next to the released systems (denoisesum leaderboard)
#   6. the fp16 export that ships in models/denoisesum-yelp (scripts/export_model.py)
# Every stage resumes: run the script again after a crash and finished work is kept.
#
# Usage: bash scripts/train_yelp.sh [RUN_ROOT]      (default runs/yelp)
#   nohup bash scripts/train_yelp.sh > runs/yelp.log 2>&1 &
# Settings (environment): PAIRS (20000; the paper's 100000 on a GPU machine), TRAIN_MINUTES (85),
# CONFIG (configs/denoisesum-yelp-cpu.toml; configs/denoisesum-yelp.toml for the paper's sizes),
# LM (models/bilm-yelp), DENOISESUM_DATA (../shared/data), SHIP (1: export to models/).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
DATA=${DENOISESUM_DATA:-../shared/data}
ROOT=${1:-runs/yelp}
PAIRS=${PAIRS:-20000}
TRAIN_MINUTES=${TRAIN_MINUTES:-85}
CONFIG=${CONFIG:-configs/denoisesum-yelp-cpu.toml}
LM=${LM:-models/bilm-yelp}
SHIP=${SHIP:-1}
CORPUS="$DATA/yelp/corpus/part-*.jsonl.xz"
[ -d "$DATA/yelp/corpus" ] || { echo "no Yelp corpus under $DATA (set DENOISESUM_DATA)"; exit 1; }
mkdir -p "$ROOT"
TIMES="$ROOT/stage-seconds.tsv"

stage() {  # stage NAME COMMAND...: run it, append its wall time to $TIMES
  local name=$1 start
  shift
  echo "== $name: $*"
  start=$(date +%s)
  "$@"
  printf '%s\t%s\n' "$name" "$(( $(date +%s) - start ))" >> "$TIMES"
}

resume_flag() {  # --resume when the run directory has a checkpoint to continue from
  [ -f "$1/checkpoints/LATEST" ] && echo --resume || true
}
if [ ! -f "$LM/model.safetensors" ]; then
  LM="$ROOT/bilm"
  stage lm bash scripts/train_bilm_yelp.sh "$LM" $(resume_flag "$LM")
fi
stage synthesize denoisesum synthesize "$CORPUS" --lm "$LM" -o "$ROOT/pairs" \
  --config configs/synth-yelp.toml --pairs "$PAIRS" --cache "$ROOT/encoded"
[ -f "$ROOT/topics/topics.json" ] ||
  stage topics denoisesum topics "$CORPUS" -o "$ROOT/topics" --topics 100 --sample 50000
# shellcheck disable=SC2046
stage train denoisesum train "$ROOT/pairs" -o "$ROOT/model" --config "$CONFIG" \
  --topics "$ROOT/topics" --vocab "$LM/vocab.json" --set "train.init_lm=\"$LM\"" \
  --max-minutes "$TRAIN_MINUTES" \
  $(resume_flag "$ROOT/model")
stage tune-decoding python scripts/tune_decoding.py "$ROOT/model" "$DATA/yelp/meansum_dev.jsonl" \
  --min-lengths 45,55,65,75 --no-repeat-ngrams 2,3 --write --markdown "$ROOT/decoding-dev.md"
stage summarize-test denoisesum summarize "$DATA/yelp/meansum_test.jsonl" --model "$ROOT/model" \
  -o "$ROOT/test.denoisesum.jsonl"
stage leaderboard denoisesum leaderboard "$DATA/yelp/meansum_test.jsonl" \
  --systems "$DATA/yelp/systems" --predictions "denoisesum-ours=$ROOT/test.denoisesum.jsonl" \
  --baselines lexrank,clustroid,oracle -o "$ROOT/leaderboard.md"
if [ "$SHIP" = 1 ]; then
  python scripts/export_model.py "$ROOT/model" models/denoisesum-yelp --fp16
fi
cat "$TIMES"
