#!/usr/bin/env bash
# Issue 31: the shipped model fine-tuned with opinion conditioning on rating-balanced Yelp pairs,
# with the recipe (`denoisesum fit --from`). Run from the repository root (a worktree of 6169a6a);
# part-14 and part-15, the opinion sets' shards, are never read.
set -euo pipefail
OMP_NUM_THREADS=2 .venv/bin/denoisesum fit ../shared/data/yelp/corpus/part-0{0,1,2,3}.jsonl.xz \
  --from denoisesum-yelp --noise-lm lms/bilm-yelp -o runs/opinion-fit \
  --preset cpu --budget 0.9 --dev ../shared/data/yelp/meansum_dev.jsonl \
  --set workers=2 --set synthesize.pairs=12000 --set synthesize.balance_ratings=true \
  --set train.model.opinion=true --set train.train.opinion_lr=0.01 \
  --set train.train.threads=2 --set train.train.eval_every=250 --set train.train.dev_entities=50 \
  --set decode.dev_entities=50
# the last checkpoint beside the kept one (dev ROUGE kept step 500)
mkdir -p runs/opinion-model-last
cp runs/opinion-fit/{config.json,vocab.json,rating.npz,rating-report.json} runs/opinion-model-last/
cp runs/opinion-fit/work/train/checkpoints/step-000001284/model.safetensors runs/opinion-model-last/
