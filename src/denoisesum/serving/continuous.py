"""Continuous batching: the searches of every running request decode as one beam search.

The service's worker (worker.py) decodes each request in a thread of its own, through the
summarizer's usual code (summarize_results); that thread's beam searches are handed to a
`Stepper` (beam.stepped_by) instead of running alone. The worker thread takes each new search
into a `Merged` search (beam._Search.join) and steps it: one model call and one round of beam
bookkeeping per step for every request decoding, however many. A request that arrives while
others decode joins them at the next step instead of waiting for their batch to end, and its
entities leave as soon as they end: each keeps its own beams, constraints and finished
hypotheses, and counts its words from its own first step (the others' earlier steps are
<pad>s it never reads).

Between steps the worker checks each request's deadline: a request past its time limit has its
entities ended there (its request has had its 504), and the others go on.

One search for searches that differ:
- their sources differ in length: each pair's keys, values, mask and copy ids are padded to the
  longest with masked positions, which attention gives weight 0 (DecodeState.joined);
- their shortlists differ (inference/shortlist.py: the common words plus each request's own):
  the merged search decodes over the union of them (positions only added while it lives, so a
  hypothesis's words keep their positions), and each entity's distribution is over its own
  shortlist's words only (DenoiseSum.decode_step's `words`), as alone;
- their lengths differ (per-request max_words, min_words): each entity has its own bounds;
- their beam sizes, other settings the search reads (per-request options), precision or models
  differ: such searches decode in separate merged searches.

A merged search takes newcomers until it has taken MAX_ENTITIES entities; when its union would
outgrow its first shortlist by MAX_GROWTH (the output layer's cost grows with it), it first
drops the words of requests already answered, and where that is not enough newcomers start a
fresh one while the full one decodes until its entities end. One failing model call fails the
requests of its merged search (they share it), not the others.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from denoisesum.errors import DenoiseSumError
from denoisesum.inference.beam import Hypothesis
from denoisesum.inference.shortlist import ShortlistModel
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.threads import governing

MAX_ENTITIES = 256
# settings a merged search applies to each entity apart (its own length bounds: beam.py):
# searches that differ only in them decode as one
NOT_SHARED = ("min_words", "max_words", "length_ratio")
MAX_GROWTH = 0.25


@dataclass
class Entry:
    """A search handed to the stepper by a request's thread, until it has ended."""

    search: Any  # beam._Search
    late: Callable[[], bool]  # whether its request's time limit has passed
    autocast: tuple[bool, torch.dtype]  # the precision its thread asked for (Summarizer)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    merged: Merged | None = None  # the merged search it decodes in (None: alone, or not yet)
    first: int = 0  # its entities' numbers in the merged search: first, first + 1, ...


