"""Run a Python module with the garbage collector's passes clocked, in its process and in the
processes it forks (`serve --workers`).

    python -m lab.benchmarks.gc_clock LOG MODULE [ARGS ...]

Each pass appends one line to LOG: the process id, the generation collected, when the pass
began (time.monotonic(), the clock every process of the machine shares) and its seconds.
`python -m benchmarks.service_load --clock lab.benchmarks.gc_clock` starts the server this way
and reports the passes during its load (under the key "collector"): a full pass (generation 2)
holds the process, and a worker's every running request with it, for as long as it takes.
"""

from __future__ import annotations

import gc
import os
import sys
import time

from benchmarks.common import run_module

KEY = "collector"  # the key of its summary in service_load's result


def clock(log: str):
    """A gc.callbacks entry appending each pass to `log` (one write of one line: lines from
    several processes do not mix)."""
    started = [0.0]

    def on_pass(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.monotonic()
            return
        seconds = time.monotonic() - started[0]
        line = f"{os.getpid()} {info['generation']} {started[0]:.6f} {seconds:.6f}\n"
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    return on_pass


def read(log: str, since: float, until: float) -> dict[str, dict[str, float]]:
    """Per generation: the passes that began between since and until (time.monotonic()), their
    total and longest milliseconds (every process)."""
    out: dict[str, dict[str, float]] = {}
    with open(log, encoding="utf-8") as lines:
        for line in lines:
            _, generation, began, seconds = line.split()
            if not since <= float(began) <= until:
                continue
            ms = 1000 * float(seconds)
            g = out.setdefault(generation, {"passes": 0, "ms": 0.0, "longest_ms": 0.0})
            g["passes"] += 1
            g["ms"] = round(g["ms"] + ms, 1)
            g["longest_ms"] = round(max(g["longest_ms"], ms), 1)
    return dict(sorted(out.items()))


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__.strip().splitlines()[3].strip())
    gc.callbacks.append(clock(sys.argv[1]))
    run_module(sys.argv[2], sys.argv[3:])


if __name__ == "__main__":
    main()
