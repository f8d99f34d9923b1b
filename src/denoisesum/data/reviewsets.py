"""Review-set and prediction files, the formats every later stage reads and writes.

Review set (JSONL, one entity per line):
    {"entity_id": str, "reviews": [str, ...], "summaries": [str, ...], "ratings": [number, ...]}
    summaries optional; ratings optional: each review's stars (null where unknown), which the
    summarizer follows as the reviews' opinion
Prediction (JSONL, one entity per line):
    {"entity_id": str, "summary": str}
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from denoisesum.errors import InputError, plain_validation_message
from denoisesum.io import BLANK, atomic_write, iter_lines, parse_json_line, writing

if TYPE_CHECKING:
    from denoisesum.data.corpus import Review, SkipLog


class ReviewSet(BaseModel):
    model_config = ConfigDict(extra="ignore")

    entity_id: StrictStr = Field(min_length=1)
    reviews: list[StrictStr] = Field(min_length=1)
    summaries: list[StrictStr] = Field(default_factory=list)
    ratings: list[float | None] = Field(default_factory=list)

    @field_validator("ratings")
    @classmethod
    def _finite_ratings(cls, ratings: list[float | None]) -> list[float | None]:
        for i, value in enumerate(ratings):
            if value is not None and not math.isfinite(value):
                raise ValueError(f"rating {i} is not a finite number")
        return ratings

    @model_validator(mode="after")
    def _one_rating_per_review(self) -> ReviewSet:
        if self.ratings and len(self.ratings) != len(self.reviews):
            raise ValueError(
                f"ratings has {len(self.ratings)} values for "
                f"{len(self.reviews)} reviews (one per review, null if unknown)"
            )
        return self

    @field_validator("reviews")
    @classmethod
    def _no_empty_review(cls, reviews: list[str]) -> list[str]:
        for i, text in enumerate(reviews):
            if not text.strip():
                raise ValueError(f"review {i} is empty")
        return reviews


class Prediction(BaseModel):
    model_config = ConfigDict(extra="ignore")

    entity_id: StrictStr = Field(min_length=1)
    summary: StrictStr


Record = TypeVar("Record", ReviewSet, Prediction)


def _validate(
    records: Iterable[tuple[int, Any]],
    kind: type[Record],
    path: str | Path,
    skipped: SkipLog | None = None,
) -> Iterator[Record]:
    """The records of (line, value or the InputError of a line that does not parse); a bad one
    is an error, or with `skipped` (--skip-bad) counted there and left out."""
    seen: set[str] = set()
    for line, value in records:
        try:
            if isinstance(value, InputError):
                raise value
            record = _checked(kind, value, path, line)
            if record.entity_id in seen:
                raise InputError(
                    f"duplicate entity_id '{record.entity_id}'",
                    path=path,
                    line=line,
                    field="entity_id",
                )
        except InputError as exc:
            if skipped is None:
                raise
            skipped.add(exc)
            continue
        seen.add(record.entity_id)
        yield record


def _checked(kind: type[Record], value: Any, path: str | Path, line: int) -> Record:
    try:
        return kind.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        message = plain_validation_message(err)
        if field is None and err["type"] == "model_type":  # the line is not an object
            required = [n for n, f in kind.model_fields.items() if f.is_required()]
            message += f" with {' and '.join(required)}"
        raise InputError(message, path=path, line=line, field=field) from None


def _parsed(lines: Iterable[tuple[int, bytes]], name: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, its JSON value, or the InputError saying why it is not JSON), blank lines
    left out."""
    for number, raw in lines:
        try:
            value = parse_json_line(raw, name, number)
        except InputError as exc:
            value = exc
        if value is not BLANK:
            yield number, value


def _read(path: str | Path, kind: type[Record], skipped: SkipLog | None = None) -> Iterator[Record]:
    return _validate(_parsed(iter_lines(path), path), kind, path, skipped)


def read_review_sets_stream(
    stream: IO[bytes], name: str = "<stdin>", skipped: SkipLog | None = None
) -> Iterator[ReviewSet]:
    """Review sets from an open binary stream (standard input); errors name it `name`;
    skipped: bad records counted there and left out (--skip-bad)."""
    return _validate(_parsed(enumerate(stream, start=1), name), ReviewSet, name, skipped)


def review_sets_from_corpus(reviews: Iterable[Review]) -> list[ReviewSet]:
    """Group a review corpus (one review per record, data.corpus.CorpusReader) by entity, in
    order of each entity's first review. Reads everything: for summarizing, not training."""
    groups: dict[str, list[str]] = {}
    for review in reviews:
        groups.setdefault(review.entity_id, []).append(review.text)
    return [ReviewSet(entity_id=e, reviews=texts) for e, texts in groups.items()]


def read_review_sets(path: str | Path, skipped: SkipLog | None = None) -> Iterator[ReviewSet]:
    """Review sets from a file; skipped: bad records counted there and left out (--skip-bad)."""
    return _read(path, ReviewSet, skipped)


def read_predictions(path: str | Path) -> Iterator[Prediction]:
    return _read(path, Prediction)


def _record(record: BaseModel) -> dict:
    """A record as written: a review set without ratings has no "ratings" key."""
    out = record.model_dump()
    if out.get("ratings") == []:
        del out["ratings"]
    return out


def _write(path: str | Path, records: Iterable[BaseModel]) -> None:
    lines = (json.dumps(_record(r), ensure_ascii=False) + "\n" for r in records)
    if str(path) == "-":
        with writing(path):  # > /dev/full: one line naming standard output
            sys.stdout.writelines(lines)
            sys.stdout.flush()
        return
    with atomic_write(path) as handle:
        handle.writelines(lines)


def write_review_sets(path: str | Path, sets: Iterable[ReviewSet]) -> None:
    _write(path, sets)


def write_predictions(path: str | Path, predictions: Iterable[Prediction]) -> None:
    _write(path, predictions)
