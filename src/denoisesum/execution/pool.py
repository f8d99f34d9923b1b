"""Worker processes on this machine, each with a handler of its own, that `summarize` (a
batch per job) and `serve --workers` (a request per job) both run on: the process pool of the
executors (executors.py).

    pool = ProcessPool(start, workers=2, threads=1)   # start() -> the handler, in each worker
    future = pool.submit(*args, weight=len(sets))     # the handler's submit(*args), answered
    pool.close()

A worker is forked (Linux: it starts at once, with the parent's memory, the model included,
shared until written) or spawned (`method="spawn"`: macOS, whose system libraries are not safe
to fork once they have started threads; `start` is then pickled). In the worker, `start()` makes
its handler, an object whose `submit(*args)` returns the answer or a Future of it (an
InferenceQueue answers requests concurrently, continuous batching, serving/worker.py); its
`batches` (if any) comes back with each answer. Jobs go over a pipe, one by one, to the worker
with the least weight in flight, not connection by connection (clients keep their connections
open, so processes that each accepted their own would split them unevenly). With `capacity`,
a job that would put more weight than that in the least busy worker is refused (QueueFull).

A worker that dies fails its jobs in flight (WorkerLost) and calls `on_failure` (the service
stops: one of fewer workers than asked for is not the one started). Workers end with the
parent (`close`: they finish the jobs in progress), and by themselves when it is killed
(processes.end_with).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import os
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from typing import Any

from denoisesum.errors import DenoiseSumError
from denoisesum.processes import end_with

CLOSE_S = 15.0  # seconds the workers have to end their jobs in progress when it stops


class WorkerLost(Exception):
    """A worker process stopped with the job in flight (the service answers 503)."""


class QueueFull(Exception):
    """More work waiting than the executor takes now (the service answers 503)."""


@dataclass
class Worker:
    pid: int
    conn: Connection
    process: Any = None  # the multiprocessing.Process of a spawned worker (None: forked)
    dead: bool = False
    in_flight: dict[int, tuple[concurrent.futures.Future, int]] = field(default_factory=dict)
    batches: int = 0  # the handler's batches, as of its last answer

    def load(self) -> int:
        return sum(n for _, n in self.in_flight.values())


class ProcessPool:
    """The parent's side: submit jobs to the least busy worker, and their answers back."""

    def __init__(
        self,
        start: Callable[[], Any],
        workers: int,
        threads: int,
        *,
        method: str = "fork",
        capacity: int | None = None,
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._closing = False
        self.failed = False
        self.workers, self.threads, self.capacity = workers, threads, capacity
        self._on_failure = on_failure or (lambda: None)
        begin = _fork if method == "fork" else _spawn
        self.processes = [begin(start, threads) for _ in range(workers)]
        for worker in self.processes:
            threading.Thread(
                target=self._read, args=(worker,), name="denoisesum-pool", daemon=True
            ).start()

    @property
    def pending(self) -> int:
        """The weight of the jobs in flight."""
        with self._lock:
            return sum(w.load() for w in self.processes)

    @property
    def batches(self) -> int:
        return sum(w.batches for w in self.processes)

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self.processes]

    def submit(self, *args: Any, weight: int = 1) -> concurrent.futures.Future:
        """The handler's submit(*args) in the least busy worker; its answer as a Future."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            alive = [w for w in self.processes if not w.dead]
            if self._closing or not alive:
                raise QueueFull("the service is shutting down")
            worker = min(alive, key=Worker.load)
            if self.capacity is not None and worker.load() + weight > self.capacity:
                raise QueueFull(
                    f"{worker.load()} review sets are in flight in the least busy worker "
                    f"(at most {self.capacity}); try again shortly"
                )
            job = next(self._ids)
            try:
                worker.conn.send((job, args))
            except OSError:  # it has just died (its reader reports it)
                raise QueueFull("a worker process stopped; try again shortly") from None
            worker.in_flight[job] = (future, weight)
            # sent: it cannot be taken back (the service then answers 504, not 503)
            future.set_running_or_notify_cancel()
        return future

    def _read(self, worker: Worker) -> None:
        """A reader thread per worker: each answer to its future."""
        while True:
            try:
                job, ok, value, batches = worker.conn.recv()
            except Exception:  # the pipe closed (EOFError), or an answer that does not load
                break
            with self._lock:
                future, _ = worker.in_flight.pop(job)
                worker.batches = batches
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        with self._lock:
            lost, worker.in_flight = list(worker.in_flight.values()), {}
            stopped, worker.dead = self._closing, True
        for future, _ in lost:
            future.set_exception(WorkerLost("a worker process stopped"))
        if not stopped:
            self.failed = True
            self._on_failure()

    def close(self) -> None:
        """Stop the workers (their jobs in progress end); wait for them."""
        with self._lock:
            self._closing = True
        for worker in self.processes:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        deadline = time.monotonic() + CLOSE_S
        for worker in self.processes:  # each ends its jobs in progress, then exits
            _reap(worker, deadline)

    def __enter__(self) -> ProcessPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _reap(worker: Worker, deadline: float) -> None:
    """Wait for a worker to exit; past `deadline` (wedged: it would hold the shutdown), kill it."""
    if worker.process is not None:
        worker.process.join(max(0.0, deadline - time.monotonic()))
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        return
    with contextlib.suppress(ChildProcessError):
        while not os.waitpid(worker.pid, os.WNOHANG)[0]:
            if time.monotonic() > deadline:
                os.kill(worker.pid, signal.SIGKILL)
                os.waitpid(worker.pid, 0)
                break
            time.sleep(0.05)


def _fork(start: Callable[[], Any], threads: int) -> Worker:
    parent_end, child_end = Pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        child_end.close()  # so that its death closes the pipe, and our reader sees it
        return Worker(pid, parent_end)
    code = 1
    try:
        parent_end.close()
        _work(start, child_end, threads, parent)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _spawn(start: Callable[[], Any], threads: int) -> Worker:
    import multiprocessing

    parent_end, child_end = Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=_work, args=(start, child_end, threads, os.getpid()), daemon=True
    )
    process.start()
    child_end.close()
    return Worker(process.pid, parent_end, process)


def _work(start: Callable[[], Any], conn: Connection, threads: int, parent: int) -> None:
    """A worker process: its handler made, jobs from the pipe to it, answers back, until the
    pipe says stop or closes."""
    import torch

    torch.set_num_threads(threads)
    # Ctrl-C and a SIGTERM to the process group (systemd, timeout) reach the parent, which
    # stops us through the pipe once its jobs are done
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    end_with(parent)  # a killed parent cannot stop us
    handler = start()
    sending = threading.Lock()

    def answer(job: int, future: concurrent.futures.Future) -> None:
        try:
            ok, value = True, future.result()
        except BaseException as exc:  # every failure is the job's answer
            ok, value = False, _portable(exc)
        batches = getattr(handler, "batches", 0)
        with sending:
            try:
                conn.send((job, ok, value, batches))
            except Exception as exc:  # an answer that does not pickle: the error's text
                conn.send((job, False, _portable(exc), batches))

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break
        if message is None:
            break
        job, args = message
        future = _submitted(handler, args)
        future.add_done_callback(lambda f, job=job: answer(job, f))
    if hasattr(handler, "close"):
        handler.close()


def _submitted(handler: Any, args: tuple) -> concurrent.futures.Future:
    """handler.submit(*args) as a Future: its own, or one holding its answer or error."""
    try:
        value = handler.submit(*args)
    except Exception as exc:
        value = concurrent.futures.Future()
        value.set_exception(exc)
    if isinstance(value, concurrent.futures.Future):
        return value
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_result(value)
    return future


def _portable(exc: BaseException) -> BaseException:
    """exc where it survives pickling (the parent raises it as it is), else its text."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # e.g. an exception whose __init__ takes keywords
        if isinstance(exc, DenoiseSumError):  # the input's fault: still a 422
            return DenoiseSumError(str(exc))
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
