"""Where the service's worker thread spends its time under concurrent requests (no HTTP).

    python benchmarks/service_profile.py [--model DIR] [--clients 8] [--duration 20] [--top 25]

Loads the model, starts the service's InferenceQueue (continuous batching: serving/worker.py,
serving/continuous.py), sends one warm-up request, then runs `--clients` threads that each
submit one review set of examples/review_sets.jsonl at a time for `--duration` seconds, with
cProfile enabled in the worker thread's rounds (one decoding step of every running request).
Prints requests/s and the profile's top functions by their own time.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
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
    args = parser.parse_args()
    sets = [json.loads(line)["reviews"] for line in args.sets.read_text().splitlines() if line]
    queue = InferenceQueue(Summarizer.from_pretrained(args.model), 8, 64)
    queue.submit([sets[0]]).result(300)  # warm-up
    profile = cProfile.Profile()
    step = queue.stepper.round

    def profiled_round() -> None:
        profile.enable()
        try:
            step()
        finally:
            profile.disable()

    queue.stepper.round = profiled_round
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
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
