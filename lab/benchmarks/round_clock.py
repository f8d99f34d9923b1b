"""Run a Python module with the service's decoding rounds clocked, in its process and in the
processes it forks (`serve --workers`).

    python -m lab.benchmarks.round_clock LOG MODULE [ARGS ...]

Each round that stepped beams (continuous.Stepper.round: one step of every running search)
appends one line to LOG: the process id, when the round began (time.monotonic(), the clock
every process of the machine shares), the beam rows it stepped, its wall and thread-CPU
milliseconds, and how often its thread was switched out meanwhile: to wait (the interpreter's
lock, a mutex) or pre-empted by another runnable thread. `python -m
benchmarks.service_load --clock lab.benchmarks.round_clock` starts the server this way and
summarizes the rounds during its load (under the key "rounds").

Wall time against the thread's CPU time tells the two kinds of slow round apart. A round that
waited (its process's other threads encoding, the other worker on its core) took more wall time
than CPU time. A round whose own CPU time grew, for as many rows, ran slower instructions: the
core itself was slower then, its caches or memory taken by something else.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from collections import defaultdict

from benchmarks.common import run_module

KEY = "rounds"  # the key of its summary in service_load's result

MIN_ROUNDS = 20  # rounds a second needs to count in the per-second figures


def clock(log: str) -> None:
    """Wrap Stepper.round so that each round that stepped beams appends its line to `log`."""
    from denoisesum.serving.continuous import Stepper

    plain = Stepper.round
    logs: dict[int, int] = {}  # per process, its descriptor: a forked worker opens its own

    def clocked(self) -> None:
        rows, began = self.rows, time.monotonic()
        cpu, used = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD)
        plain(self)
        if self.rows == rows:
            return
        wall_ms, cpu_ms = 1000 * (time.monotonic() - began), 1000 * (time.thread_time() - cpu)
        now = resource.getrusage(resource.RUSAGE_THREAD)
        waits, preempted = now.ru_nvcsw - used.ru_nvcsw, now.ru_nivcsw - used.ru_nivcsw
        pid = os.getpid()
        if pid not in logs:
            logs[pid] = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        stepped = self.rows - rows
        line = f"{pid} {began:.6f} {stepped} {wall_ms:.3f} {cpu_ms:.3f} {waits} {preempted}"
        os.write(logs[pid], (line + "\n").encode())  # one write: lines of processes do not mix

    Stepper.round = clocked


def read(log: str, since: float, until: float) -> dict:
    """The rounds that began between since and until (time.monotonic()), per process: their
    count, means a round, and the thread-CPU milliseconds a round in each whole second of the
    window but the first (fastest, median and slowest second); across the first two processes,
    how their seconds' CPU times move together (Pearson's r)."""
    rounds: dict[str, list[list[float]]] = defaultdict(list)
    with open(log, encoding="utf-8") as lines:
        for line in lines:
            pid, began, *values = line.split()
            if since <= float(began) <= until:
                rounds[pid].append([float(began) - since, *map(float, values)])
    # whole seconds only, the first left out too: the load's start and end run fewer rows
    seconds = range(1, int(until - since))
    summed = [summary(r, seconds) for r in rounds.values()]
    workers, per_second = [w for w, _ in summed], [cpu for _, cpu in summed]
    together = None
    if len(per_second) >= 2:
        both = sorted(set(per_second[0]) & set(per_second[1]))
        a, b = ([s[k] for k in both] for s in per_second[:2])
        if len(both) >= 3 and len(set(a)) > 1 and len(set(b)) > 1:
            together = round(statistics.correlation(a, b), 2)
    return {"workers": workers, "cpu_seconds_together_r": together}


def summary(rounds: list[list[float]], seconds: range) -> tuple[dict, dict[int, float]]:
    """One process's rounds ([began, rows, wall ms, cpu ms, waits, pre-emptions] each) summed
    up, and its CPU time a round in each of `seconds` (from the window's start)."""
    n = len(rounds)

    def mean(column: int) -> float:
        return round(sum(r[column] for r in rounds) / n, 2)

    by_second: dict[int, list[float]] = defaultdict(list)
    for r in rounds:
        by_second[int(r[0])].append(r[3])
    cpu = {
        s: round(statistics.mean(v), 3)
        for s, v in by_second.items()
        if s in seconds and len(v) >= MIN_ROUNDS
    }
    ordered = sorted(cpu.values())
    spread = (ordered[0], statistics.median(ordered), ordered[-1]) if ordered else (None,) * 3
    return {
        "rounds": n,
        "rows_a_round": mean(1),
        "wall_ms_a_round": mean(2),
        "cpu_ms_a_round": mean(3),
        "waits_a_round": mean(4),
        "preempted_a_round": mean(5),
        "cpu_ms_a_round_by_second": {
            **dict(zip(("fastest", "median", "slowest"), spread, strict=True)),
            "seconds": len(cpu),
        },
    }, cpu


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__.strip().splitlines()[3].strip())
    clock(sys.argv[1])
    run_module(sys.argv[2], sys.argv[3:])


if __name__ == "__main__":
    main()
