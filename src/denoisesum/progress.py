"""Progress that fits the run: a tqdm bar on a terminal, plain lines everywhere else.

    bar = progress_bar(total=2500, desc="train", unit="step", time_left=lambda: 130.0)

On a terminal it is tqdm's bar. Written to a file or a pipe (`| tee log`, nohup) a bar's
carriage-return frames make an unreadable log, and a disabled bar leaves it silent for the
whole stage; there it is `LineProgress`: a line when the stage starts, one every `interval`
seconds (PLAIN_INTERVAL, a coarse interval as tqdm's `mininterval` for logs), and one when it
ends, each with the stage, the count, the rate and the ETA:

    train: 197/2500 step, 3.9 step/s, 00:49 elapsed, ETA 02:11 (time budget)

A stage may word its lines itself (`form`: `summarize` says entities, its share, the rate of
this run, the ETA and the time elapsed) and start without the "started" line (`announce`).

`time_left` (seconds, or None for no limit) is a stage's time budget: a trainer that stops after
max_minutes stops before max_steps when that comes first, and its ETA is then the time left, not
the steps left over the rate (on the bar too: its total becomes the step it will stop at).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from tqdm import tqdm

PLAIN_INTERVAL = 30.0  # seconds between two lines of a plain progress log

TimeLeft = Callable[[], float | None]


def clock(seconds: float) -> str:
    """00:49, 32:51, 2:03:38."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def remaining(
    done: float, total: float | None, rate: float, budget: float | None
) -> tuple[float | None, bool]:
    """(seconds left, whether the time budget decides it): the work left over the rate, or the
    budget when it ends sooner. None when neither is known."""
    by_work = (total - done) / rate if total is not None and rate > 0 else None
    if budget is not None and (by_work is None or budget < by_work):
        return max(0.0, budget), True
    return by_work, False


class LineProgress:
    """tqdm's interface as far as this package uses it (update, set_postfix, close, iteration,
    `n`, `total`), writing whole lines (see the module docstring)."""

    def __init__(
        self,
        iterable: Iterable | None = None,
        total: float | None = None,
        desc: str = "",
        unit: str = "it",
        initial: float = 0,
        stream: TextIO | None = None,
        interval: float = PLAIN_INTERVAL,
        time_left: TimeLeft | None = None,
        form: Callable[[LineProgress, str], str] | None = None,
        announce: bool = True,
        clock: Callable[[], float] = time.monotonic,
        **_: Any,
    ) -> None:
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit.strip()
        self.n = self.initial = initial
        self.stream = stream if stream is not None else sys.stderr
        self.interval, self.time_left = interval, time_left
        self.form, self.clock = form, clock
        self.start = self.last = clock()
        self.postfix = ""
        self.closed = False
        if announce:
            self._write("started")

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        self.n += n
        now = self.clock()
        if now - self.last >= self.interval:
            self.last = now
            self._write()

    def set_postfix(
        self, ordered_dict: dict | None = None, refresh: bool = True, **values: Any
    ) -> None:
        values = {**(ordered_dict or {}), **values}
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or ""

    def refresh(self) -> None:
        self._write()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._write("done")

    def line(self, status: str = "") -> str:
        if self.form is not None:
            return self.form(self, status)
        elapsed = self.clock() - self.start
        rate = (self.n - self.initial) / elapsed if elapsed > 0 else 0.0
        count = f"{self.n:,.0f}" + (f"/{self.total:,.0f}" if self.total is not None else "")
        parts = [f"{count} {self.unit}", f"{rate:,.1f} {self.unit}/s", f"{clock(elapsed)} elapsed"]
        if status != "done":
            budget = self.time_left() if self.time_left is not None else None
            left, by_budget = remaining(self.n, self.total, rate, budget)
            if left is not None and (rate > 0 or by_budget):
                parts.append(f"ETA {clock(left)}" + (" (time budget)" if by_budget else ""))
        if self.postfix:
            parts.append(self.postfix)
        head = f"{self.desc}: " if self.desc else ""
        return head + ", ".join(parts) + (f" [{status}]" if status else "")

    def _write(self, status: str = "") -> None:
        try:
            self.stream.write(self.line(status) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed or full stream must not stop the work
            pass


class BudgetBar(tqdm):
    """tqdm's bar whose total follows a time budget: when the budget ends before the total,
    the total shown is the count it will stop at, so `[elapsed<remaining]` is the time left."""

    def __init__(self, *args: Any, time_left: TimeLeft | None = None, **kwargs: Any) -> None:
        self.time_left = time_left
        super().__init__(*args, **kwargs)
        self.planned = self.total

    def update(self, n: float = 1) -> bool | None:
        if self.time_left is not None and self.planned:
            self._follow_budget(n)
        return super().update(n)

    def _follow_budget(self, n: float) -> None:
        elapsed = self._time() - self.start_t
        done = self.n + n - self.initial
        budget = self.time_left()
        if elapsed <= 0 or done <= 0 or budget is None:
            return
        left, by_budget = remaining(self.n + n, self.planned, done / elapsed, budget)
        if left is not None:
            self.total = (
                min(self.planned, round(self.n + n + left * done / elapsed))
                if by_budget
                else self.planned
            )


def progress_bar(
    iterable: Iterable | None = None,
    *,
    enabled: bool = True,
    stream: TextIO | None = None,
    time_left: TimeLeft | None = None,
    interval: float = PLAIN_INTERVAL,
    lines: dict[str, Any] | None = None,
    **kwargs: Any,
):
    """A bar on a terminal, plain lines elsewhere, nothing when not `enabled`; kwargs: tqdm's
    (total, desc, unit, initial, ...); lines: LineProgress's own (form, announce, clock)."""
    stream = stream if stream is not None else sys.stderr
    if not enabled:
        return tqdm(iterable, disable=True, **kwargs)
    if _is_terminal(stream):
        return BudgetBar(iterable, file=stream, time_left=time_left, dynamic_ncols=True, **kwargs)
    return LineProgress(
        iterable, stream=stream, time_left=time_left, interval=interval, **(lines or {}), **kwargs
    )


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
