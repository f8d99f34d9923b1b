"""What a run reads: review sets one at a time, from a review-set file, standard input or a
review corpus grouped by entity, then cut into batches.

Memory is bounded by the batch, not the input: review sets are read one at a time from a
review-set JSONL file (or standard input), or grouped from a review corpus with an external sort
(`group_corpus`: runs of at most `SPILL_REVIEWS` reviews sorted on disk, then merged). A file
input is read once first (`count_sets`: its size, for the ETA; bad records and, with --strict,
unreadable sets refused before any decoding); standard input is not. With --by-length, windows
of 16 batches are decoded shortest first (`batches`).

An input is read as `Source` says: its path, the fields holding the entity, the text and the
stars (a corpus's stars go with its reviews to the summarizer), and whether bad records are
skipped (counted in `Source.skipped`) or stop the run. No review set read, after any skipping,
is an error naming the input: a mistyped glob or an empty export must not pass as a run.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from denoisesum.data.corpus import FieldNames, SkipLog
from denoisesum.errors import DenoiseSumError, InputError

SPILL_REVIEWS = 200_000  # a corpus's reviews held in memory at once while grouping


@dataclass
class Source:
    """An input to summarize: a file or '-' (review-set JSONL on standard input), the fields of
    a corpus's records, and --skip-bad. Each `sets()` reads it anew; `skipped` counts the bad
    records the last reading skipped."""

    path: str
    fields: FieldNames = field(default_factory=FieldNames)
    skip_bad: bool = False
    skipped: SkipLog = field(default_factory=SkipLog)

    def sets(self) -> Iterator[Any]:
        self.skipped = SkipLog()
        return review_sets(self.path, self.fields, self.skip_bad, self.skipped)

    def empty(self) -> InputError:
        """The error of an input with no review set (after any skipping)."""
        name = "standard input" if self.path == "-" else self.path
        why = f" ({self.skipped.count} bad record(s) skipped)" if self.skipped.count else ""
        return InputError(f"no reviews: nothing to summarize{why}", path=name)


def _first_record(path: str) -> Any:
    from denoisesum.io import iter_jsonl

    with contextlib.closing(iter_jsonl(path)) as records:
        for _, value in records:
            return value
    return None


def review_sets(
    source: str,
    fields: FieldNames | None = None,
    skip_bad: bool = False,
    skipped: SkipLog | None = None,
) -> Iterator[Any]:
    """ReviewSets one at a time from a review-set JSONL file, standard input ('-'), or a review
    corpus (one review per record: .csv/.tsv/.parquet, or .jsonl whose first record has no
    'reviews' field), grouped by entity in order of each entity's first review, with its
    reviews' stars where the corpus has them. skip_bad: bad records are added to `skipped`."""
    from denoisesum.data.corpus import CorpusReader
    from denoisesum.data.reviewsets import read_review_sets, read_review_sets_stream
    from denoisesum.io import require_file, split_suffixes

    fields = fields or FieldNames()
    skipped = skipped if skip_bad else None
    if source == "-":
        yield from read_review_sets_stream(sys.stdin.buffer, skipped=skipped)
        return
    if split_suffixes(source)[0] in {".jsonl", ".json", ".ndjson"}:
        require_file(source)
        first = _first_record(source)
        if not (isinstance(first, dict) and "reviews" not in first and fields.text in first):
            yield from read_review_sets(source, skipped=skipped)
            return
    reader = CorpusReader([source], fields, skip_bad=skip_bad)
    yield from group_corpus(reader)
    if skipped is not None:
        skipped.count, skipped.examples = reader.skipped.count, reader.skipped.examples


def group_corpus(reviews: Iterable[Any], limit: int = SPILL_REVIEWS) -> Iterator[Any]:
    """ReviewSets from reviews (entity_id, text, rating) in any order, grouped by entity in
    order of each entity's first review, each entity's reviews in their order (with their
    stars when any of them has some): in memory when there are at most `limit` reviews, else
    by an external merge sort (sorted runs of `limit` reviews in a temporary directory,
    merged), so memory holds `limit` reviews and the entity ids."""
    from denoisesum.data.reviewsets import ReviewSet

    order: dict[str, int] = {}  # entity -> rank of its first review
    buffer: list[tuple[int, str, float | None]] = []
    with tempfile.TemporaryDirectory(prefix="denoisesum-group-") as spill:
        runs: list[Path] = []

        def flush() -> None:
            buffer.sort(key=lambda item: item[0])  # stable: each entity's reviews in order
            run = Path(spill) / f"run{len(runs)}.jsonl"
            with run.open("w", encoding="utf-8") as handle:
                handle.writelines(json.dumps(item, ensure_ascii=False) + "\n" for item in buffer)
            runs.append(run)
            buffer.clear()

        for review in reviews:
            rank = order.setdefault(review.entity_id, len(order))
            buffer.append((rank, review.text, getattr(review, "rating", None)))
            if len(buffer) >= limit:
                flush()
        if runs and buffer:
            flush()
        ids = list(order)
        del order
        if runs:
            handles = [run.open(encoding="utf-8") for run in runs]
            try:
                merged = heapq.merge(
                    *((tuple(json.loads(line)) for line in h) for h in handles),
                    key=lambda item: item[0],
                )  # stable across runs
                yield from _grouped(merged, ids, ReviewSet)
            finally:
                for handle in handles:
                    handle.close()
        else:
            buffer.sort(key=lambda item: item[0])
            yield from _grouped(iter(buffer), ids, ReviewSet)


