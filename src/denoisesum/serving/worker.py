"""The request queue: one worker thread steps the beam searches of every running request.

The model is loaded once and one thread runs it (torch on CPU gains nothing from two decodes at
once: they would share the same cores). Continuous batching (continuous.py): each admitted
request is summarized in a thread of its own, through the summarizer's usual code, and its beam
searches are handed to the worker thread, which decodes every running search as one (one model
call and one round of bookkeeping per step). A request that arrives while others decode joins
them at the next step (a few tens of milliseconds) instead of waiting for their whole batch;
one that finishes leaves at once.
Up to `max_batch_sets` review sets decode together (a request of more sets joins alone, a batch
at a time).

Time limits are checked between steps: once a request's deadline has passed (its request has
had its 504), its search ends at the next step and the rest of it is dropped, while the others
go on. One request thus holds the model no longer than its own time limit and one step.
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import signal
import threading
import time
from dataclasses import dataclass

from denoisesum.execution.pool import ProcessPool, QueueFull
from denoisesum.inference.beam import stepped_by
from denoisesum.inference.support import SupportConfig
from denoisesum.serving.continuous import Stepper
from denoisesum.summarizer import Summarizer

# Review sets at most in one group of waiting jobs that start together: one summarize call
# (one encoder call for all of them; every search then decodes in the one merged search), but
# whose jobs are all answered when its longest set is done
GROUP_SETS = 2


class DeadlinePassed(Exception):
    """A job's time limit passed while it was decoded: the rest of it was dropped."""


