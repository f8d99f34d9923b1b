"""Streaming reader for review corpora: one review per record, grouped by an entity id.

Formats by extension: JSONL (.jsonl/.json), CSV (.csv), TSV (.tsv), Parquet (.parquet); text
formats may be compressed (.gz, .xz, .zst). Records are yielded one at a time, so a corpus of
any size is read in constant memory.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from denoisesum.errors import CorruptFileError, InputError
from denoisesum.io import (
    BLANK,
    decode_line,
    expand_paths,
    iter_lines,
    parse_json_line,
    split_suffixes,
)

TEXT_FORMATS = {".jsonl", ".json", ".ndjson", ".csv", ".tsv"}
ALL_FORMATS = TEXT_FORMATS | {".parquet"}


@dataclass(frozen=True)
class FieldNames:
    """Which record fields hold what. `rating` and `category` are optional in the data."""

    entity_id: str = "entity_id"
    text: str = "text"
    rating: str = "rating"
    category: str = "category"


@dataclass(slots=True)
class Review:
    entity_id: str
    text: str
    rating: float | None = None
    category: str | None = None


@dataclass
class SkipLog:
    """Bad records skipped under `skip_bad`, with the first few messages kept for the report."""

    count: int = 0
    examples: list[str] = field(default_factory=list)
    keep: int = 10

    def add(self, error: InputError) -> None:
        self.count += 1
        if len(self.examples) < self.keep:
            self.examples.append(str(error))

    def report(self) -> str:
        if not self.count:
            return "no bad records"
        lines = [f"skipped {self.count} bad record(s); first {len(self.examples)}:"]
        return "\n".join(lines + [f"  {msg}" for msg in self.examples])


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def to_review(record: Any, fields: FieldNames, path: Path, line: int, unit: str = "line") -> Review:
    """Validate one raw record and turn it into a Review, or raise InputError saying why."""

    def fail(message: str, name: str | None = None) -> InputError:
        return InputError(message, path=path, line=line, field=name, unit=unit)

    if not isinstance(record, Mapping):
        raise fail(f"expected an object with fields, got {type(record).__name__}")
    entity = record.get(fields.entity_id)
    if _is_missing(entity) or entity == "":
        raise fail("missing field", fields.entity_id)
    if not isinstance(entity, (str, int)) or isinstance(entity, bool):
        raise fail(f"must be a string, got {type(entity).__name__}", fields.entity_id)
    text = record.get(fields.text)
    if _is_missing(text):
        raise fail("missing field", fields.text)
    if not isinstance(text, str):
        raise fail(f"must be a string, got {type(text).__name__}", fields.text)
    if not text.strip():
        raise fail("empty text", fields.text)
    return Review(
        str(entity),
        text,
        _rating(record.get(fields.rating), fail, fields.rating),
        _category(record.get(fields.category), fail, fields.category),
    )


def _rating(value: Any, fail, name: str) -> float | None:
    if _is_missing(value) or value == "":
        return None
    if isinstance(value, bool):
        raise fail(f"must be a number, got {value!r}", name)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise fail(f"must be a number, got {value!r}", name) from None


def _category(value: Any, fail, name: str) -> str | None:
    if _is_missing(value) or value == "":
        return None
    if not isinstance(value, str):
        raise fail(f"must be a string, got {type(value).__name__}", name)
    return value


def _jsonl_records(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield (line, record); a bad line is yielded as its InputError so reading can go on."""
    for line_no, raw in iter_lines(path):
        try:
            value = parse_json_line(raw, path, line_no)
        except InputError as exc:
            yield line_no, exc
            continue
        if value is not BLANK:
            yield line_no, value


def _csv_records(path: Path, delimiter: str, fields: FieldNames) -> Iterator[tuple[int, Any]]:
    """Yield (line, row dict). A record may span lines (quoted newlines) in CSV, not in TSV."""
    bad_lines: dict[int, InputError] = {}

    def decoded() -> Iterator[str]:
        for line_no, raw in iter_lines(path):
            try:
                yield decode_line(raw, path, line_no)
            except InputError as exc:
                bad_lines[line_no] = exc
                yield raw.decode("utf-8", errors="replace")

    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    # strict: without it an unterminated quote quietly makes the rest of the file one field
    reader = csv.reader(decoded(), delimiter=delimiter, quoting=quoting, strict=True)
    rows = _csv_rows(reader, path)
    try:
        _, header = next(rows)
    except StopIteration:
        return
    if 1 in bad_lines:
        raise bad_lines[1]
    if isinstance(header, InputError):
        raise header
    for required in (fields.entity_id, fields.text):
        if required not in header:
            raise InputError(
                f"header has no such column (columns: {', '.join(header)})",
                path=path,
                line=1,
                field=required,
            )
    for line, row in rows:
        end = reader.line_num
        bad = next((bad_lines[n] for n in range(line, end + 1) if n in bad_lines), None)
        if bad is not None:
            yield line, bad
            continue
        if isinstance(row, InputError):
            yield line, row
            continue
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            yield (
                line,
                InputError(
                    f"expected {len(header)} columns, found {len(row)}", path=path, line=line
                ),
            )
            continue
        yield line, dict(zip(header, row, strict=True))


