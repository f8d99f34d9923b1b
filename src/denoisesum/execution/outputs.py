"""Bulk summarizing (`denoisesum summarize`): review sets streamed a batch at a time, output
appended batch by batch so that a killed run resumes, progress lines, and output formats.

Memory is bounded by the batch, not the input: review sets are read one at a time from a
review-set JSONL file (or standard input), or grouped from a review corpus with an external sort
(`group_corpus`: runs of at most `SPILL_REVIEWS` reviews sorted on disk, then merged). The only
state that grows with the input is a set of entity ids (duplicates are refused; resume skips the
ids already written). A file input is read once first (its size, for the ETA; bad records and,
with --strict, unreadable sets refused before any decoding); standard input is not. With
--by-length, windows of 16 batches are decoded shortest first (`batches`). On a CPU with 2 or
more torch threads, a file of 2 batches or more is decoded by a worker process per thread
(`worker_processes`, cluster.ProcessPool), written here in input order; fewer batches, two at
once on two threads (`side_by_side`).

Resume. With `-o FILE`, each batch's records are appended as whole lines, flushed and fsynced, so
a killed run loses at most the batch in flight. `FILE.settings.json` (the sidecar) records what
made the file (the model's files, every summarizing setting, slice, --raw, --explain, the input
fields); rerunning the same command drops a truncated last line, skips the entities already in
FILE and appends the rest. A file made with other settings, or one with no sidecar, is refused
(naming what differs) unless --overwrite starts over. Formats by FILE's extension: .jsonl, .csv
(the same, one row per entity), .parquet (a JSONL spool `FILE.partial.jsonl` that resumes the
same way, turned into FILE atomically at the end, in row groups), .txt (the --text format:
written to a temporary and renamed at the end; not resumable).
"""

from __future__ import annotations

import collections
import contextlib
import csv
import hashlib
import heapq
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any

from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.extras import require

OUTPUT_FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}
SPILL_REVIEWS = 200_000  # a corpus's reviews held in memory at once while grouping
PARQUET_ROWS = 10_000  # rows per row group of a .parquet output
FIELDS = (
    "entity_id",
    "summary",
    "reviews_read",
    "reviews_total",
    "warnings",
    "support",
    "attribution",
)
EXPLAINED = ("support", "attribution")  # columns written with --explain (JSON)
# seconds between progress lines when standard error is not a terminal
PROGRESS_SECONDS = float(os.environ.get("DENOISESUM_PROGRESS_SECONDS", "10"))


# ---- what is written --------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputOptions:
    """What decides an output's records besides the model and its summarizing settings: the
    reviews summarized (--slice: all, complaints, praise), the tokenized form (--raw), each
    sentence's support (--explain), the text format (--text) and the input's fields."""

    slice_: str = "all"
    method: str | None = None  # the summarizing method (None: the model's default)
    raw: bool = False
    explain: bool = False
    as_text: bool = False
    entity_field: str = "entity_id"
    text_field: str = "text"

    def recorded(self) -> dict[str, Any]:
        """As the settings sidecar records them: slice_ as slice; not as_text (the output's
        format stands for it)."""
        return {
            f.name.rstrip("_"): getattr(self, f.name) for f in fields(self) if f.name != "as_text"
        }


DEFAULT_OUTPUT = OutputOptions()


# ---- output format ---------------------------------------------------------------------------


def output_format(output: str, as_text: bool) -> str:
    """The format an output is written in: by -o's extension (OUTPUT_FORMATS); standard output
    and files that are not regular (a device, a FIFO: written through) are JSONL, or text with
    --text. An unknown extension, or --text into a file that is not .txt, is an error."""
    path = Path(output)
    if output == "-" or (path.exists() and not path.is_file() and not path.is_dir()):
        return "text" if as_text else "jsonl"
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise InputError(
            f"unknown output format {suffix or '(no extension)'!r}: the extension "
            f"chooses it, one of {', '.join(OUTPUT_FORMATS)} (.txt: the --text "
            "format)",
            path=output,
            field="--output",
        )
    if as_text and suffix != ".txt":
        raise InputError(
            "--text writes readable text: give -o a .txt file (or leave -o out for "
            "standard output), or leave --text out for a data file",
            path=output,
            field="--output",
        )
    if suffix == ".parquet":
        require("pyarrow", "a .parquet output")  # said before any work, not after it
    return OUTPUT_FORMATS[suffix]