class Stepper:
    """The searches of every running request, stepped together by the worker thread."""

    def __init__(self, cond: threading.Condition) -> None:
        self._cond = cond  # the queue's: a new search wakes the worker
        self._entries: list[Entry] = []
        self._open: dict[tuple, Merged] = {}  # per group key, the merged search taking newcomers
        self._merged: list[Merged] = []  # every merged search with entities decoding
        self.steps = 0  # model calls made (merged steps)
        self.rows = 0  # beam rows stepped, summed over those calls
        self.threads: int | None = None  # torch threads for the steps (None: threads.py's)

    def run(self, search, late: Callable[[], bool] = lambda: False):
        """In a request's thread (beam.stepped_by): hand `search` over and wait until the worker
        has stepped it to its end; its results, as _Search.run gives them."""
        device = search.device.type
        entry = Entry(
            search, late, (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))
        )
        with self._cond:
            self._entries.append(entry)
            self._cond.notify_all()
        entry.done.wait()
        if entry.error is not None:
            raise entry.error
        return search.results()

    def busy(self) -> bool:
        return bool(self._entries)

    def cancel_all(self) -> None:
        """End every search (the service is shutting down)."""
        with self._cond:
            entries, self._entries = self._entries, []
            self._open, self._merged = {}, []
        for entry in entries:  # a merged search's lists hold its own positions: no results
            entry.error = DenoiseSumError("the service is shutting down")
            entry.done.set()

    @torch.inference_mode()  # as the requests' own threads encode (Summarizer)
    def round(self) -> None:
        """One step of every running search (in the worker thread): new searches join a merged
        one first, those of late requests end, then each merged search takes one step; on as
        many torch threads as the CPU's load leaves (threads.py; `threads`: that many), where
        `serve` did not set them (--threads)."""
        with governing(self.threads):
            self._round()

    def _round(self) -> None:
        with self._cond:
            entries = list(self._entries)
        for entry in entries:
            if entry.late():  # its request has had its 504: stop spending steps on it
                entry.search.entity = entry.search.entity[:0]
                if entry.merged is not None:
                    entry.merged.cancel(entry)
            elif entry.merged is None and entry.error is None:
                self._place(entry)
        for entry in entries:  # searches no merged search can take: each alone
            if entry.merged is None and entry.error is None and len(entry.search.entity):
                self._step(entry.search, [entry], entry.autocast)
        for merged in self._merged:
            if len(merged.search.entity):
                self._step(merged.search, merged.entries, merged.autocast)
        self._merged = [m for m in self._merged if len(m.search.entity)]
        self._open = {k: m for k, m in self._open.items() if m in self._merged}
        ended = [e for e in entries if e.error is not None or self._ended(e)]
        if ended:
            with self._cond:
                self._entries = [e for e in self._entries if e not in ended]
            for entry in ended:
                entry.done.set()

    def _place(self, entry: Entry) -> None:
        """Into the open merged search of its key, or a new one (the old one, full, decodes
        on until its entities end)."""
        try:
            key = _group_key(entry)
            if key is None or not len(entry.search.entity):
                return
            merged = self._open.get(key)
            if merged is None or not merged.admit(entry):
                merged = Merged(entry)
                self._open[key] = merged
                self._merged.append(merged)
        except Exception as exc:  # a search that cannot join fails alone
            entry.error = exc

    def _ended(self, entry: Entry) -> bool:
        if entry.merged is None:
            return not len(entry.search.entity)
        try:
            if entry.merged.running(entry):
                return False
            entry.search.finished = entry.merged.results(entry)
        except Exception as exc:  # its request fails, not the worker thread
            entry.error = exc
        return True

    def _step(self, search, entries: list[Entry], autocast: tuple[bool, torch.dtype]) -> None:
        enabled, dtype = autocast
        try:
            with torch.autocast(search.device.type, dtype, enabled=enabled):
                rows = len(search.prev)
                search.step()
            self.steps += 1
            self.rows += rows
        except Exception as exc:  # its requests fail; the other searches go on
            search.entity = search.entity[:0]
            for entry in entries:
                entry.error = exc


def _group_key(entry: Entry) -> tuple | None:
    """Searches with the same key decode as one search: the same DenoiseSum, beam size,
    settings, banned words and precision (None: a decoding model Merged does not know)."""
    search = entry.search
    model = search.model
    base = model.model if isinstance(model, ShortlistModel) else model
    if not isinstance(base, DenoiseSum) or not hasattr(search.state, "select_beams"):
        return None
    banned = tuple(_vocab_rows(search)[list(search.words.banned)].tolist())
    settings = tuple(
        getattr(search.config, f.name)
        for f in dataclasses.fields(search.config)
        if f.name not in NOT_SHARED
    )
    return (base, search.k, settings, banned, entry.autocast)


def _vocab_rows(search) -> torch.Tensor:
    """The vocabulary ids of a search's output positions."""
    if isinstance(search.model, ShortlistModel):
        return search.model.rows
    return torch.arange(search.model.config.vocab_size, device=search.device)


