"""Where the work is done: one executor interface, three executors.

    executor.submit(*args, weight=1) -> a future of the work's answer (.result(), .cancel())
    executor.close()                  -> the work in progress ends, then the executor
    executor.workers                  -> how many jobs it runs at once

- `Inline`: this process, on `workers` threads (1: in the caller's thread, when it asks).
- `ProcessPool` (pool.py): worker processes on this machine, each with a handler of its own;
  `summarize` decodes a batch per job on it, `serve --workers` a request per job.
- `Cluster` (cluster.py): the workers of a Dask cluster (`summarize --dask`).

`in_order` maps work over an executor and gives the answers in input order, at most `ahead`
jobs in flight (memory bounded by them); stopping early cancels the jobs not started. Each
batch is decoded alone, wherever it is decoded: the same records as one at a time.

`for_run` chooses a summarize run's executor: on a CPU with 2 or more torch threads, a file of
at least POOL_BATCHES batches is decoded by a worker process per thread (of one thread each),
fewer batches two at once on two threads of this process (`side_by_side`); on a GPU, from
standard input, or with one thread, one batch at a time here.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

# batches left at least for worker processes, by how they start: a forked worker at once, a
# spawned one after about 2 s of imports and loading; fewer: this process
POOL_BATCHES = {"fork": 2, "spawn": 12}


class Executor(Protocol):
    workers: int

    def submit(self, *args: Any, weight: int = 1) -> Any: ...

    def close(self) -> None: ...


class Inline:
    """`run(*args)` in this process: on `workers` threads (torch releases the interpreter lock
    inside its kernels, so they run on as many cores), or with one worker in the caller's
    thread."""

    def __init__(self, run: Callable[..., Any], workers: int = 1) -> None:
        self.run, self.workers = run, workers
        self.pool = (
            concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="decode")
            if workers > 1
            else None
        )

    def submit(self, *args: Any, weight: int = 1) -> concurrent.futures.Future:
        if self.pool is not None:
            return self.pool.submit(self.run, *args)
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(self.run(*args))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Inline:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def in_order(submit: Callable[[Any], Any], items: Iterable[Any], ahead: int) -> Iterator[Any]:
    """submit(item).result() of every item, in order, at most `ahead` submitted and not yet
    given; stopping early (an error, Ctrl-C) cancels those not started."""
    pending: collections.deque = collections.deque()
    try:
        for item in items:
            pending.append(submit(item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def _shareable_threads(summarizer, source: str) -> int:
    """torch's threads where two batches can be decoded at once, each with half of them: on a
    CPU, with at least 2 threads, from a file (standard input is never read ahead); else 0."""
    import torch

    threads = torch.get_num_threads()
    device = getattr(summarizer, "device", None)
    if device is None or device.type != "cpu" or source == "-" or threads < 2:
        return 0
    return threads


@contextlib.contextmanager
def side_by_side(summarizer, source: str) -> Iterator[int]:
    """How many batches this process decodes at once: 2 on a CPU where torch has at least 2
    threads, each batch then with half of them (restored at the end), else 1 (on a GPU; and
    from standard input, which is never read ahead). A batch's matrix products are small (40
    beam rows): a second torch thread speeds one up by far less than a second batch on the
    other core does (measured: docs/results/decoding-speed.md)."""
    import torch

    threads = _shareable_threads(summarizer, source)
    if not threads:
        yield 1
        return
    torch.set_num_threads(threads // 2)
    try:
        yield 2
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def worker_processes(summarizer, source: str, batches_left: int) -> Iterator[Any]:
    """A worker process per torch thread, one thread each (workers.BatchPool), where
    side_by_side would decode two batches at once and at least POOL_BATCHES batches are left
    (a worker's start must pay for itself); else None. One thread each: a forked worker whose
    torch runs parallel work on its main thread can hang in OpenMP once the parent has used it.
    Two processes of one thread decode faster than two threads of one process, whose
    interpreter lock the beam search's bookkeeping contends for (docs/results/decoding-speed.md)."""
    from denoisesum.execution import workers

    threads = _shareable_threads(summarizer, source)
    method = workers.pool_start()
    if not threads or batches_left < POOL_BATCHES[method]:
        yield None
        return
    with workers.BatchPool(summarizer, threads, 1, method) as pool:
        yield pool


@contextlib.contextmanager
def for_run(
    summarizer,
    source: str,
    batches_left: int | None,
    decode: Callable[..., Any],
    cluster: Executor | None = None,
) -> Iterator[Executor]:
    """A summarize run's executor (see the module's docstring); `decode(batch, options)` is
    what this process runs; cluster: --dask's, used as it is."""
    if cluster is not None:
        yield cluster
        return
    with contextlib.ExitStack() as stack:
        if batches_left is not None:
            pool = stack.enter_context(worker_processes(summarizer, source, batches_left))
            if pool is not None:
                yield pool
                return
        threads = stack.enter_context(side_by_side(summarizer, source))
        yield stack.enter_context(Inline(decode, threads))
