"""lab/benchmarks/gc_clock.py: the collector's passes of a process and of those it forks, logged and
counted within a window (service_load.py --clock lab.benchmarks.gc_clock)."""

import gc
import os
import subprocess
import sys
import time
from pathlib import Path

from lab.benchmarks import gc_clock

ROOT = Path(__file__).resolve().parents[2]


def test_passes_are_counted_by_generation_within_the_window(tmp_path):
    log = str(tmp_path / "gc.log")
    clock = gc_clock.clock(log)
    since = time.monotonic()
    gc.callbacks.append(clock)
    try:
        gc.collect(2)
        gc.collect(0)
    finally:
        gc.callbacks.remove(clock)
    until = time.monotonic()
    found = gc_clock.read(log, since, until)
    assert found["2"]["passes"] >= 1 and found["0"]["passes"] >= 1
    assert 0 <= found["2"]["longest_ms"] <= found["2"]["ms"] <= 1000 * (until - since)
    assert gc_clock.read(log, until + 1, until + 2) == {}  # passes outside the window: none


def test_a_module_and_the_processes_it_forks_are_clocked(tmp_path):
    log, module = tmp_path / "gc.log", tmp_path / "forks.py"
    module.write_text(
        "import gc, os\n"
        "pid = os.fork()\n"
        "gc.collect()\n"
        "if pid:\n"
        "    os.waitpid(pid, 0)\n"
        "else:\n"
        "    os._exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "lab.benchmarks.gc_clock", str(log), "forks"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": f"{ROOT}:{tmp_path}"}, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0
    full = [line.split() for line in log.read_text().splitlines() if line.split()[1] == "2"]
    assert len({pid for pid, *_ in full}) == 2  # the module's process and its child