class Merged:
    """Searches decoding as one (beam._Search.join), over the union of their shortlists."""

    def __init__(self, entry: Entry) -> None:
        # a copy, which the others join: entry's own search keeps its own positions
        search = copy.copy(entry.search)
        search.finished = list(search.finished)
        search.n_finished = search.n_finished.clone()
        self.base, self.search = _group_key(entry)[0], search
        rows = _vocab_rows(search)  # the union's positions' vocabulary ids: these first
        self.limit = int(len(rows) * (1 + MAX_GROWTH))  # the union's size at most
        self.position = torch.full(
            (self.base.config.vocab_size,), -1, dtype=torch.long, device=search.device
        )
        self._move(rows, torch.arange(len(rows), device=search.device))
        self.entries = [entry]
        self.autocast = entry.autocast
        self.taken = len(search.finished)
        entry.merged, entry.first = self, 0

    def admit(self, entry: Entry) -> bool:
        """Join entry's search to this one from the next step on; False when full."""
        own = _vocab_rows(entry.search)
        if self.taken >= MAX_ENTITIES or not len(self.search.entity):
            return False
        if len(self.rows) + int((self.position[own] < 0).sum()) > self.limit:
            self._compact()  # the words only entities that have ended may produce go
            if len(self.rows) + int((self.position[own] < 0).sum()) > self.limit:
                return False
        new = own[self.position[own] < 0]
        if len(new):  # appended: the positions in use keep their words
            old = torch.arange(len(self.rows), device=new.device)
            self._move(torch.cat([self.rows, new]), old)
        entry.search.in_columns(self.position[own], len(self.rows))
        first = len(self.search.finished)
        self.search.join(entry.search)  # changes nothing where it fails
        entry.merged, entry.first = self, first
        entry.search.state = None  # the merged search holds its own copy
        self.entries.append(entry)
        self.taken = len(self.search.finished)
        return True

    def _compact(self) -> None:
        """Keep only the words that entities of requests not yet answered may produce."""
        waiting = torch.cat(
            [torch.arange(self._mine(e).start, self._mine(e).stop) for e in self.entries]
        )
        live = self.search.allowed[waiting.to(self.rows.device)].any(0)  # [U]
        # and every word in a live beam (one at -inf may hold a word no waiting entry may produce)
        live[self.search.tokens.flatten()] = True
        live[self.search.prev] = True
        cols = torch.cumsum(live, 0) - 1
        self._move(self.rows[live], torch.where(live, cols, -1))

    def _move(self, rows: torch.Tensor, cols: torch.Tensor) -> None:
        """The union becomes `rows` (vocabulary ids); cols: each old position's new one."""
        self.rows = rows
        self.position.fill_(-1)
        self.position[rows] = torch.arange(len(rows), device=rows.device)
        self.search.model = ShortlistModel(self.base, rows)
        self.search.in_columns(cols, len(rows))

    def _mine(self, entry: Entry) -> slice:
        return slice(entry.first, entry.first + len(entry.search.finished))

    def running(self, entry: Entry) -> bool:
        """Whether any of entry's entities is still decoding."""
        mine = self._mine(entry)
        entity = self.search.entity
        return bool(((entity >= mine.start) & (entity < mine.stop)).any())

    def cancel(self, entry: Entry) -> None:
        self.search.cancelled[self._mine(entry)] = True

    def results(self, entry: Entry) -> list[list[Hypothesis]]:
        """entry's entities' finished hypotheses, their words in its own positions."""
        own = entry.search.model
        back = own.position if isinstance(own, ShortlistModel) else None
        out = []
        for hyps in self.search.finished[self._mine(entry)]:
            moved = []
            for h in hyps:
                ids = self.rows[h.tokens] if h.tokens else self.rows[:0]
                tokens = (ids if back is None else back[ids]).tolist()
                moved.append(dataclasses.replace(h, tokens=tokens))
            out.append(moved)
            hyps.clear()  # delivered: nothing to move when the union changes
        self.entries.remove(entry)
        return out
