"""Continuous batching: every running request's beam search advances one step per model call.

The service's worker (worker.py) decodes each request in a thread of its own, through the
summarizer's usual code (summarize_results); that thread's beam searches are handed to a
`Stepper` (beam.stepped_by) instead of running alone. The worker thread then steps every search
that is running, whichever request it belongs to, in one model call per step (`merged_step`),
and a request that arrives while others decode joins them at the next step instead of waiting
for their batch to end. Each search keeps its own bookkeeping (beams, constraints, finished
hypotheses: beam._Search.take), so joining changes nothing but the shared matrix products.

Between steps the worker checks each request's deadline: a request past its time limit has its
search ended there (its request has had its 504), and the others go on.

One model call for searches that differ:
- their sources differ in length: each branch's keys, values, mask and copy ids (one per pair,
  models/denoisesum.py) are padded to the longest with masked positions, which attention gives
  weight 0, so a pair's step is what it would be alone;
- their shortlists differ (inference/shortlist.py: the common words plus each request's own):
  the call scores the union of their rows, and each search reads its own words' columns, in its
  own positions. As in a batch decoded together, the softmax is normalised over that union.
- their beam sizes (a per-request option) or models differ: such searches go in separate calls.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from denoisesum.inference.shortlist import ShortlistModel
from denoisesum.models.denoisesum import BranchState, DecodeState, DenoiseSum


@dataclass
class Entry:
    """A search handed to the stepper by a request's thread, until it has ended."""

    search: Any  # beam._Search
    late: Callable[[], bool]  # whether its request's time limit has passed
    autocast: tuple[bool, torch.dtype]  # the precision its thread asked for (Summarizer)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class Stepper:
    """The searches of every running request, stepped together by the worker thread."""

    def __init__(self, cond: threading.Condition) -> None:
        self._cond = cond  # the queue's: a new search wakes the worker
        self._entries: list[Entry] = []
        self._merged = _MergedSource()
        self.steps = 0  # model calls made (merged steps)
        self.rows = 0  # beam rows stepped, summed over those calls

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
        for entry in entries:
            entry.done.set()

    def round(self) -> None:
        """One step of every running search (in the worker thread): searches of late requests
        end first, the others go in as few model calls as their models and beam sizes allow."""
        with self._cond:
            entries = list(self._entries)
        live = []
        for entry in entries:
            if entry.late():  # its request has had its 504: stop spending steps on it
                entry.search.entity = entry.search.entity[:0]
            elif len(entry.search.entity):
                live.append(entry)
        groups: dict[tuple, list[Entry]] = {}
        for entry in live:
            groups.setdefault(_group_key(entry), []).append(entry)
        for key, group in groups.items():
            self._step(group, key)
        ended = [e for e in entries if e.error is not None or not len(e.search.entity)]
        if ended:
            with self._cond:
                self._entries = [e for e in self._entries if e not in ended]
            for entry in ended:
                entry.done.set()

    def _step(self, group: list[Entry], key: tuple) -> None:
        base, _, (enabled, dtype) = key
        device = group[0].search.device.type
        try:
            with torch.no_grad(), torch.autocast(device, dtype, enabled=enabled):
                if base is None:  # a model merged_step does not know: each alone
                    for entry in group:
                        entry.search.step()
                else:
                    merged_step(base, [e.search for e in group], self._merged)
                    self.steps += 1
                    self.rows += sum(len(e.search.prev) for e in group)
        except Exception as exc:  # one bad search must not fail the others: each alone
            if len(group) == 1 or base is None:
                for entry in group:
                    entry.error = exc
                return
            for entry in group:
                self._step([entry], (None, *key[1:]))


def _group_key(entry: Entry) -> tuple:
    """Searches with the same key go in one model call: the same DenoiseSum, beam size and
    precision (None for the model: a decoding model merged_step does not know)."""
    model = entry.search.model
    base = model.model if isinstance(model, ShortlistModel) else model
    if not isinstance(base, DenoiseSum) or not hasattr(entry.search.state, "select_beams"):
        return (None, id(entry), entry.autocast)
    return (base, entry.search.k, entry.autocast)


def _rows(search) -> torch.Tensor | None:
    """The vocabulary ids of a search's output positions (None: the whole vocabulary)."""
    return search.model.rows if isinstance(search.model, ShortlistModel) else None


def merged_step(base: DenoiseSum, searches: list, cache: _MergedSource) -> None:
    """One decoding step of every search (each on `base`, the same beam size) in one call."""
    rows = [_rows(s) for s in searches]
    union, cols = cache.columns(rows)
    prev = torch.cat(
        [s.prev if r is None else r[s.prev] for s, r in zip(searches, rows, strict=True)]
    )
    state = cache.merge([s.state for s in searches], cols)
    out = cache.out_rows(base, union)
    log_probs, new = base.decode_step(state, prev, *out)  # [sum B*, V or |union|]
    start = 0
    for search, col in zip(searches, cols, strict=True):
        n = len(search.prev)
        mine = log_probs[start : start + n]
        search.take(mine if col is None else mine[:, col], _share(search.state, new, start, n))
        start += n


