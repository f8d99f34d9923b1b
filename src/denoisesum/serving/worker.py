"""The request queue: one worker thread that runs the summarizer on queued review sets.

The model is loaded once and one thread runs it (torch on CPU gains nothing from two decodes at
once: they would share the same cores). Requests queue for it, and whatever is waiting when it
is free is decoded together in one `summarize_results` call, up to `max_batch_sets` review sets,
so concurrent clients share forward passes. Batching does not change a summary (every entity's
beam is its own).

A decode cannot be stopped half-way, so a job's time is bounded between batches: a job of more
sets than one batch is decoded a batch at a time, and once its deadline (its request's time
limit) has passed, its request has had its 504 and the rest is dropped. One request thus holds
the worker at most its own time limit and one batch (whose cost the service's limits and the
model's read_reviews and max_review_tokens bound); the requests behind it go on.
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
import time
from dataclasses import dataclass

from denoisesum.inference.summarizer import Summarizer
from denoisesum.inference.support import SupportConfig


class QueueFull(Exception):
    """More review sets are waiting than ServiceLimits.max_pending_sets."""


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

    def __init__(self, summarizer: Summarizer, max_batch_sets: int = 8,
                 max_pending_sets: int = 64, support: SupportConfig | None = None) -> None:
        self.summarizer = summarizer
        self.max_batch_sets = max_batch_sets
        self.max_pending_sets = max_pending_sets
        self.support = support or SupportConfig()
        self.pending_sets = 0
        self.batches = 0  # summarize_results calls made (what batching saved shows here)
        self._jobs: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, sets: list[list[str]],
               ratings: list[list[float | None] | None] | None = None,
               slice: str = "all", timeout_s: float | None = None,
               options: dict | None = None) -> concurrent.futures.Future:
        """Queue review sets; past `timeout_s` from now, what is left of them is dropped.
        options: per-call decoding options (Summarizer.summarize's CALL_OPTIONS)."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            if self._closed:
                raise QueueFull("the service is shutting down")
            if self.pending_sets + len(sets) > self.max_pending_sets:
                raise QueueFull(f"{self.pending_sets} review sets are waiting for the model "
                                f"(at most {self.max_pending_sets}); try again shortly")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="denoisesum-inference",
                                                daemon=True)
                self._thread.start()
            self.pending_sets += len(sets)
            chosen = tuple(sorted((options or {}).items()))
            self._jobs.append(Job(sets, future, ratings, slice, deadline, chosen))
            self._cond.notify()
        return future

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop after the job in progress; jobs still queued are cancelled."""
        with self._cond:
            self._closed = True
            while self._jobs:
                job = self._jobs.popleft()
                self.pending_sets -= len(job.sets)
                job.future.cancel()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _take(self) -> list[Job] | None:
        """The next jobs: the first waiting one, and those behind it while they fit in
        max_batch_sets (a bigger job goes alone; summarize_results splits it)."""
        with self._cond:
            while not self._jobs and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            jobs = [self._jobs.popleft()]
            size = len(jobs[0].sets)
            while (self._jobs and size + len(self._jobs[0].sets) <= self.max_batch_sets
                   and self._jobs[0].mode() == jobs[0].mode()):
                jobs.append(self._jobs.popleft())
                size += len(jobs[-1].sets)
            self.pending_sets -= size
        return jobs

    def _run(self) -> None:
        while (jobs := self._take()) is not None:
            # a job whose request timed out while it waited was cancelled: skip it
            active = [job for job in jobs if job.future.set_running_or_notify_cancel()]
            if not active:
                continue
            try:
                self._process(active)
            except BaseException as exc:  # never let the worker die with futures unanswered
                for job in active:
                    if not job.future.done():
                        job.future.set_exception(exc)

    def _process(self, jobs: list[Job]) -> None:
        if len(jobs) == 1 and len(jobs[0].sets) > self.max_batch_sets:
            self._process_in_parts(jobs[0])
            return
        sets = [reviews for job in jobs for reviews in job.sets]
        ratings = [r for job in jobs for r in (job.ratings or [None] * len(job.sets))]
        try:
            decoded = self.summarizer.summarize_results(
                sets, ratings, jobs[0].slice, self.max_batch_sets, **dict(jobs[0].options))
            self.batches += 1
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
            mine = decoded[start - len(job.sets): start]
            job.future.set_result([self.summarizer.explain_result(result, reviews, self.support)
                                   for reviews, result in zip(job.sets, mine, strict=True)])

    def _process_in_parts(self, job: Job) -> None:
        """A job of more sets than one batch, a batch at a time, stopping at its deadline."""
        results = []
        n = self.max_batch_sets
        for start in range(0, len(job.sets), n):
            if job.late():
                job.future.set_exception(DeadlinePassed(
                    f"the time limit passed after {start} of {len(job.sets)} sets"))
                return
            ratings = job.ratings[start: start + n] if job.ratings else None
            part = Job(job.sets[start: start + n], concurrent.futures.Future(), ratings,
                       job.slice, job.deadline, job.options)
            part.future.set_running_or_notify_cancel()
            self._process([part])
            if part.future.exception() is not None:
                job.future.set_exception(part.future.exception())
                return
            results.extend(part.future.result())
        job.future.set_result(results)
