"""The machine's own speed second by second, with nothing of ours running: is it steady now?

    python -m lab.benchmarks.host_probe [--seconds 40] [--kind memory|compute|decode]
                                    [--output FILE]

One process per core (the CPUs this process may run on) repeats a fixed task and counts how
often it ran it in each second: `memory` copies a 100 MB array (GB/s: bytes read and written;
the decoders read their packed weights at every step), `compute` multiplies two 512 x 512
float32 matrices (GFLOP/s), `decode` summarizes the bundled examples with the default model on
one thread, as each of the service's workers decodes (passes/s). A virtual machine shares its
host's memory and last-level cache with other tenants, and its own cores do not show their
load. Reported: the seconds in which every process ran below `--slow` (0.8) of its own fast
rate (its 90th percentile second) at once, when the host slowed every core together, which
nothing of ours did while none ran (docs/results/service.md: what held the slowest requests).

Prints JSON (per process: the rate of each second, its median, fast rate and lowest; the slow
seconds) and writes it to `--output`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.common import percentile, system

COPY_BYTES = 100_000_000
MATMUL_N = 512
UNITS = {"memory": "GB/s", "compute": "GFLOP/s", "decode": "passes/s"}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "review_sets.jsonl"


def task(kind: str) -> tuple[Callable[[], object], float]:
    """The task one process repeats, and its work in the kind's unit."""
    if kind == "memory":
        a = np.ones(COPY_BYTES // 2, dtype=np.float16)
        b = np.empty_like(a)
        return (lambda: np.copyto(b, a)), 2 * COPY_BYTES / 1e9  # read and written
    if kind == "compute":
        a = np.ones((MATMUL_N, MATMUL_N), dtype=np.float32)
        b = np.empty_like(a)
        return (lambda: np.matmul(a, a, out=b)), 2 * MATMUL_N**3 / 1e9
    # the service's own work: the bundled examples summarized by the default model
    import torch

    from denoisesum import Summarizer
    from denoisesum.data.reviewsets import read_review_sets

    torch.set_num_threads(1)  # one core, as each of the service's workers
    summarizer = Summarizer.from_pretrained(device="cpu")
    sets = [s.reviews for s in read_review_sets(EXAMPLES)]
    return (lambda: [summarizer.summarize(reviews) for reviews in sets]), 1.0


def rates(kind: str, seconds: float) -> list[float]:
    """The task's rate in each whole second of `seconds`, in UNITS[kind]."""
    run, work = task(kind)
    run()  # (the first touches the pages and packs the model's weights: not the host's rate)
    found = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start, count = time.monotonic(), 0
        while time.monotonic() - start < 1.0:
            run()
            count += 1
        found.append(round(count * work / (time.monotonic() - start), 2))
    return found


def probe(kind: str, seconds: float, slow: float) -> dict:
    cores = len(os.sched_getaffinity(0))
    with multiprocessing.get_context("spawn").Pool(cores, initializer=_one_thread) as pool:
        each = pool.starmap(rates, [(kind, seconds)] * cores)
    return {
        "kind": kind,
        "unit": UNITS[kind],
        "processes": [
            {"per_second": r, "median": statistics.median(r), "fast": fast(r), "lowest": min(r)}
            for r in each
        ],
        "slow_below": slow,
        "slow_together_s": together_slow(each, slow),
        "machine": {"cpus": cores, "system": system()},
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def fast(rates: list[float]) -> float:
    """A process's rate when the host lets it run: its 90th percentile second."""
    return percentile(rates, 0.9)


def together_slow(each: list[list[float]], slow: float) -> list[int]:
    """The seconds in which every process ran below `slow` of its own fast rate."""
    bars = [slow * fast(r) for r in each]
    seconds = range(min(len(r) for r in each))
    return [s for s in seconds if all(r[s] < bar for r, bar in zip(each, bars, strict=True))]


def _one_thread() -> None:
    threadpool_limits(1)  # one core's rate per process: BLAS would spread a product over all


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--kind", choices=tuple(UNITS), default="memory")
    parser.add_argument("--slow", type=float, default=0.8, help="a slow second: below this share")
    parser.add_argument("--output")
    args = parser.parse_args(argv)
    if not 1 <= args.seconds <= 3600:
        parser.error(f"--seconds {args.seconds:g}: must be 1-3600")
    if not 0 < args.slow < 1:
        parser.error(f"--slow {args.slow:g}: must be between 0 and 1")
    result = probe(args.kind, args.seconds, args.slow)
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    return result


if __name__ == "__main__":
    main()
