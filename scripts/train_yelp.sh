#!/usr/bin/env bash
# The whole DenoiseSum chain on the shared Yelp corpus (docs/results/yelp.md records the wall time
# of each stage). Every stage resumes or is skipped when done: run the same command again after a
# crash, a Ctrl-C or the end of a session, and finished work is kept.
#   1. noising LM: models/bilm-yelp (384-unit LSTMs, docs/results/bilm.md; trained by
#      scripts/train_bilm_yelp.sh when $NOISE_LM is missing)
#   2. the LM that starts the summarizer, with the summarizer's sizes (configs/bilm-yelp-256.toml:
#      256-d embeddings, 256-unit LSTMs), so train.init_lm copies the embeddings and all four LSTMs
#   3. synthetic pairs: segment + document noise                  (denoisesum synthesize)
#   4. the LDA topic model of the discriminator                   (denoisesum topics)
#   5. the summarizer ($CONFIG: configs/denoisesum-yelp-lm256.toml), selected on dev ROUGE
#   6. decoding chosen on the dev set (scripts/tune_decoding.py: length and n-gram blocking;
#      scripts/decoding_levers.py --write best: voice, repetition, restatement; reranking is
#      measured, never chosen: it costs 4x)
#   7. compare: dev summaries of this model and of $PREVIOUS (the packaged default), then, once
#      dev says this model is the one to ship, the test set scored once (leaderboard next to the
#      released systems and the previous default)
#   8. the fp16 export that ships with the package, src/denoisesum/pretrained/denoisesum-yelp
#      (scripts/export_model.py), SHIP=1 only; docs/results/yelp.md is then
#      `python scripts/report_yelp.py RUN_ROOT --markdown docs/results/yelp.md`
#
# Usage: bash scripts/train_yelp.sh [RUN_ROOT]      (default runs/yelp)
#   nohup bash scripts/train_yelp.sh runs/yelp > runs/yelp.log 2>&1 &
# Settings (environment): PAIRS (100000, the paper's), TRAIN_MINUTES (0: until max_steps; a
# session budget otherwise: the run stops, saves, and the next call resumes it), CONFIG, NOISE_LM
# (models/bilm-yelp), INIT_LM (models/bilm-yelp-256 if shipped, else $ROOT/bilm-256, trained
# unless it exists), DENOISESUM_DATA
# (../shared/data), SYNTH_CONFIG (configs/synth-yelp.toml; configs/synth-yelp-third-person.toml:
# candidate summaries without the first person singular), STAGES (lm,synthesize,topics,train,tune,compare; and test, named on its own
# once dev says the model is the one to ship), SHIP (0; 1: export to
# src/denoisesum/pretrained/denoisesum-yelp, the default model installed with the package),
# PREVIOUS (denoisesum-yelp: the model this run is compared with, by name or path; its dev and
# test summaries are made once per run, before any SHIP=1 replaces what the name means), LEVERS (the
# decoding levers measured on dev, each against the model's own decoding), MIN_LENGTHS (55,65,75:
# the min_length values searched on dev; empty: the training config's), INIT_MODEL (continue
# from a trained summarizer's weights instead of the LM, e.g. the packaged model a shorter session
# shipped, once it has the sizes of CONFIG, i.e. was itself trained with configs/denoisesum-yelp-
# lm256.toml: its own vocabulary, fresh optimizer) with SEED (1; another seed for a continuation,
# so it does not see the pairs again in the order the first run saw them).
# A run that stops at TRAIN_MINUTES resumes from its checkpoint when called again (same ROOT).
# Across sessions, where runs/ is gone, the pairs are made again (the same shards, seed 1) and
# INIT_MODEL carries the weights on.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
DATA=${DENOISESUM_DATA:-../shared/data}
ROOT=${1:-runs/yelp}
PAIRS=${PAIRS:-100000}
TRAIN_MINUTES=${TRAIN_MINUTES:-0}
CONFIG=${CONFIG:-configs/denoisesum-yelp-lm256.toml}
SYNTH_CONFIG=${SYNTH_CONFIG:-configs/synth-yelp.toml}
NOISE_LM=${NOISE_LM:-models/bilm-yelp}
# the shipped 256-unit LM when there is one (its training is the slowest stage on a CPU)
INIT_LM=${INIT_LM:-$([ -f models/bilm-yelp-256/model.safetensors ] && echo models/bilm-yelp-256 \
  || echo "$ROOT/bilm-256")}