@dataclass
class Job:
    sets: list[list[str]]
    future: concurrent.futures.Future  # -> a SummaryResult per set, explained
    ratings: list[list[float | None] | None] | None = None  # per set, each review's stars
    slice: str = "all"  # jobs of one slice and the same options are decoded together
    deadline: float | None = None  # time.monotonic() past which its request no longer waits
    options: tuple = ()  # per-call options (Summarizer.summarize's), as sorted (name, value)

    def mode(self) -> tuple:
        return self.slice, self.options

    def late(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline


class InferenceQueue:
    """One worker thread that runs the summarizer on queued jobs, several at a time."""

    def __init__(
        self,
        summarizer: Summarizer,
        max_batch_sets: int = 8,
        max_pending_sets: int = 64,
        support: SupportConfig | None = None,
    ) -> None:
        # one summarizer for every request: a call's options make its own decoding, never
        # change the summarizer (inference/policy.py)
        self.summarizer = summarizer
        summarizer.warm()  # before requests share it, and before forking
        self.max_batch_sets = max_batch_sets
        self.max_pending_sets = max_pending_sets
        self.support = support or SupportConfig()
        self._pending = 0
        self._batches = 0  # summarize_results calls made (what batching saved shows here)
        self._pool: ProcessPool | None = None  # serve --workers: the processes that decode
        self._jobs: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.stepper = Stepper(self._cond)  # the running requests' searches
        self.stepper.threads = getattr(summarizer, "threads", None)  # None: threads.py's
        # id(group of jobs) -> the review sets it decodes now (0 while it is explained)
        self._running: dict[int, int] = {}
        self._requests = concurrent.futures.ThreadPoolExecutor(  # one thread per group
            max_batch_sets + max_pending_sets, thread_name_prefix="denoisesum-request"
        )

    @property
    def pending_sets(self) -> int:
        return self._pending if self._pool is None else self._pool.pending

    @property
    def batches(self) -> int:
        return self._batches if self._pool is None else self._pool.batches

    @property
    def workers(self) -> list[int]:
        """The process ids of the processes that decode."""
        return [os.getpid()] if self._pool is None else self._pool.pids

    @property
    def failed(self) -> bool:
        """Whether a decoding process died (spread)."""
        return self._pool is not None and self._pool.failed

    def spread(self, workers: int, threads: int, on_failure=None) -> None:
        """From now on, decode in `workers` processes of `threads` torch threads, forked now
        with the model (execution/pool.py), each running this queue: each request goes to the
        one with the fewest sets in flight, at most max_pending_sets waiting and max_batch_sets
        decoding there. Call it before the queue has run anything (no thread of it started
        yet). on_failure: what stops the service when one of them dies (default: SIGTERM to
        this process)."""
        self._pool = ProcessPool(
            lambda: self,
            workers,
            threads,
            capacity=self.max_pending_sets + self.max_batch_sets,
            on_failure=on_failure or (lambda: os.kill(os.getpid(), signal.SIGTERM)),
        )

    def submit(
        self,
        sets: list[list[str]],
        ratings: list[list[float | None] | None] | None = None,
        slice: str = "all",
        timeout_s: float | None = None,
        options: dict | None = None,
    ) -> concurrent.futures.Future:
        """Queue review sets; past `timeout_s` from now, what is left of them is dropped.
        options: per-call options (Summarizer.summarize's: max_words, beam, first_person)."""
        if self._pool is not None:
            return self._pool.submit(sets, ratings, slice, timeout_s, options, weight=len(sets))
        future: concurrent.futures.Future = concurrent.futures.Future()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            if self._closed:
                raise QueueFull("the service is shutting down")
            if self._pending + len(sets) > self.max_pending_sets:
                raise QueueFull(
                    f"{self._pending} review sets are waiting for the model "
                    f"(at most {self.max_pending_sets}); try again shortly"
                )
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="denoisesum-inference", daemon=True
                )
                self._thread.start()
            self._pending += len(sets)
            chosen = tuple(sorted((options or {}).items()))
            self._jobs.append(Job(sets, future, ratings, slice, deadline, chosen))
            self._cond.notify()
        return future

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop after the job in progress; jobs still queued are cancelled."""
        if self._pool is not None:
            self._pool.close()
        with self._cond:
            self._closed = True
            while self._jobs:
                job = self._jobs.popleft()
                self._pending -= len(job.sets)
                job.future.cancel()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        self.stepper.cancel_all()  # the requests in progress end at once
        self._requests.shutdown(wait=False)

    def _run(self) -> None:
        """The worker thread: admit the waiting requests that fit, step the running searches,
        again, until closed."""
        while True:
            with self._cond:
                while not self._closed and not self.stepper.busy() and not self._fits():
                    self._cond.wait()
                if self._closed:
                    return
                joining = self._admit()
            for jobs in joining:
                self._requests.submit(self._serve, jobs)
            if self.stepper.busy():
                self.stepper.round()

    def _admit(self) -> list[list[Job]]:
        """The waiting jobs that fit now, in order, those of one mode (slice and options) that
        came together in one group: one summarize call, one search (its bookkeeping done once
        for all of them)."""
        groups: list[list[Job]] = []
        while self._fits():
            job = self._jobs.popleft()
            self._pending -= len(job.sets)
            size = min(len(job.sets), self.max_batch_sets)
            group = groups[-1] if groups else None
            if (
                group is None
                or group[0].mode() != job.mode()
                or len(job.sets) > size
                or self._running[id(group)] + size > GROUP_SETS
            ):
                groups.append([job])
                self._running[id(groups[-1])] = size
            else:
                group.append(job)
                self._running[id(group)] += size
        return groups

    def _fits(self) -> bool:
        """Whether the first waiting request joins now: its sets (one batch of them) fit in
        max_batch_sets beside those decoding (a request alone always does; requests whose
        summaries are being explained hold none)."""
        if not self._jobs:
            return False
        size = min(len(self._jobs[0].sets), self.max_batch_sets)
        used = sum(self._running.values())
        return used == 0 or used + size <= self.max_batch_sets

    def _serve(self, group: list[Job]) -> None:
        """A request thread: summarize a group of jobs, its searches stepped by the worker
        thread; they end once every job of the group is past its time limit."""
        # a job whose request timed out while it waited was cancelled: skip it; one past its
        # limit (serve --workers: it could not be cancelled) gets no encoder pass either
        jobs = [job for job in group if job.future.set_running_or_notify_cancel()]
        for job in [job for job in jobs if job.late()]:
            jobs.remove(job)
            job.future.set_exception(DeadlinePassed("past its time limit before it decoded"))
        key = id(group)

        def decode(search):
            """One of the group's searches, stepped with the others; its sets count against
            max_batch_sets while it decodes."""
            with self._cond:
                self._running[key] = len(search.finished)
            try:
                return self.stepper.run(search, late=lambda: all(job.late() for job in jobs))
            finally:
                with self._cond:
                    self._running[key] = 0
                    self._cond.notify_all()

        try:
            if jobs:
                with stepped_by(decode):
                    self._process(jobs)
        except BaseException as exc:  # never leave a future unanswered
            for job in jobs:
                if not job.future.done():
                    job.future.set_exception(exc)
        finally:
            with self._cond:
                del self._running[key]
                self._cond.notify_all()

    def _process(self, jobs: list[Job]) -> None:
        if len(jobs) == 1 and len(jobs[0].sets) > self.max_batch_sets:
            self._process_in_parts(jobs[0])
            return
        sets = [reviews for job in jobs for reviews in job.sets]
        ratings = [r for job in jobs for r in (job.ratings or [None] * len(job.sets))]
        try:
            decoded = self.summarizer.summarize_results(
                sets,
                ratings,
                slice=jobs[0].slice,
                batch_size=self.max_batch_sets,
                **dict(jobs[0].options),
            )
            self._batches += 1
        except Exception as exc:
            if len(jobs) == 1:
                jobs[0].future.set_exception(exc)
                return
            for job in jobs:  # one bad job must not fail the others: each alone
                self._process([job])
            return
        start = 0
        for job in jobs:
            start += len(job.sets)
            if job.late():  # its request has had its 504: the support is not worth its time
                job.future.set_exception(DeadlinePassed("the time limit passed"))
                continue
            mine = decoded[start - len(job.sets) : start]
            evidence = self.summarizer.denoisesum.evidence
            job.future.set_result(
                [
                    result.with_explanation(evidence(reviews, result.summary, self.support))
                    for reviews, result in zip(job.sets, mine, strict=True)
                ]
            )

    def _process_in_parts(self, job: Job) -> None:
        """A job of more sets than one batch, a batch at a time, stopping at its deadline."""
        results = []
        n = self.max_batch_sets
        for start in range(0, len(job.sets), n):
            if job.late():
                job.future.set_exception(
                    DeadlinePassed(f"the time limit passed after {start} of {len(job.sets)} sets")
                )
                return
            ratings = job.ratings[start : start + n] if job.ratings else None
            part = Job(
                job.sets[start : start + n],
                concurrent.futures.Future(),
                ratings,
                job.slice,
                job.deadline,
                job.options,
            )
            part.future.set_running_or_notify_cancel()
            self._process([part])
            if part.future.exception() is not None:
                job.future.set_exception(part.future.exception())
                return
            results.extend(part.future.result())
        job.future.set_result(results)