def _share(old: DecodeState, new: DecodeState, start: int, n: int) -> DecodeState:
    """A search's part of the merged next state: its rows of what the step changed (decoder
    h, c, coverage), its own source tensors (the very objects, so beam search sees them
    unchanged and moves them only when pairs leave)."""

    def branch(mine: BranchState | None, merged: BranchState | None) -> BranchState | None:
        if mine is None:
            return None
        coverage = merged.coverage
        if coverage is not None:
            coverage = coverage[start : start + n, : mine.mask.shape[1]]
        return dataclasses.replace(
            mine, h=merged.h[start : start + n], c=merged.c[start : start + n], coverage=coverage
        )

    return DecodeState(branch(old.seg, new.seg), branch(old.doc, new.doc), old.opinion)


class _MergedSource:
    """The merged call's state, its source tensors kept between steps: they are rebuilt only
    when a search's source changes (a pair left, a search came or went), not every step."""

    def __init__(self) -> None:
        self._rows: list = []
        self._columns: tuple = (None, [])
        self._key: tuple = ()
        self._sources: dict[str, tuple] = {}
        self._union: torch.Tensor | None = None
        self._out: tuple = (None, None)

    def columns(self, rows: list[torch.Tensor | None]) -> tuple:
        """The union of the searches' shortlists (None: the whole vocabulary, when a search
        has no shortlist), and per search its positions -> the call's output columns (the
        union's, or vocabulary ids); kept while the searches are the same."""
        if len(rows) != len(self._rows) or any(
            a is not b for a, b in zip(rows, self._rows, strict=False)
        ):
            union = None if any(r is None for r in rows) else torch.unique(torch.cat(rows))
            self._columns = (
                union,
                [r if union is None else torch.searchsorted(union, r) for r in rows],
            )
            self._rows = rows
        return self._columns

    def merge(self, states: list[DecodeState], cols: list[torch.Tensor | None]) -> DecodeState:
        key = tuple(
            t for s in states for b in (s.seg, s.doc) if b is not None for t in (b.values, b.ids)
        )
        if len(key) != len(self._key) or any(
            a is not b for a, b in zip(key, self._key, strict=False)
        ):
            self._sources = {
                name: self._pad([getattr(s, name) for s in states], cols if name == "doc" else None)
                for name in ("seg", "doc")
                if getattr(states[0], name) is not None
            }
            self._key = key
        opinion = None if states[0].opinion is None else torch.cat([s.opinion for s in states])
        return DecodeState(
            *(self._branch(name, [getattr(s, name) for s in states]) for name in ("seg", "doc")),
            opinion,
        )

    def _branch(self, name: str, parts: list[BranchState | None]) -> BranchState | None:
        if parts[0] is None:
            return None
        keys, values, mask, ids = self._sources[name]
        coverage = None
        if parts[0].coverage is not None:
            width = mask.shape[1]
            coverage = torch.cat(
                [F.pad(p.coverage, (0, width - p.coverage.shape[1])) for p in parts]
            )
        return BranchState(
            torch.cat([p.h for p in parts]),
            torch.cat([p.c for p in parts]),
            keys,
            values,
            mask,
            ids,
            torch.cat([p.present for p in parts]),
            coverage,
            parts[0].beams,
        )

    @staticmethod
    def _pad(parts: list[BranchState], cols: list[torch.Tensor | None] | None) -> tuple:
        """(keys, values, mask, ids) of every pair of every search, padded to the longest
        source; with `cols`, the ids (decoder d's copy source, in each search's positions)
        mapped to the call's output columns."""
        width = max(p.mask.shape[1] for p in parts)

        def cat(tensors: list[torch.Tensor], dim: int = 1) -> torch.Tensor:
            # F.pad's pairs run from the last dimension back: `dim` padded at its end
            def pad(t: torch.Tensor) -> torch.Tensor:
                return F.pad(t, [0, 0] * (t.dim() - 1 - dim) + [0, width - t.shape[dim]])

            return torch.cat([pad(t) for t in tensors])

        cols = cols or [None] * len(parts)
        ids = [p.ids if c is None else c[p.ids] for p, c in zip(parts, cols, strict=True)]
        return (
            cat([p.keys for p in parts], dim=2),
            cat([p.values for p in parts]),
            cat([p.mask for p in parts]),
            cat(ids),
        )

    def out_rows(self, base: DenoiseSum, union: torch.Tensor | None) -> tuple:
        """Each decoder's output layer over the union's rows (None, None: every word)."""
        if union is None:
            return None, None
        if union is not self._union:
            self._union = union
            self._out = tuple(
                None if b is None else (b.decoder.out.weight[union], b.decoder.out.bias[union])
                for b in (base.seg, base.doc)
            )
        return self._out
