"""The same batch on an idle CPU and beside CPU-bound jobs, in one run (issue 61 item 4).

    python -m benchmarks.busy_cpu [--review-sets ../shared/data/yelp/meansum_dev.jsonl]
        [--sets 6] [--rounds 3] [--markdown docs/results/busy-cpu.md] [--json FILE]

One process loads the shipped model once and summarizes the same first --sets review sets
(one batch) through two paths, each with three thread settings:
- paths: the Python API (`Summarizer.summarize_results`) and the service's decoding path
  (serving/worker.py's InferenceQueue: request thread plus stepping thread, no HTTP);
- settings: `before` (torch's own thread count, fixed: what every call used before
  denoisesum/threads.py), `1 thread`, and `auto` (threads.py's choice, the default now).
Each round runs every load in turn, and under each load every path and setting in an order
rotated round by round:
- `idle`: nothing started by the benchmark;
- `one job`: one CPU-bound 2-thread torch process (a matrix product in a loop), the issue's;
- `heavy`: two such processes and two 1-thread Python loops.
Reported: per cell the median seconds (and the range over rounds), and each setting's ratio to
its own idle median; `auto`'s idle median against `before`'s says whether the idle speed is kept.
The machine's load average is reported at each round's start: other jobs than these may share
the machine, which slows the idle rows too; the ratios in one run are what to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import cpu_name, emit, system

TORCH_JOB = (
    "import sys, torch\n"
    "torch.set_num_threads(int(sys.argv[1]))\n"
    "a = torch.randn(512, 512)\n"
    "a @ a\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    a @ a\n"
)
PY_JOB = "print('ready', flush=True)\nwhile True:\n    pass\n"
LOADS = {"idle": [], "one job": [TORCH_JOB], "heavy": [TORCH_JOB, TORCH_JOB, PY_JOB, PY_JOB]}
SETTINGS = ("before", "1 thread", "auto")
PATHS = ("API", "service")
WARM_S = 1.0  # the jobs run this long, once all of them compute, before the first timing


def start(jobs: list[str]) -> list[subprocess.Popen]:
    """The jobs, each started and computing (past its imports)."""
    processes = [
        subprocess.Popen([sys.executable, "-c", job, "2"], stdout=subprocess.PIPE, text=True)
        for job in jobs
    ]
    for process in processes:
        process.stdout.readline()
    return processes


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.kill()
        process.wait()


def load_average() -> float:
    return os.getloadavg()[0]


def measure(args) -> dict:
    import torch

    from denoisesum.data.reviewsets import read_review_sets
    from denoisesum.serving.worker import InferenceQueue
    from denoisesum.summarizer import Summarizer
    from denoisesum.threads import TORCH_THREADS, available_cpus, governor

    sets = [s.reviews for s in read_review_sets(args.review_sets)][: args.sets]
    base = Summarizer.from_pretrained(args.model, device="cpu")
    fixed = {"before": TORCH_THREADS, "1 thread": 1, "auto": None}
    summarizers = {}
    for name, threads in fixed.items():
        summarizer = Summarizer(base.model, base.vocab, base.config, "cpu", threads=threads)
        summarizer.path, summarizer.rating = base.path, base.rating
        summarizers[name] = summarizer
    queues = {name: InferenceQueue(s, max_batch_sets=len(sets)) for name, s in summarizers.items()}

    def run(path: str, setting: str) -> tuple[float, list[str]]:
        t0 = time.perf_counter()
        if path == "API":
            results = summarizers[setting].summarize_results(sets)
            summaries = [r.summary for r in results]
        else:
            summaries = [r.summary for r in queues[setting].submit(sets).result()]
        return time.perf_counter() - t0, summaries

    for path in PATHS:  # warm: the first call pays for allocations
        for setting in SETTINGS:
            run(path, setting)
    cells = [(p, s) for p in PATHS for s in SETTINGS]
    times: dict[str, dict[str, list[float]]] = {
        load: {f"{p} / {s}": [] for p, s in cells} for load in LOADS
    }
    chosen: dict[str, list[tuple[int, float | None]]] = {load: [] for load in LOADS}
    same = True
    reference: list[str] | None = None
    averages = []
    for r in range(args.rounds):
        averages.append(round(load_average(), 2))
        for load, jobs in LOADS.items():
            processes = start(jobs)
            try:
                if processes:
                    time.sleep(WARM_S)
                shift = r % len(cells)
                for path, setting in cells[shift:] + cells[:shift]:
                    seconds, summaries = run(path, setting)
                    times[load][f"{path} / {setting}"].append(seconds)
                    reference = reference or summaries
                    same = same and summaries == reference
                    if setting == "auto":
                        others = governor().others
                        chosen[load].append(
                            (governor().threads, None if others is None else round(others, 2))
                        )
            finally:
                stop(processes)
            print(f"round {r + 1} {load}: done", file=sys.stderr, flush=True)
    for queue in queues.values():
        queue.close()
    return {
        "command": "python -m benchmarks.busy_cpu " + " ".join(sys.argv[1:]),
        "machine": f"{cpu_name()} ({available_cpus()} CPUs available), {system()}",
        "torch": torch.__version__,
        "torch_threads": TORCH_THREADS,
        "sets": len(sets),
        "rounds": args.rounds,
        "load_average_at_round_start": averages,
        "auto_threads_after_call": chosen,
        "summaries_identical": same,
        "seconds": times,
    }


def report(result: dict) -> str:
    seconds = result["seconds"]
    lines = [
        f"Machine: {result['machine']}; torch {result['torch']} "
        f"({result['torch_threads']} threads by default). {result['sets']} review sets, one "
        f"batch, {result['rounds']} rounds; 1-minute load average at each round's start: "
        f"{', '.join(map(str, result['load_average_at_round_start']))}. Summaries identical in "
        f"every cell: {'yes' if result['summaries_identical'] else 'NO'}.",
        "",
        "| path / threads | idle s | one job s | heavy s | one job / idle | heavy / idle |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for cell in seconds["idle"]:

        def med(load: str, cell: str = cell) -> float:
            return statistics.median(seconds[load][cell])

        def spread(load: str, cell: str = cell) -> str:
            values = seconds[load][cell]
            return f"{med(load):.2f} ({min(values):.2f}-{max(values):.2f})"

        lines.append(
            f"| {cell} | {spread('idle')} | {spread('one job')} | {spread('heavy')} "
            f"| {med('one job') / med('idle'):.2f}x | {med('heavy') / med('idle'):.2f}x |"
        )
    for path in PATHS:
        auto = statistics.median(seconds["idle"][f"{path} / auto"])
        before = statistics.median(seconds["idle"][f"{path} / before"])
        lines.append("")
        lines.append(f"{path}, idle: auto / before = {auto / before:.2f}x.")
    lines.append("")
    lines.append(
        "auto's choice after each call, per load (threads, cores others used in the last "
        "window): "
        + "; ".join(
            f"{k}: " + ", ".join(f"{t} ({o})" for t, o in v)
            for k, v in result["auto_threads_after_call"].items()
        )
        + "."
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--review-sets", default="../shared/data/yelp/meansum_dev.jsonl")
    parser.add_argument("--model", default=None, help="model directory (default: the shipped)")
    parser.add_argument("--sets", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    result = measure(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    emit(report(result), args.markdown)


if __name__ == "__main__":
    main()
