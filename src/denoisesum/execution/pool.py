"""Decoding processes behind one HTTP server (`serve --workers N`): each request goes to the
process with the fewest review sets in flight.

One process serves HTTP; N worker processes, forked once the model is loaded (sharing its
memory), each run an InferenceQueue of their own (continuous batching: worker.py) on `threads`
torch threads, and receive jobs over a pipe. Requests are shared out one by one, not
connection by connection: clients keep their connections open (HTTP keep-alive), so processes
that each accepted their own connections would split the clients unevenly, and one would decode
more requests than the other and answer later.

A worker that dies fails its requests in flight and stops the service (`failed`: the command
exits 1), since a service of fewer workers than asked for is not the one started. Workers end
with the server, and by themselves when it is killed (processes.end_with).
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
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe

from denoisesum.errors import DenoiseSumError
from denoisesum.processes import end_with

CLOSE_S = 15.0  # seconds the workers have to end their requests in progress when it stops


class WorkerLost(Exception):
    """A decoding process stopped with the request in flight (the service answers 503)."""


@dataclass
class Worker:
    pid: int
    conn: Connection
    dead: bool = False
    in_flight: dict[int, tuple[concurrent.futures.Future, int]] = field(default_factory=dict)
    batches: int = 0  # the worker's InferenceQueue.batches, as of its last answer

    def sets(self) -> int:
        return sum(n for _, n in self.in_flight.values())


class Pool:
    """The parent's side: submit jobs to the least busy worker, and their answers back."""

    def __init__(self, queue, workers: int, threads: int, on_failure=None) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._closing = False
        self.failed = False
        # what stops the service when a worker dies (the server's; default: SIGTERM to us)
        self._on_failure = on_failure or (lambda: os.kill(os.getpid(), signal.SIGTERM))
        # sets in flight at most per worker: with one process, max_pending_sets may wait while
        # max_batch_sets decode (the pool counts both, and the sets being explained)
        self.max_in_flight = queue.max_pending_sets + queue.max_batch_sets
        self.workers = [_fork(queue, threads) for _ in range(workers)]
        for worker in self.workers:
            threading.Thread(
                target=self._read, args=(worker,), name="denoisesum-pool", daemon=True
            ).start()

    @property
    def pending_sets(self) -> int:
        with self._lock:
            return sum(w.sets() for w in self.workers)

    @property
    def batches(self) -> int:
        return sum(w.batches for w in self.workers)

    def submit(self, sets, *args) -> concurrent.futures.Future:
        """InferenceQueue.submit's arguments; the answer comes from one worker."""
        from denoisesum.serving.worker import QueueFull

        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            alive = [w for w in self.workers if not w.dead]
            if self._closing or not alive:
                raise QueueFull("the service is shutting down")
            worker = min(alive, key=Worker.sets)
            if worker.sets() + len(sets) > self.max_in_flight:
                raise QueueFull(
                    f"{worker.sets()} review sets are in flight in the least busy worker "
                    f"(at most {self.max_in_flight}); try again shortly"
                )
            job = next(self._ids)
            try:
                worker.conn.send((job, (sets, *args)))
            except OSError:  # it has just died (its reader stops the service)
                raise QueueFull("a decoding worker stopped; try again shortly") from None
            worker.in_flight[job] = (future, len(sets))
            # sent: it cannot be taken back (route.run then answers 504, not 503)
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
            future.set_exception(WorkerLost("a decoding worker stopped"))
        if not stopped:  # the service is not the one started: stop it, exit 1
            self.failed = True
            self._on_failure()

    def close(self) -> None:
        """Stop the workers (their jobs in progress end); wait for them."""
        with self._lock:
            self._closing = True
        for worker in self.workers:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        deadline = time.monotonic() + CLOSE_S
        for worker in self.workers:  # each ends its requests in progress, then exits
            with contextlib.suppress(ChildProcessError):
                while not os.waitpid(worker.pid, os.WNOHANG)[0]:
                    if time.monotonic() > deadline:  # wedged: it would hold the shutdown
                        os.kill(worker.pid, signal.SIGKILL)
                        os.waitpid(worker.pid, 0)
                        break
                    time.sleep(0.05)


def _fork(queue, threads: int) -> Worker:
    parent_end, child_end = Pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        child_end.close()
        return Worker(pid, parent_end)
    code = 1
    try:
        parent_end.close()
        _work(queue, child_end, threads, parent)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _work(queue, conn: Connection, threads: int, parent: int) -> None:
    """A worker process: jobs from the pipe into its own queue, answers back, until the pipe
    says stop or closes."""
    import torch

    torch.set_num_threads(threads)
    # Ctrl-C and a SIGTERM to the process group (systemd, timeout) reach the server, which
    # drains its requests and then stops us through the pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    end_with(parent)  # a killed server cannot stop us
    sending = threading.Lock()

    def answer(job: int, future: concurrent.futures.Future) -> None:
        try:
            ok, value = True, future.result()
        except BaseException as exc:  # every failure is the request's answer
            ok, value = False, _portable(exc)
        with sending:
            try:
                conn.send((job, ok, value, queue.batches))
            except Exception as exc:  # an answer that does not pickle: the error's text
                conn.send((job, False, _portable(exc), queue.batches))

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break
        if message is None:
            break
        job, args = message
        try:
            future = queue.submit(*args)
        except Exception as exc:
            future = concurrent.futures.Future()
            future.set_exception(exc)
        future.add_done_callback(lambda f, job=job: answer(job, f))
    queue.close()


def _portable(exc: BaseException) -> BaseException:
    """exc where it survives pickling (the parent raises it as it is), else its text."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # e.g. an exception whose __init__ takes keywords
        if isinstance(exc, DenoiseSumError):  # the input's fault: still a 422
            return DenoiseSumError(str(exc))
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
