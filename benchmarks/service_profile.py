"""Where the service's worker thread spends its time under concurrent requests (no HTTP).

    python benchmarks/service_profile.py [--model DIR] [--clients 8] [--duration 20] [--top 25]
        [--timed]

Loads the model, starts the service's InferenceQueue (continuous batching: serving/worker.py,
serving/continuous.py), sends one warm-up request, then runs `--clients` threads that each
submit one review set of examples/review_sets.jsonl at a time for `--duration` seconds, with
cProfile enabled in the worker thread's rounds (one decoding step of every running request).
Prints requests/s and the profile's top functions by their own time. --timed: no profiler
(it slows Python code more than tensor ops, and so distorts shares); instead a clock around each
round, each search step's bookkeeping (`_Search.advance`) and its constraints (`constraint_mask`),
reported per call and as a share of the rounds' time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from denoisesum.inference import beam
    from denoisesum.inference.summarizer import Summarizer
    from denoisesum.serving import InferenceQueue

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default=None, help="model directory or name (default: the packaged model)"
    )
    parser.add_argument("--sets", type=Path, default=ROOT / "examples" / "review_sets.jsonl")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--timed", action="store_true", help="clocks instead of cProfile")
    args = parser.parse_args()
    sets = [json.loads(line)["reviews"] for line in args.sets.read_text().splitlines() if line]
    queue = InferenceQueue(Summarizer.from_pretrained(args.model), 8, 64)
    queue.submit([sets[0]]).result(300)  # warm-up
    profile = cProfile.Profile()
    clocks: dict[str, list[float]] = {}  # name -> [seconds, calls]
    if args.timed:
        queue.stepper.round = clocked(queue.stepper.round, "round", clocks)
        beam.constraint_mask = clocked(beam.constraint_mask, "constraint_mask", clocks)
        beam._Search.advance = clocked(beam._Search.advance, "advance", clocks)
    else:
        queue.stepper.round = profiled(queue.stepper.round, profile)
    done: list[float] = []
    stop = time.monotonic() + args.duration

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop:
            start = time.monotonic()
            queue.submit([rng.choice(sets)]).result(300)
            done.append(time.monotonic() - start)

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    queue.close()
    rows = queue.stepper.rows / max(queue.stepper.steps, 1)
    print(
        f"{len(done) / elapsed:.2f} requests/s ({len(done)} in {elapsed:.1f} s); "
        f"{queue.stepper.steps} merged steps, {rows:.1f} beam rows each"
    )
    if args.timed:
        rounds = clocks["round"][0]
        for name, (seconds, calls) in clocks.items():
            print(
                f"{name}: {seconds:.2f} s in {calls} calls, {seconds / calls * 1e6:.0f} us each, "
                f"{seconds / rounds:.1%} of the rounds"
            )
        return
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


def profiled(step: Callable[[], None], profile: cProfile.Profile) -> Callable[[], None]:
    def profiled_round() -> None:
        profile.enable()
        try:
            step()
        finally:
            profile.disable()

    return profiled_round


def clocked(function: Callable, name: str, clocks: dict[str, list[float]]) -> Callable:
    """function, adding its wall time and calls to clocks[name]."""
    total = clocks.setdefault(name, [0.0, 0])

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            total[0] += time.perf_counter() - start
            total[1] += 1

    return timed


if __name__ == "__main__":
    main()