# ---- input: review sets, one at a time -------------------------------------------------------


def _first_record(path: str) -> Any:
    from denoisesum.io import iter_jsonl

    with contextlib.closing(iter_jsonl(path)) as records:
        for _, value in records:
            return value
    return None


def review_sets(
    source: str, entity_field: str = "entity_id", text_field: str = "text"
) -> Iterator[Any]:
    """ReviewSets one at a time from a review-set JSONL file, standard input ('-'), or a review
    corpus (one review per record: .csv/.tsv/.parquet, or .jsonl whose first record has no
    'reviews' field), grouped by entity in order of each entity's first review."""
    from denoisesum.data.corpus import CorpusReader, FieldNames
    from denoisesum.data.reviewsets import read_review_sets, read_review_sets_stream
    from denoisesum.io import require_file, split_suffixes

    if source == "-":
        yield from read_review_sets_stream(sys.stdin.buffer)
        return
    if split_suffixes(source)[0] in {".jsonl", ".json", ".ndjson"}:
        require_file(source)
        first = _first_record(source)
        if not (isinstance(first, dict) and "reviews" not in first and text_field in first):
            yield from read_review_sets(source)
            return
    reader = CorpusReader([source], FieldNames(entity_id=entity_field, text=text_field))
    yield from group_corpus(reader)


def group_corpus(reviews: Iterable[Any], limit: int = SPILL_REVIEWS) -> Iterator[Any]:
    """ReviewSets from reviews (entity_id, text) in any order, grouped by entity in order of
    each entity's first review, each entity's reviews in their order: in memory when there are
    at most `limit` reviews, else by an external merge sort (sorted runs of `limit` reviews in a
    temporary directory, merged), so memory holds `limit` reviews and the entity ids."""
    from denoisesum.data.reviewsets import ReviewSet

    order: dict[str, int] = {}  # entity -> rank of its first review
    buffer: list[tuple[int, str]] = []
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
            buffer.append((rank, review.text))
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


def _grouped(items: Iterator[tuple[int, str]], ids: list[str], kind) -> Iterator[Any]:
    rank, texts = None, []
    for r, text in items:
        if r != rank and texts:
            yield kind(entity_id=ids[rank], reviews=texts)
            texts = []
        rank = r
        texts.append(text)
    if texts:
        yield kind(entity_id=ids[rank], reviews=texts)


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


def _readable(summarizer, todo: Iterable[list[Any]]) -> Iterator[list[Any]]:
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


# ---- records ---------------------------------------------------------------------------------


def summarize_batch(
    summarizer,
    batch: list[Any],
    options: OutputOptions,
    say: Callable[[str], None] | None = None,
) -> tuple[list[dict], list[str]]:
    """The records of one batch of ReviewSets (entity_id, then the Summarizer's SummaryResult
    as JSON: summary, reviews_read and reviews_total, warnings, support with --explain), and
    with --text their text blocks; each warning is said on standard error naming its entity
    (or passed to `say`: a Dask worker hands them back to the command)."""
    say = say or (lambda line: print(line, file=sys.stderr))
    results = summarizer.summarize_results(
        [s.reviews for s in batch],
        [s.ratings or None for s in batch],
        options.explain,
        method=options.method,
        slice=options.slice_,
        batch_size=len(batch),
        raw=options.raw,
    )
    records, texts = [], []
    for review_set, result in zip(batch, results, strict=True):
        records.append({"entity_id": review_set.entity_id, **result.to_dict()})
        for w in result.warnings:
            say(f"warning: entity {review_set.entity_id}: {w}")
        if options.as_text:
            texts.append(text_block(review_set.entity_id, result))
    return records, texts


def text_block(entity_id: str, result) -> str:
    """The --text format of one summary: its entity, the summary, its warnings and reading,
    and with --explain each sentence's support."""
    from denoisesum.inference.support import format_explanation

    flagged = "".join(f"  warning: {w}\n" for w in result.warnings)
    if result.reviews_read is not None:
        flagged += f"  read {result.reviews_read} of {result.reviews_total} reviews\n"
    support = result.explanation
    if support is not None and result.attribution:
        flagged += "".join(
            f"    {a.share} ({', '.join(map(str, a.reviews))}): {a.text}\n"
            for a in result.attribution
        )
    return f"{entity_id}\n  {result.summary}\n{flagged}" + (
        format_explanation(support, "    ") + "\n" if support else ""
    )


# ---- settings sidecar ------------------------------------------------------------------------


