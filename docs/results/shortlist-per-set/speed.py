"""Bulk decoding time of the MeanSum dev sets (100 review sets, batches of 8, one torch thread,
their stars given) with the code on PYTHONPATH; run alternately with the release before the
change and after it (speed.sh):  python docs/results/shortlist-per-set/speed.py LABEL"""

import json
import sys
import time
from pathlib import Path

import torch

from denoisesum import Summarizer

torch.set_num_threads(1)
lines = Path("../shared/data/yelp/meansum_dev.jsonl").read_text().splitlines()
sets = [json.loads(line) for line in lines]
summarizer = Summarizer.from_pretrained("denoisesum-yelp")
summarizer.summarize_batch([sets[0]["reviews"]], warn=False)  # warm-up
start = time.perf_counter()
summarizer.summarize_batch(
    [s["reviews"] for s in sets], warn=False, ratings=[s.get("ratings") for s in sets]
)
seconds = time.perf_counter() - start
print(json.dumps({"code": sys.argv[1], "sets": len(sets), "seconds": round(seconds, 2)}))
