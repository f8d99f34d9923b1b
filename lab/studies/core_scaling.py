"""How much a second process gets from this machine's second core: float32 matrix products of
one single-threaded process alone, then of two side by side (docs/results/service.md: the
service's second decoding process adds what the second core gives).

    .venv/bin/python -m lab.studies.core_scaling [--seconds 10] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from datetime import UTC, datetime

import torch

SIZE = 1024  # [SIZE, SIZE] x [SIZE, SIZE]: big enough to be compute-bound on one core


def gflops(seconds: float) -> float:
    """GFLOP/s of one thread doing matrix products for `seconds`."""
    torch.set_num_threads(1)
    a, b = torch.randn(SIZE, SIZE), torch.randn(SIZE, SIZE)
    a @ b  # warm-up
    products, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        a @ b
        products += 1
    return 2 * SIZE**3 * products / (time.perf_counter() - began) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    alone = gflops(args.seconds)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pair = pool.map(gflops, [args.seconds] * 2)
    result = {
        "alone_gflops": round(alone, 2),
        "side_by_side_gflops": [round(x, 2) for x in pair],
        "two_processes_x_one": round(sum(pair) / alone, 3),
        "cpus": os.cpu_count(),
        "load_average_1m_at_end": os.getloadavg()[0],
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    print(json.dumps(result, indent=2))
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
