"""How many review sets get another summary decoded alone than decoded in one batch with the
others: the first 60 held-out hotel sets of runs/adapt-draws (python -m lab.studies.adaptation
prepare --out runs/adapt-draws --draws 12), their stars given, one torch thread, the installed
denoisesum-yelp with the code on PYTHONPATH:  python docs/results/shortlist-per-set/alone.py"""

import json
from pathlib import Path

import torch

from denoisesum import Summarizer

torch.set_num_threads(1)
lines = Path("runs/adapt-draws/hotels-eval.jsonl").read_text().splitlines()
sets = [json.loads(line) for line in lines][:60]
summarizer = Summarizer.from_pretrained("denoisesum-yelp")
reviews, ratings = [s["reviews"] for s in sets], [s["ratings"] for s in sets]
together = summarizer.summarize_batch(reviews, batch_size=len(sets), warn=False, ratings=ratings)
alone = [
    summarizer.summarize_batch([r], warn=False, ratings=[s])[0]
    for r, s in zip(reviews, ratings, strict=True)
]
differ = [i for i, (a, b) in enumerate(zip(together, alone, strict=True)) if a != b]
print(json.dumps({"sets": len(sets), "differ": len(differ), "which": differ}))