def _grouped(items: Iterator[tuple[int, str, float | None]], ids: list[str], kind) -> Iterator[Any]:
    rank, texts, stars = None, [], []

    def made():
        rated = stars if any(s is not None for s in stars) else []
        return kind(entity_id=ids[rank], reviews=texts, ratings=rated)

    for r, text, rating in items:
        if r != rank and texts:
            yield made()
            texts, stars = [], []
        rank = r
        texts.append(text)
        stars.append(rating)
    if texts:
        yield made()


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def batches(
    sets: Iterable[Any],
    size: int,
    done: set[str] | frozenset = frozenset(),
    by_length: Callable[[Any], float] | None = None,
    window: int = 16,
) -> Iterator[list[Any]]:
    """Batches of `size` review sets, those whose entity is `done` left out. With `by_length`
    (a set's cost), each window of `window` x `size` sets (taken from the whole input, done ones
    included, so that a resumed run makes the same batches) is decoded shortest first, so that
    a batch pads less and its entities finish together."""
    if by_length is None:
        yield from _chunks((s for s in sets if s.entity_id not in done), size)
        return
    for group in _chunks(sets, size * window):
        group.sort(key=by_length)  # stable: ties in input order
        yield from _chunks((s for s in group if s.entity_id not in done), size)


def cost(summarizer) -> Callable[[Any], float]:
    """A review set's decoding cost, cheaply: the characters the model reads (its reviews, each
    cut to about max_review_tokens words, as many as it reads)."""
    cap = summarizer.config.max_review_tokens * 6  # ~characters per token, with the space

    def of(review_set) -> float:
        reviews = review_set.reviews[: summarizer.config.max_reviews]
        lengths = [min(len(r), cap) for r in reviews]
        read = summarizer.read_count(len(reviews))
        return sum(lengths) * read / len(lengths) if lengths else 0.0

    return of


def unreadable_lines(summarizer, sets: Iterable[Any]) -> Iterator[tuple[str, list[str]]]:
    for review_set in sets:
        if found := summarizer.input_warnings(review_set.reviews):
            yield review_set.entity_id, found


def readable(summarizer, todo: Iterable[list[Any]]) -> Iterator[list[Any]]:
    """The batches, each checked (--strict on standard input: no reading ahead)."""
    for batch in todo:
        found = list(unreadable_lines(summarizer, batch))
        if found:
            raise strict_error(found[:5], len(found))
        yield batch


def strict_error(flagged: list[tuple[str, list[str]]], count: int) -> DenoiseSumError:
    lines = [f"entity {entity}: {w}" for entity, found in flagged for w in found]
    more = f"; and {count - len(flagged)} more set(s)" if count > len(flagged) else ""
    return DenoiseSumError(
        f"--strict: {count} review set(s) the model cannot read: " + "; ".join(lines[:5]) + more
    )


def count_sets(
    sets: Iterable[Any], summarizer, strict: bool, done: set[str], every: float
) -> tuple[int, int]:
    """Read every review set once (validating them: a bad record is an error before any
    decoding): their number and how many of them are `done`, for the ETA; with `strict`,
    refuse unreadable ones. A large input is not read in silence: a line every `every` s."""
    count, already, flagged, n_flagged = 0, 0, [], 0
    last = time.monotonic()
    for review_set in sets:
        count += 1
        if time.monotonic() - last >= every:
            last = time.monotonic()
            print(
                f"summarize: reading the input first, {count} review sets so far",
                file=sys.stderr,
                flush=True,
            )
        already += review_set.entity_id in done
        if strict and (found := summarizer.input_warnings(review_set.reviews)):
            n_flagged += 1
            if len(flagged) < 5:
                flagged.append((review_set.entity_id, found))
    if n_flagged:
        raise strict_error(flagged, n_flagged)
    return count, already
