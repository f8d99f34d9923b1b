"""Speed of the opinions method: against the DenoiseSum method on review sets of 8 (the MeanSum
dev sets, in the same run), and as one entity's reviews grow (8, 100, 1,000, 10,000 reviews
of part-15 of the Yelp corpus, a shard no model was trained on), with its peak Python memory.

    python -m benchmarks.opinions_speed [--sets 24] [--out docs/results/opinions-speed.json]

Times are the best of `--repeat` runs (the host is shared: the best is the least disturbed);
the ratios are of times measured in this run.
"""

from __future__ import annotations

import argparse
import json
import lzma
import time
import tracemalloc
from pathlib import Path

from benchmarks.common import cpu_name, emit
from denoisesum.summarizer import Summarizer

DATA = Path("../shared/data/yelp")
SIZES = (8, 100, 1_000, 10_000)


def best_time(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_memory(run) -> int:
    """Peak bytes Python allocated while `run` ran."""
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def dev_sets(count: int) -> list[list[str]]:
    with open(DATA / "meansum_dev.jsonl") as handle:
        return [json.loads(line)["reviews"] for line in handle][:count]


def corpus_reviews(count: int) -> list[str]:
    texts = []
    with lzma.open(DATA / "corpus" / "part-15.jsonl.xz", "rt") as handle:
        for line in handle:
            texts.append(json.loads(line)["text"])
            if len(texts) >= count:
                break
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=24, help="dev sets of 8 timed per method")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="JSON results")
    args = parser.parse_args()
    summarizer = Summarizer.from_pretrained(device="cpu")
    sets = dev_sets(args.sets)
    summarizer.summarize_results(sets[:1], method="denoisesum")  # first call: lazy set-up
    summarizer.summarize_results(sets[:1], method="opinions")
    eight = {
        m: best_time(lambda m=m: summarizer.summarize_results(sets, method=m), args.repeat)
        for m in ("denoisesum", "opinions")
    }
    reviews = corpus_reviews(max(SIZES))
    growth = {}
    for n in SIZES:

        def run(n=n):
            return summarizer.summarize_results([reviews[:n]], method="opinions")

        growth[n] = {
            "seconds": best_time(run, args.repeat if n < 10_000 else 1),
            "peak_mb": peak_memory(run) / 2**20,
        }
    result = {
        "machine": cpu_name(),
        "sets_of_8": {
            "sets": len(sets),
            **{f"{m}_seconds": s for m, s in eight.items()},
            **{f"{m}_sets_per_second": len(sets) / s for m, s in eight.items()},
            "opinions_over_denoisesum_throughput": eight["denoisesum"] / eight["opinions"],
        },
        "growth": {
            str(n): {**g, "times_8": g["seconds"] / growth[8]["seconds"]} for n, g in growth.items()
        },
    }
    emit(json.dumps(result, indent=2) + "\n", args.out)


if __name__ == "__main__":
    main()
