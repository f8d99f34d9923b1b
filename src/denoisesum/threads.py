"""How many torch threads a decode uses on the CPU: as many as the cores other processes leave
free, re-measured as it runs (docs/results/busy-cpu.md).

torch's intra-op pool (OpenMP) ends each parallel region with a barrier that waits for every
one of its threads. On cores that other processes keep busy, one of them is often off its core
for a whole time slice, and a decode of thousands of small regions then runs many times slower
than with one thread: measured on 2 cores beside a 2-thread job, 2 threads took 2-16x as long
as 1. Alone, the second thread makes the same batch about 1.4x faster. So the count follows the
load: a `Governor` samples, at most every SAMPLE_S seconds, the CPU time spent on the cores this
process may run on (/proc/stat's per-CPU lines for os.sched_getaffinity's CPUs), less this
process's own; what is left is what others use, and a decode takes the cores they leave, whole
ones with at least 1 - SLACK of a core free, at least 1 and never more than `ceiling`: the
CPUs available (the affinity set, within a cgroup's CPU quota) and torch's count when denoisesum
was imported (a count set before that is a ceiling, never exceeded).

`governing(threads)` wraps a decode on its thread (Summarizer.summarize_results; the service's
stepping thread, serving/continuous.py) and `pace()` follows the load between its steps
(beam.py). torch's thread count is per thread with OpenMP (torch.set_num_threads sets the
calling thread's, and the one threads started later begin with), so a block sets its own
thread's count and restores the one it found at its end: code outside it sees what it set.
Left alone:
- a thread whose count someone else set (the user, the summarize command's worker processes and
  side-by-side batches, `serve --threads N`): any count other than torch's and the ones running
  blocks set;
- every thread where OMP_NUM_THREADS or MKL_NUM_THREADS is set;
- where /proc/stat cannot be read (not Linux): the ceiling, unmeasured.
`threads=N` (Summarizer.from_pretrained) fixes N threads for that summarizer's decodes.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import torch

SAMPLE_S = 0.25  # the load is re-measured at most this often (and in windows of at least this)
SLACK = 0.25  # a thread more once this much less than a whole core is taken by others
ENV_THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
TORCH_THREADS = torch.get_num_threads()  # torch's count as denoisesum is imported


def available_cpus(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this process may run on: its affinity set (os.cpu_count where there is none),
    at most a cgroup v2 CPU quota (cpu.max) rounded up."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


def busy_seconds(cpus: set[int], stat: Path = Path("/proc/stat")) -> float | None:
    """CPU seconds spent on `cpus` since boot, by every process (idle and iowait left out;
    steal, time a hypervisor gave to others, counted in); None where /proc/stat is unreadable."""
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return None
    ticks = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            values = [int(v) for v in rest.split()[:8]]
            ticks += sum(values) - values[3] - values[4]
    return ticks / os.sysconf("SC_CLK_TCK")


def choose(ceiling: int, cpus: int, others: float) -> int:
    """Threads for a decode where other processes take `others` of `cpus` cores: the cores
    left, one more once at least 1 - SLACK of it is free, at least 1, at most `ceiling`."""
    return max(1, min(ceiling, math.floor(cpus - others + SLACK)))


class Governor:
    """The process's choice of threads, from the load measured by `busy` (busy_seconds's
    reading for this process's CPUs) less `own` (this process's CPU seconds) over `clock`."""

    def __init__(self, ceiling: int, cpus: int, busy=None, own=time.process_time, clock=None):
        self.ceiling, self.cpus = ceiling, cpus
        cpu_set = _affinity()
        self._busy = busy or (lambda: busy_seconds(cpu_set))
        self._own, self._clock = own, clock or time.monotonic
        self._lock = threading.Lock()
        self._last = self._sample()
        self.others: float | None = None  # cores others used in the last window
        self.threads = ceiling

    def _sample(self) -> tuple[float, float | None, float]:
        return self._clock(), self._busy(), self._own()

    def current(self) -> int:
        """The threads to use now, re-measured when the last window is SAMPLE_S old."""
        if self._clock() - self._last[0] < SAMPLE_S:
            return self.threads
        with self._lock:
            now = self._sample()
            (t0, busy0, own0), (t1, busy1, own1) = self._last, now
            if t1 - t0 >= SAMPLE_S and busy0 is not None and busy1 is not None:
                self.others = max(0.0, (busy1 - busy0) - (own1 - own0)) / (t1 - t0)
                self.threads = choose(self.ceiling, self.cpus, self.others)
                self._last = now
            return self.threads


_governor: Governor | None = None
_made = threading.Lock()
_local = threading.local()  # per thread: depth of governing blocks, and what they set
_applied: Counter[int] = Counter()  # the counts running blocks set (a thread started meanwhile)


def _affinity() -> set[int]:
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def governor() -> Governor:
    """The process's Governor, made at its first use (Summarizer makes it as it loads, so the
    first decode has the load of the loading to go by)."""
    global _governor
    with _made:
        if _governor is None:
            _governor = Governor(max(1, min(TORCH_THREADS, available_cpus())), available_cpus())
        return _governor


def _set(threads: int) -> None:
    if torch.get_num_threads() != threads:
        with _made:
            _applied[_local.applied] -= 1
            _applied[threads] += 1
        _local.applied = threads
        torch.set_num_threads(threads)


@contextlib.contextmanager
def governing(threads: int | None = None) -> Iterator[None]:
    """Inside the block, this thread's decodes use `threads` torch threads (None: the
    Governor's choice, followed by pace(); this thread left as it is where someone else set
    its count, or OMP_NUM_THREADS/MKL_NUM_THREADS is set); its count restored at the end."""
    if getattr(_local, "depth", 0):  # nested: the outer block decides
        _local.depth += 1
        try:
            yield
        finally:
            _local.depth -= 1
        return
    found = torch.get_num_threads()
    with _made:
        ours = found == TORCH_THREADS or _applied[found] > 0
    auto = threads is None
    if auto and (not ours or any(os.environ.get(name) for name in ENV_THREADS)):
        yield
        return
    want = threads if threads is not None else governor().current()
    _local.depth, _local.auto, _local.applied = 1, auto, found
    with _made:
        _applied[found] += 1
    try:
        _set(want)
        yield
    finally:
        torch.set_num_threads(found)
        with _made:
            _applied[_local.applied] -= 1
        _local.depth, _local.auto = 0, False


def pace() -> None:
    """Between a decode's steps: inside a governing block of the Governor's choice, this
    thread's count follows the load (cheap when the last measure is recent)."""
    if getattr(_local, "auto", False):
        _set(governor().current())