# test is left out unless named: the test set is scored once, for a model dev says to ship
STAGES=${STAGES:-lm,synthesize,topics,train,tune,compare}
SHIP=${SHIP:-0}
PREVIOUS=${PREVIOUS:-denoisesum-yelp}
MIN_LENGTHS=${MIN_LENGTHS-55,65,75}  # the dev search of min_length; empty: keep the config's
# against the decoding the model trained with (third person, in-sentence blocking; its config)
LEVERS=${LEVERS:-"restate-0.5:restate_overlap=0.5;restate-0.75:restate_overlap=0.75;\
first-person:block_first_person=false;sentence-repeats:no_repeat_in_sentence=false;\
word-limit-2:max_word_repeats=2;rerank-subsets3:rerank=true,subsets=3"}
SHIP_DIR=src/denoisesum/pretrained/denoisesum-yelp  # the default model, package data
CORPUS="$DATA/yelp/corpus/part-*.jsonl.xz"
DEV="$DATA/yelp/meansum_dev.jsonl"
[ -d "$DATA/yelp/corpus" ] || { echo "no Yelp corpus under $DATA (set DENOISESUM_DATA)"; exit 1; }
mkdir -p "$ROOT"
TIMES="$ROOT/stage-seconds.tsv"

stage() {  # stage NAME COMMAND...: run it if NAME is in $STAGES, append its wall time to $TIMES
  local name=$1 start
  shift
  case ",$STAGES," in *",$name,"*) ;; *) echo "== $name: skipped (not in STAGES)"; return 0 ;; esac
  echo "== $name: $*"
  start=$(date +%s)
  "$@"
  printf '%s\t%s\n' "$name" "$(( $(date +%s) - start ))" >> "$TIMES"
}

resume_flag() {  # --resume when the run directory has a checkpoint to continue from
  [ -f "$1/checkpoints/LATEST" ] && echo --resume || true
}

[ -f "$NOISE_LM/model.safetensors" ] ||
  stage lm bash scripts/train_bilm_yelp.sh "$NOISE_LM" $(resume_flag "$NOISE_LM")
# shellcheck disable=SC2046
[ -f "$INIT_LM/model.safetensors" ] ||
  stage lm denoisesum train-lm "$CORPUS" --output "$INIT_LM" --config configs/bilm-yelp-256.toml \
    --cache "$ROOT/encoded" $(resume_flag "$INIT_LM")
stage synthesize denoisesum synthesize "$CORPUS" --lm "$NOISE_LM" -o "$ROOT/pairs" \
  --config "$SYNTH_CONFIG" --pairs "$PAIRS" --cache "$ROOT/encoded"
[ -f "$ROOT/topics/topics.json" ] ||
  stage topics denoisesum topics "$CORPUS" -o "$ROOT/topics" --topics 100 --sample 50000
if [ -n "${INIT_MODEL:-}" ]; then
  START=(--set 'train.init_lm=""' --set "train.init_model=\"$INIT_MODEL\"")
else
  START=(--vocab "$INIT_LM/vocab.json" --set "train.init_lm=\"$INIT_LM\"")
fi
# shellcheck disable=SC2046
stage train denoisesum train "$ROOT/pairs" -o "$ROOT/model" --config "$CONFIG" \
  --topics "$ROOT/topics" "${START[@]}" --set "train.seed=${SEED:-1}" \
  --set "train.max_minutes=$TRAIN_MINUTES" $(resume_flag "$ROOT/model")
[ -z "$MIN_LENGTHS" ] || stage tune python scripts/tune_decoding.py "$ROOT/model" "$DEV" \
  --min-lengths "$MIN_LENGTHS" --no-repeat-ngrams 2 --write --markdown "$ROOT/decoding-dev.md"
# --force: a later call of a resumed run measures its new checkpoint, not the stored rows
stage tune python scripts/decoding_levers.py "$ROOT/model" "$DEV" --variants "$LEVERS" \
  --json "$ROOT/levers-dev.json" --markdown "$ROOT/levers-dev.md" --write best --force
stage compare denoisesum summarize "$DEV" --model "$ROOT/model" -o "$ROOT/dev.new.jsonl"
for sets in dev:"$DEV" test:"$DATA/yelp/meansum_test.jsonl"; do  # once per run, see PREVIOUS
  [ -f "$ROOT/${sets%%:*}.previous.jsonl" ] || stage compare denoisesum summarize "${sets#*:}" \
    --model "$PREVIOUS" -o "$ROOT/${sets%%:*}.previous.jsonl"
done
stage test denoisesum summarize "$DATA/yelp/meansum_test.jsonl" --model "$ROOT/model" \
  -o "$ROOT/test.new.jsonl"
stage test denoisesum leaderboard "$DATA/yelp/meansum_test.jsonl" \
  --systems "$DATA/yelp/systems" --baselines lexrank,clustroid,oracle -o "$ROOT/leaderboard.md" \
  --predictions "denoisesum-new=$ROOT/test.new.jsonl" \
  --predictions "denoisesum-previous=$ROOT/test.previous.jsonl"
if [ "$SHIP" = 1 ]; then
  python scripts/export_model.py "$ROOT/model" "$SHIP_DIR" --fp16
fi
cat "$TIMES"