def sidecar(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".settings.json")


def spool(output: str | Path) -> Path:
    """A .parquet output's JSONL spool (resumable), made into the .parquet at the end."""
    output = Path(output)
    return output.with_name(output.name + ".partial.jsonl")


def model_fingerprint(directory: Path) -> dict[str, str]:
    """sha256 of the model directory's files that summarizing reads."""
    from denoisesum.models.store import CONFIG, RATING, VOCAB

    names = [
        CONFIG,
        VOCAB,
        RATING,
        *sorted(p.name for p in directory.glob("*.safetensors")),
        *sorted(p.name for p in directory.glob("*.pt")),
    ]
    out = {}
    for name in names:
        path = directory / name
        if path.is_file():
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
            out[name] = digest.hexdigest()
    return out


def run_settings(summarizer, fmt: str, options: OutputOptions) -> dict[str, Any]:
    """What decides an output's records: the model (its files' hashes), every summarizing
    setting, the format and `options` (slice, raw, explain, the input fields)."""
    import dataclasses

    settings = {
        "model": model_fingerprint(Path(summarizer.path)) if summarizer.path else None,
        "summarize": dataclasses.asdict(summarizer.config),
        "format": fmt,
        **options.recorded(),
        "method": options.method or summarizer.default_method,
    }
    return json.loads(json.dumps(settings))  # as the sidecar holds them (tuples: lists)


def _differences(old: Any, new: Any, key: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            d
            for k in sorted(set(old) | set(new), key=str)
            for d in _differences(old.get(k), new.get(k), f"{key}.{k}" if key else str(k))
        ]
    return [] if old == new else [f"{key}: {json.dumps(old)} there, {json.dumps(new)} now"]


