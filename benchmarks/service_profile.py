"""Where the service's worker thread spends its time under concurrent requests (no HTTP).

    python -m benchmarks.service_profile [--model DIR] [--clients 8] [--duration 20] [--top 25]
        [--timed]

Loads the model, starts the service's InferenceQueue (continuous batching: serving/worker.py,
serving/continuous.py), sends one warm-up request, then runs `--clients` threads that each
submit one review set of examples/review_sets.jsonl at a time for `--duration` seconds, with
cProfile enabled in the worker thread's rounds (one decoding step of every running request).
Prints requests/s and the profile's top functions by their own time. --timed: no profiler
(it slows Python code more than tensor ops, and so distorts shares); instead a clock around each
round, each search step's bookkeeping (`_Search.advance`) and its constraints (`constraint_mask`),
reported per call and as a share of the rounds' time; and each request's phases (waiting to be
admitted, tokenizing and encoding, decoding: rounds and their time, answering: choosing and
checking the summary), averaged over the fastest quarter, the middle half and the slowest 5%.
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
    from denoisesum.serving import InferenceQueue
    from denoisesum.summarizer import Summarizer

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
    marks: dict[int, dict[str, float]] = {}  # id(a request's future) -> its phases' clocks
    if args.timed:
        queue.stepper.round = clocked(queue.stepper.round, "round", clocks)
        beam.constraint_mask = clocked(beam.constraint_mask, "constraint_mask", clocks)
        beam._Search.advance = clocked(beam._Search.advance, "advance", clocks)
        mark_phases(queue, marks)
    else:
        queue.stepper.round = profiled(queue.stepper.round, profile)
    done: list[float] = []
    requests: list[dict[str, float]] = []  # --timed: each request's phases, in ms
    stop = time.monotonic() + args.duration

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop:
            start = time.monotonic()
            future = queue.submit([rng.choice(sets)])
            future.result(300)
            done.append(time.monotonic() - start)
            if id(future) in marks:
                requests.append(phases(start, time.monotonic(), marks.pop(id(future))))

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
        print_phases(requests)
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


def mark_phases(queue, marks: dict[int, dict[str, float]]) -> None:
    """Clock each request's phases: when a request thread takes it up (admitted), hands its
    search to the stepper and gets it back (several times for a summary in two halves), and
    the stepper's rounds meanwhile."""
    local = threading.local()
    serve, run, stepper = queue._serve, queue.stepper.run, queue.stepper

    def clocked_serve(group) -> None:
        local.keys = [id(job.future) for job in group]
        for key in local.keys:
            marks[key] = {"admitted": time.monotonic(), "rounds": 0}
        serve(group)

    def clocked_run(search, **kwargs):
        now, before = time.monotonic(), stepper.steps
        for key in local.keys:
            marks[key].setdefault("handed", now)
        try:
            return run(search, **kwargs)
        finally:
            for key in local.keys:
                marks[key]["decoded"] = time.monotonic()
                marks[key]["rounds"] += stepper.steps - before

    queue._serve, queue.stepper.run = clocked_serve, clocked_run


def phases(start: float, end: float, marks: dict[str, float]) -> dict[str, float]:
    decoding = marks["decoded"] - marks["handed"]
    return {
        "latency": (end - start) * 1e3,
        "waiting": (marks["admitted"] - start) * 1e3,
        "preparing": (marks["handed"] - marks["admitted"]) * 1e3,
        "decoding": decoding * 1e3,
        "rounds": marks["rounds"],
        "ms a round": decoding * 1e3 / max(marks["rounds"], 1),
        "answering": (end - marks["decoded"]) * 1e3,
    }


def print_phases(requests: list[dict[str, float]]) -> None:
    """Latency percentiles, and each phase's mean over the fastest quarter, the middle half and
    the slowest 5% of the requests."""
    ranked = sorted(requests, key=lambda r: r["latency"])
    n = len(ranked)
    if not n:
        return
    p50, p99 = ranked[n // 2]["latency"], ranked[min(n - 1, int(n * 0.99))]["latency"]
    print(f"latency p50 {p50:.0f} ms, p99 {p99:.0f} ms, p99/p50 {p99 / p50:.2f} ({n} requests)")
    groups = {
        "fastest quarter": ranked[: max(1, n // 4)],
        "middle half": ranked[n // 4 : max(n // 4 + 1, 3 * n // 4)],
        "slowest 5%": ranked[min(n - 1, int(n * 0.95)) :],
    }
    for name, group in groups.items():
        means = {k: sum(r[k] for r in group) / len(group) for k in group[0]}
        print(f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in means.items()))


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
