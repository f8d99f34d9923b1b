"""Worker processes that end with the process that started them.

A worker forked or spawned by `summarize` or `serve --workers` (execution/pool.py) is stopped
by its parent on Ctrl-C, SIGTERM or an error. A parent that is killed (SIGKILL, out of memory)
cannot stop them: a worker would wait for work for ever (its siblings forked after it hold the
parent's end of its pipe, so it never reads the end of it). `end_with(parent)` makes such a
worker exit once it is orphaned, which shows as a parent process id that is no longer its parent's.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

WATCH_S = 0.5  # how often a worker looks


def end_with(parent: int, stop: Callable[[], None] | None = None) -> None:
    """In a worker: once `parent` is no longer its parent, call `stop` (default: exit at once,
    status 1) from a daemon thread."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_S)
        (stop or (lambda: os._exit(1)))()

    threading.Thread(target=watch, name="denoisesum-parent-watch", daemon=True).start()
