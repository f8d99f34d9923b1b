#!/usr/bin/env bash
# The shipped Yelp model: one `denoisesum fit` call (every stage of the chain, each skipped when
# done, resumed when cut off, refused when its settings changed), then the comparisons fit does
# not make. docs/results/yelp.md is written from the run by scripts/report_yelp.py.
#   fit   tokenize, synthetic pairs (noised by $NOISE_LM), topics, the summarizer (started from
#         $INIT_LM, selected on dev ROUGE), the decoding chosen on dev (min_length and the levers
#         of $CONFIG's [decode.levers]), the export: the model at RUN_ROOT's root, every stage
#         under RUN_ROOT/work, fit-report.json (stages and wall times)
#   compare  dev summaries of this model and of $PREVIOUS (the packaged default, made once per
#         run, before any SHIP=1 replaces what the name means) in RUN_ROOT/yelp/
#   test  named on its own (STAGES=test), once dev says the model is the one to ship: the test
#         set scored once, and the leaderboard next to the released systems and $PREVIOUS
#   SHIP=1   the fp16 export that ships with the package (src/denoisesum/pretrained/denoisesum-yelp)
#
# Usage: bash scripts/train_yelp.sh [RUN_ROOT]      (default runs/yelp)
#   The shipped model is two calls (configs/fit-yelp-ema.toml says why): the LM-started model,
#   then weight averaging continuing it:
#     MAX_STEPS=2425 bash scripts/train_yelp.sh runs/yelp
#     INIT_MODEL=runs/yelp SEED=2 MAX_STEPS=1750 CONFIG=configs/fit-yelp-ema.toml \
#         bash scripts/train_yelp.sh runs/fit-yelp-ema
#     STAGES=test SHIP=1 INIT_MODEL=runs/yelp SEED=2 MAX_STEPS=1750 \
#         CONFIG=configs/fit-yelp-ema.toml bash scripts/train_yelp.sh runs/fit-yelp-ema
#   nohup bash scripts/train_yelp.sh runs/yelp > runs/yelp.log 2>&1 &
#   python -m scripts.report_yelp runs/yelp --markdown docs/results/yelp.md
# Settings (environment): CONFIG (configs/fit-yelp.toml; configs/fit-yelp-third-person.toml for
# third-person training pairs), TRAIN_MINUTES (0: until max_steps; else the summarizer's training
# time in all: a later call with more minutes continues it from its checkpoint), MAX_STEPS (the
# config's; also a limit: changed later, training continues or stops there), PAIRS (the
# config's), NOISE_LM (lms/bilm-yelp; trained by scripts/train_bilm_yelp.sh when missing),
# INIT_LM (lms/bilm-yelp-256; when missing, fit trains one with the cpu preset's sizes),
# INIT_MODEL (continue from a trained summarizer of the same sizes instead of the LM, e.g. the
# packaged model; its vocabulary, a fresh optimizer) with SEED (1: another one for a
# continuation, so it does not see the pairs in the order the first run saw them), STAGES
# (fit,compare; and test), SHIP (0), PREVIOUS (denoisesum-yelp), DENOISESUM_DATA (../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
DATA=${DENOISESUM_DATA:-../shared/data}
ROOT=${1:-runs/yelp}
CONFIG=${CONFIG:-configs/fit-yelp.toml}
NOISE_LM=${NOISE_LM:-lms/bilm-yelp}
INIT_LM=${INIT_LM:-lms/bilm-yelp-256}
STAGES=${STAGES:-fit,compare}  # test is left out unless named: scored once, for a model to ship
SHIP=${SHIP:-0}
PREVIOUS=${PREVIOUS:-denoisesum-yelp}
SHIP_DIR=src/denoisesum/pretrained/denoisesum-yelp  # the default model, package data
DEV="$DATA/yelp/meansum_dev.jsonl"
TEST="$DATA/yelp/meansum_test.jsonl"
[ -d "$DATA/yelp/corpus" ] || { echo "no Yelp corpus under $DATA (set DENOISESUM_DATA)"; exit 1; }
OUT="$ROOT/yelp"  # what fit does not make: summaries to compare, the leaderboard
mkdir -p "$OUT"
TIMES="$OUT/stage-seconds.tsv"

stage() {  # stage NAME COMMAND...: run it if NAME is in $STAGES, append its wall time to $TIMES
  local name=$1 start
  shift
  case ",$STAGES," in *",$name,"*) ;; *) echo "== $name: skipped (not in STAGES)"; return 0 ;; esac
  echo "== $name: $*"
  start=$(date +%s)
  "$@"
  printf '%s\t%s\n' "$name" "$(( $(date +%s) - start ))" >> "$TIMES"
}

[ -f "$NOISE_LM/model.safetensors" ] || stage fit bash scripts/train_bilm_yelp.sh "$NOISE_LM" \
  $([ -f "$NOISE_LM/checkpoints/LATEST" ] && echo --resume)
FIT=(--preset cpu --config "$CONFIG" --noise-lm "$NOISE_LM" --dev "$DEV")
[ -f "$INIT_LM/model.safetensors" ] && FIT+=(--lm "$INIT_LM")
[ -z "${PAIRS:-}" ] || FIT+=(--set "synthesize.pairs=$PAIRS")
[ "${TRAIN_MINUTES:-0}" = 0 ] || FIT+=(--set "train.train.max_minutes=$TRAIN_MINUTES")
[ -z "${MAX_STEPS:-}" ] || FIT+=(--set "train.train.max_steps=$MAX_STEPS")
[ -z "${INIT_MODEL:-}" ] || FIT+=(--set "train.train.init_model=\"$INIT_MODEL\"")
[ -z "${SEED:-}" ] || FIT+=(--set "train.train.seed=$SEED")
stage fit denoisesum fit "$DATA"/yelp/corpus/part-*.jsonl.xz -o "$ROOT" "${FIT[@]}"

stage compare denoisesum summarize "$DEV" --model "$ROOT" -o "$OUT/dev.new.jsonl"
for sets in dev:"$DEV" test:"$TEST"; do  # once per run, see PREVIOUS
  [ -f "$OUT/${sets%%:*}.previous.jsonl" ] || stage compare denoisesum summarize "${sets#*:}" \
    --model "$PREVIOUS" -o "$OUT/${sets%%:*}.previous.jsonl"
done
stage test denoisesum summarize "$TEST" --model "$ROOT" -o "$OUT/test.new.jsonl"
stage test denoisesum leaderboard "$TEST" --systems "$DATA/yelp/systems" \
  --baselines lexrank,clustroid,oracle -o "$OUT/leaderboard.md" \
  --predictions "denoisesum-new=$OUT/test.new.jsonl" \
  --predictions "denoisesum-previous=$OUT/test.previous.jsonl"
if [ "$SHIP" = 1 ]; then
  python scripts/export_model.py "$ROOT" "$SHIP_DIR" --fp16
fi
cat "$TIMES"
