#!/usr/bin/env bash
# From the worktree root (/work/denoisesum-run): topics, then the two fine-tunes side by side.
set -euo pipefail
D=../shared/data/yelp/corpus
PY="env PYTHONPATH=src /work/main/.venv/bin/python -m denoisesum.cli"
OMP_NUM_THREADS=2 $PY topics $D/part-01.jsonl.xz $D/part-02.jsonl.xz -o runs/mask/topics --topics 100 --sample 50000 --passes 2 --seed 1 > runs/mask/topics.log 2>&1
for run in control masked; do
  w=1.0; [ $run = masked ] && w=0.0
  OMP_NUM_THREADS=1 $PY train runs/mask/pairs -o runs/mask/$run --config runs/mask/train.toml \
    --topics runs/mask/topics --set train.unsupported_weight=$w > runs/mask/$run.log 2>&1 &
done
wait
