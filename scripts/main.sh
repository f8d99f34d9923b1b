#!/usr/bin/env bash
# The main job, on the bundled examples: install, describe the corpus, train a small cloze LM on
# it and show its guesses. (Summarizing review sets arrives with the summarizer; see README.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== corpus statistics"
denoisesum stats examples/corpus.jsonl
echo "== tokenizer"
denoisesum tokenize "The ramen was great.The staff can't do enough for you :)"
echo "== training a small bidirectional LM on the examples (about a minute)"
out=$(mktemp -d)
denoisesum train-lm examples/corpus.jsonl -o "$out/lm" --max-steps 300 \
  --set model.embed_dim=32 --set model.hidden_dim=64 --set model.proj_dim=32 \
  --set model.cutoffs=[100] --set vocab.min_count=1 --set train.batch_tokens=512 \
  --set train.lr=0.01 --set train.warmup_steps=20 --set train.heldout_percent=0 \
  --set train.eval_every=50 2>/dev/null
echo "== cloze guesses"
denoisesum cloze "$out/lm" "the staff are _ and the prices are _ ."
rm -rf "$out"
