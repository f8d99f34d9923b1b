#!/usr/bin/env bash
# The main job: install, then summarize the bundled example review sets with the default model
# (denoisesum-yelp, trained on Yelp by scripts/train_yelp.sh, installed with the package from
# src/denoisesum/pretrained/denoisesum-yelp), showing for every summary sentence the reviews that
# support it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== summarizing examples/review_sets.jsonl with the default model"
denoisesum summarize examples/review_sets.jsonl --text --explain
