"""Decoding speed of one model exported fp32 and fp16, side by side (docs/results/fit-fp16.md).

    OMP_NUM_THREADS=1 python docs/results/fit-fp16/speed.py FP32 FP16 REVIEW_SETS [N] [ROUNDS]

Loads both, warms each up, then decodes the first N review sets (default 100) with each in turn,
ROUNDS rounds (default 4; the order alternates, so neither always runs first), one torch
thread; prints sets/s per round, the fp16 / fp32 ratio per round and their median.
"""

import json
import statistics
import sys
import time

import torch

from denoisesum import Summarizer

torch.set_num_threads(1)
fp32, fp16, path = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 100
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 4
with open(path, encoding="utf-8") as handle:
    reviews = [json.loads(line)["reviews"] for line in handle][:n]
models = {"fp32": Summarizer.from_pretrained(fp32), "fp16": Summarizer.from_pretrained(fp16)}
for model in models.values():
    model.summarize_batch(reviews[:4])
rates: dict[str, list[float]] = {name: [] for name in models}
for r in range(rounds):
    for name in ("fp32", "fp16")[:: 1 if r % 2 == 0 else -1]:
        model = models[name]
        start = time.perf_counter()
        model.summarize_batch(reviews)
        rates[name].append(len(reviews) / (time.perf_counter() - start))
for name, values in rates.items():
    print(name, " ".join(f"{v:.2f}" for v in values), "sets/s")
ratios = [half / full for half, full in zip(rates["fp16"], rates["fp32"], strict=True)]
print("fp16 / fp32 per round:", " ".join(f"{r:.2f}" for r in ratios))
print(f"median {statistics.median(ratios):.2f}")