def _csv_rows(reader, path: Path) -> Iterator[tuple[int, list[str] | InputError]]:
    """Yield (first line, row) from a csv reader; a malformed row as its InputError. Quoting
    broken past repair (a quote never closed, a field past the size limit) is a
    CorruptFileError: what follows cannot be read as rows."""
    while True:
        start = reader.line_num + 1
        try:
            yield start, next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            message = str(exc)
            if "unexpected end of data" in message:
                raise CorruptFileError(
                    "unterminated quote: a quoted field of this row runs to "
                    f"the end of the file (line {reader.line_num}), taking "
                    "in every row after it",
                    path=path,
                    line=start,
                ) from exc
            if "field larger than field limit" in message:
                raise CorruptFileError(
                    f"a field longer than {csv.field_size_limit():,} "
                    "characters (an unterminated quote?)",
                    path=path,
                    line=start,
                ) from exc
            if "expected after" in message:  # strict's "',' expected after '\"'"
                message = (
                    "text after a field's closing quote (a quote inside a quoted field "
                    'is written twice: "")'
                )
            yield start, InputError(f"malformed CSV: {message}", path=path, line=start)


def _parquet_records(path: Path, fields: FieldNames) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise InputError(f"not a readable Parquet file: {exc}", path=path) from exc
    names = parquet.schema_arrow.names
    for required in (fields.entity_id, fields.text):
        if required not in names:
            raise InputError(
                f"no such column (columns: {', '.join(names)})", path=path, field=required
            )
    wanted = [
        n for n in (fields.entity_id, fields.text, fields.rating, fields.category) if n in names
    ]
    row = 0
    for batch in parquet.iter_batches(batch_size=8192, columns=wanted):
        for record in batch.to_pylist():
            row += 1
            yield row, record


def _records(path: Path, fields: FieldNames) -> Iterator[tuple[int, Any]]:
    suffix, compression = split_suffixes(path)
    if suffix in {".jsonl", ".json", ".ndjson"}:
        return _jsonl_records(path)
    if suffix in {".csv", ".tsv"}:
        return _csv_records(path, "\t" if suffix == ".tsv" else ",", fields)
    if suffix == ".parquet":
        if compression:
            raise InputError(
                f"Parquet is compressed internally; do not wrap it in {compression}", path=path
            )
        return _parquet_records(path, fields)
    raise InputError(
        f"unknown format '{suffix}' (use one of: {', '.join(sorted(ALL_FORMATS))}, "
        "optionally with .gz, .xz or .zst)",
        path=path,
    )


class CorpusReader:
    """Iterate over the reviews of one or more files (paths or glob patterns), streaming.

    With `skip_bad=True`, bad records are counted in `self.skipped` instead of raising.
    """

    def __init__(
        self,
        paths: Iterable[str | Path] | str | Path,
        fields: FieldNames | None = None,
        skip_bad: bool = False,
    ) -> None:
        if isinstance(paths, (str, Path)):
            paths = [paths]
        self.paths = expand_paths(paths)
        self.fields = fields or FieldNames()
        self.skip_bad = skip_bad
        self.skipped = SkipLog()
        for path in self.paths:  # fail fast on an unknown extension, before any reading
            if split_suffixes(path)[0] not in ALL_FORMATS:
                _records(path, self.fields)

    def __iter__(self) -> Iterator[Review]:
        self.skipped = SkipLog()
        for path in self.paths:
            unit = "row" if split_suffixes(path)[0] == ".parquet" else "line"
            records = _records(path, self.fields)
            while True:
                try:
                    line, record = next(records)
                    if isinstance(record, InputError):
                        raise record
                    yield to_review(record, self.fields, path, line, unit)
                except StopIteration:
                    break
                except InputError as exc:
                    if not self.skip_bad or exc.line is None or isinstance(exc, CorruptFileError):
                        raise
                    self.skipped.add(exc)


def estimate_records(paths: Iterable[Path]) -> int:
    """Upper bound on the number of records (lines, minus CSV headers; Parquet row counts)."""
    from denoisesum.io import count_lines

    total = 0
    for path in paths:
        suffix = split_suffixes(path)[0]
        if suffix == ".parquet":
            import pyarrow.parquet as pq  # the parquet extra: only for Parquet files

            total += pq.ParquetFile(path).metadata.num_rows
        else:
            total += count_lines(path) - (suffix in {".csv", ".tsv"})
    return max(total, 0)