def check_resumable(output: Path, fmt: str, settings: dict) -> bool:
    """Whether `output` has records to resume from (True), or is to be started (False); an
    output made otherwise (no sidecar, other settings) is an error naming what differs."""
    data = spool(output) if fmt == "parquet" else output
    if not data.exists() and not output.exists():
        return False
    start_over = f"to start over, delete {output} (and {sidecar(output).name}) or add --overwrite"
    try:
        saved = json.loads(sidecar(output).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"exists and has no {sidecar(output).name}, so it was not made by a "
            f"resumable summarize run and cannot be continued: {start_over}",
            path=output,
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(
            f"cannot read its settings ({sidecar(output).name}: {exc}): {start_over}", path=output
        ) from None
    differ = _differences(saved.get("settings"), settings)
    if differ:
        shown = "; ".join(differ[:6]) + (f"; and {len(differ) - 6} more" if len(differ) > 6 else "")
        raise InputError(
            f"was made with other settings, so its summaries would not match "
            f"these ({shown}); to continue it, run with its settings "
            f"({sidecar(output).name}); {start_over}",
            path=output,
        )
    return True


def write_sidecar(output: Path, settings: dict, info: dict, complete: bool = False) -> None:
    from denoisesum.io import write_json

    write_json(sidecar(output), {"settings": settings, **info, "complete": complete})


# ---- sinks: where the records go -------------------------------------------------------------


def _repair(path: Path) -> int:
    """Drop a truncated last line (a run killed inside a write): bytes after the last newline.
    Returns the number of bytes dropped."""
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as handle:
        end = size
        while end > 0:
            start = max(0, end - (1 << 16))
            handle.seek(start)
            chunk = handle.read(end - start)
            at = chunk.rfind(b"\n")
            if at >= 0:
                keep = start + at + 1
                break
            end = start
        else:
            keep = 0
        if keep < size:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
    return size - keep


class AppendSink:
    """Whole lines appended to a file, each batch flushed and fsynced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: IO[bytes] | None = None

    def _open(self) -> IO[bytes]:
        if self.handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = self.path.open("ab")
        return self.handle

    def append(self, data: bytes) -> None:
        handle = self._open()
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


class JsonlSink(AppendSink):
    def done(self) -> Iterator[str]:
        """The entity ids already written (after dropping a truncated last line)."""
        if not self.path.exists():
            return
        _repair(self.path)
        with self.path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield json.loads(line)["entity_id"]
                    except (ValueError, KeyError, TypeError):
                        raise InputError(
                            "is not a prediction line (JSON with entity_id)",
                            path=self.path,
                            line=number,
                        ) from None

    def write(self, records: list[dict], texts: list[str]) -> None:
        self.append(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
        )

    def finish(self) -> None:
        self.append(b"")  # an input with no entity: an empty file
        self.close()


class CsvSink(AppendSink):
    """One row per entity: entity_id, summary, reviews_read, reviews_total (empty when the
    model read every review), warnings (a JSON list, or empty), support (a JSON object, with
    --explain)."""

    def __init__(self, path: Path, explain: bool) -> None:
        super().__init__(path)
        self.columns = [c for c in FIELDS if explain or c not in EXPLAINED]

    def done(self) -> Iterator[str]:
        if not self.path.exists():
            return
        _repair(self.path)
        with self.path.open(encoding="utf-8", newline="") as handle:
            rows = csv.reader(handle)
            header = next(rows, None)
            if header is None:
                return
            if header != self.columns:
                raise InputError(f"has columns {header}, not {self.columns}", path=self.path)
            for row in rows:
                if row:
                    yield row[0]

    def write(self, records: list[dict], texts: list[str]) -> None:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        if not self.path.exists() or self.path.stat().st_size == 0:
            writer.writerow(self.columns)
        for record in records:
            writer.writerow([_cell(record.get(c)) for c in self.columns])
        self.append(buffer.getvalue().encode("utf-8"))

    def finish(self) -> None:
        if not self.path.exists():  # an input with no entity: the header alone
            self.write([], [])
        self.close()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


class ParquetSink:
    """Records appended to a JSONL spool beside the output (resumable as JSONL), written into
    the .parquet atomically by `finish`, PARQUET_ROWS rows per row group; a finished .parquet
    that gets more entities is copied into a new spool first."""

    def __init__(self, path: Path, explain: bool) -> None:
        self.path = path
        self.explain = explain
        self.lines = JsonlSink(spool(path))

    def done(self) -> Iterator[str]:
        if self.lines.path.exists():
            yield from self.lines.done()
        elif self.path.exists():
            for record in read_parquet(self.path):
                yield record["entity_id"]

    def write(self, records: list[dict], texts: list[str]) -> None:
        if not self.lines.path.exists() and self.path.exists():
            tmp = self.lines.path.with_name(self.lines.path.name + ".tmp")
            with tmp.open("w", encoding="utf-8") as handle:
                handle.writelines(
                    json.dumps(r, ensure_ascii=False) + "\n" for r in read_parquet(self.path)
                )
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.lines.path)
        self.lines.write(records, texts)

    def finish(self) -> None:
        self.lines.close()
        if not self.lines.path.exists():
            if not self.path.exists():  # no entity at all: an empty table
                write_parquet(self.path, iter(()), self.explain)
            return
        with self.lines.path.open("rb") as handle:
            write_parquet(
                self.path, (json.loads(line) for line in handle if line.strip()), self.explain
            )
        self.lines.path.unlink()


def _schema(explain: bool):
    import pyarrow as pa

    fields = [
        ("entity_id", pa.string()),
        ("summary", pa.string()),
        ("reviews_read", pa.int64()),
        ("reviews_total", pa.int64()),
        ("warnings", pa.list_(pa.string())),
    ]
    if explain:
        fields += [(name, pa.string()) for name in EXPLAINED]  # JSON
    return pa.schema(fields)


def write_parquet(path: Path, records: Iterator[dict], explain: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from denoisesum.io import atomic_write

    schema = _schema(explain)

    def table(rows: list[dict]):
        columns = {name: [r.get(name) for r in rows] for name in schema.names}
        for name in EXPLAINED if explain else ():
            columns[name] = [
                json.dumps(s, ensure_ascii=False) if s is not None else None for s in columns[name]
            ]
        return pa.table(columns, schema=schema)

    with atomic_write(path, "wb") as handle, pq.ParquetWriter(handle, schema) as writer:
        rows: list[dict] = []
        for record in records:
            rows.append(record)
            if len(rows) == PARQUET_ROWS:
                writer.write_table(table(rows))
                rows = []
        if rows:
            writer.write_table(table(rows))


def read_parquet(path: Path) -> Iterator[dict]:
    """A .parquet output's records, as the JSONL output has them (absent fields left out)."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path)
    for group in range(table.num_row_groups):
        for row in table.read_row_group(group).to_pylist():
            record = {k: v for k, v in row.items() if v is not None}
            for name in EXPLAINED:
                if name in record:
                    record[name] = json.loads(record[name])
            yield record


def read_output(path: str | Path) -> list[dict]:
    """The records of a summarize output (.jsonl, .csv or .parquet), as JSONL has them."""
    path = Path(path)
    fmt = output_format(str(path), False)
    if fmt == "parquet":
        return list(read_parquet(path))
    if fmt == "csv":
        out = []
        with path.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                record: dict = {}
                for key, value in row.items():
                    if value == "":
                        continue
                    if key in ("reviews_read", "reviews_total"):
                        record[key] = int(value)
                    elif key in ("warnings", *EXPLAINED):
                        record[key] = json.loads(value)
                    else:
                        record[key] = value
                out.append(record)
        return out
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


class StreamSink:
    """Standard output, a device or a .txt file (through a temporary, renamed at the end):
    JSONL or text, each batch flushed; not resumable."""

    def __init__(self, handle: IO[str], fmt: str) -> None:
        self.handle, self.fmt = handle, fmt

    def done(self) -> Iterator[str]:
        return iter(())

    def write(self, records: list[dict], texts: list[str]) -> None:
        if self.fmt == "text":
            self.handle.write("".join(texts))
        else:
            self.handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        self.handle.flush()  # a reader of standard output sees each batch as it is done

    def finish(self) -> None:
        self.handle.flush()


# ---- progress --------------------------------------------------------------------------------


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    """Entities done, rate (entities/s, of this run's decoding) and ETA on standard error: a
    line redrawn in place on a terminal, else plain lines every `every` seconds (and at the
    end), never carriage-return frames."""

    def __init__(
        self,
        total: int | None,
        skipped: int = 0,
        stream: IO[str] | None = None,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = (0.5 if self.tty else PROGRESS_SECONDS) if every is None else every
        self.total, self.skipped, self.done = total, skipped, 0
        self.clock = clock
        self.start = self.last = clock()

    def line(self) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = self.done / elapsed
        count = self.skipped + self.done
        parts = [
            f"summarize: {count}"
            + (f"/{self.total}" if self.total is not None else "")
            + " entities"
        ]
        if self.total:
            parts[0] += f" ({100 * count / self.total:.0f}%)"
        if self.skipped:
            parts.append(f"{self.skipped} from before")
        parts.append(f"{rate:.2f} entities/s")
        if self.total is not None and self.done:
            parts.append(f"ETA {_duration(max(self.total - count, 0) / rate)}")
        parts.append(f"elapsed {_duration(elapsed)}")
        return ", ".join(parts)

    def update(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            self._say()

    def _say(self, end: bool = False) -> None:
        if self.tty:
            self.stream.write("\r\033[K" + self.line() + ("\n" if end else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        self._say(end=True)


# ---- the run ---------------------------------------------------------------------------------


class Interrupted(Exception):
    """Ctrl-C during a run; says what was kept and how to continue."""


@contextlib.contextmanager
def _interrupts(
    written: Callable[[], int], output: str, resumable: bool, overwrite: bool
) -> Iterator[None]:
    try:
        yield
    except KeyboardInterrupt:
        if resumable:
            again = "without --overwrite " if overwrite else ""
            raise Interrupted(
                f"{written()} summaries of this run are in {output}; run the same "
                f"command {again}again to continue"
            ) from None
        raise Interrupted(f"{written()} summaries written") from None


def count_sets(sets: Iterable[Any], summarizer, strict: bool, done: set[str]) -> tuple[int, int]:
    """Read every review set once (validating them: a bad record is an error before any
    decoding): their number and how many of them are `done`, for the ETA; with `strict`,
    refuse unreadable ones."""
    count, already, flagged, n_flagged = 0, 0, [], 0
    last = time.monotonic()
    for review_set in sets:
        count += 1
        if time.monotonic() - last >= PROGRESS_SECONDS:  # a large input: not silent
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


def _shareable_threads(summarizer, source: str) -> int:
    """torch's threads where two batches can be decoded at once, each with half of them: on a
    CPU, with at least 2 threads, from a file (standard input is never read ahead); else 0."""
    import torch

    threads = torch.get_num_threads()
    device = getattr(summarizer, "device", None)
    if device is None or device.type != "cpu" or source == "-" or threads < 2:
        return 0
    return threads


# batches left at least for worker processes (worker_processes), by how they start: a forked
# worker at once, a spawned one after about 2 s of imports and loading; fewer: this process
POOL_BATCHES = {"fork": 2, "spawn": 12}


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
    """A worker process per torch thread, one thread each (cluster.ProcessPool), where
    side_by_side would decode two batches at once and at least POOL_BATCHES batches are left
    (a worker's start must pay for itself); else None. One thread each: a forked worker whose
    torch runs parallel work on its main thread can hang in OpenMP once the parent has used it."""
    from denoisesum.inference.cluster import ProcessPool, pool_start

    threads = _shareable_threads(summarizer, source)
    if not threads or batches_left < POOL_BATCHES[pool_start()]:
        yield None
        return
    with ProcessPool(summarizer, threads, 1) as pool:
        yield pool


def in_threads(decode: Callable[[Any], Any], todo: Iterable[Any], workers: int) -> Iterator[Any]:
    """decode(batch) of every batch, in order, up to `workers` at once on threads (torch
    releases the GIL inside its kernels, so they run on as many cores). Each batch is decoded
    alone, as one at a time would: the same results. Reads at most `workers` batches ahead;
    stopping early (an error, Ctrl-C) cancels those not started and waits for the others."""
    if workers <= 1:
        yield from map(decode, todo)
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(workers, thread_name_prefix="decode")
    pending: collections.deque = collections.deque()
    try:
        for batch in todo:
            pending.append(pool.submit(decode, batch))
            if len(pending) >= workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run(
    summarizer,
    source: str,
    output: str,
    options: OutputOptions = DEFAULT_OUTPUT,
    *,
    batch_size: int = 8,
    strict: bool = False,
    overwrite: bool = False,
    by_length: bool = False,
    cluster: Any = None,
) -> tuple[int, int]:
    """Summarize every review set of `source` into `output` (see the module's docstring), the
    records as `options` decide them. cluster: a `denoisesum.inference.cluster.Cluster` that
    decodes the batches on Dask workers (None: in this process); the output is the same.
    Returns (summaries written by this run, summaries that were there before)."""
    from denoisesum import __version__
    from denoisesum.io import atomic_write

    fmt = output_format(output, options.as_text)
    path = Path(output)
    resumable = output != "-" and fmt != "text" and (path.is_file() or not path.exists())
    settings = run_settings(summarizer, fmt, options) if resumable else {}
    info = {"input": source, "version": __version__}  # said, not compared

    def sets() -> Iterator[Any]:
        return review_sets(source, options.entity_field, options.text_field)

    done: set[str] = set()
    if resumable:
        resume = (not overwrite) and check_resumable(path, fmt, settings)
        sink: Any = (
            JsonlSink(path)
            if fmt == "jsonl"
            else CsvSink(path, options.explain)
            if fmt == "csv"
            else ParquetSink(path, options.explain)
        )
        if resume:
            done = set(sink.done())
    total, skipped = (None, 0) if source == "-" else count_sets(sets(), summarizer, strict, done)
    progress = Progress(total, skipped)
    written = 0
    with contextlib.ExitStack() as stack:
        if not resumable:
            handle = sys.stdout if output == "-" else stack.enter_context(atomic_write(output))
            sink = StreamSink(handle, fmt)
        started = False
        stack.enter_context(_interrupts(lambda: written, output, resumable, overwrite))
        todo = batches(sets(), batch_size, done, cost(summarizer) if by_length else None)
        if strict and source == "-":  # no reading ahead on standard input
            todo = _readable(summarizer, todo)
        if cluster is None and total is not None:
            left = -(-(total - skipped) // batch_size)
            cluster = stack.enter_context(worker_processes(summarizer, source, left))
        if cluster is None:
            workers = stack.enter_context(side_by_side(summarizer, source))
            decoded: Iterator[tuple[list[dict], list[str]]] = in_threads(
                lambda batch: summarize_batch(summarizer, batch, options),
                todo,
                workers,
            )
        else:
            decoded = cluster.summarize(todo, summarizer, options)
        for records, texts in decoded:
            if resumable and not started:
                if overwrite:
                    for stale in (path, spool(path)):
                        with contextlib.suppress(FileNotFoundError):
                            stale.unlink()
                write_sidecar(path, settings, info)
                started = True
            sink.write(records, texts)
            written += len(records)
            progress.update(len(records))
        if resumable and not started:  # nothing (left) to summarize
            if overwrite:
                for stale in (path, spool(path)):
                    with contextlib.suppress(FileNotFoundError):
                        stale.unlink()
            write_sidecar(path, settings, info)
        sink.finish()
        if resumable:
            write_sidecar(path, settings, info, complete=True)
    progress.close()
    return written, len(done)
