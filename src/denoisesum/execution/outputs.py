"""What a summarize run writes: its records (one per entity: the summary and what the
summarizer said about it), their formats and the sinks that write them.

Formats by the output's extension: .jsonl, .csv (the same, one row per entity), .parquet (a
JSONL spool `FILE.partial.jsonl` that resumes the same way, turned into FILE atomically at the
end, in row groups), .txt (the --text format: written to a temporary and renamed at the end;
not resumable). With `-o FILE`, each batch's records are appended as whole lines, flushed and
fsynced, so a killed run loses at most the batch in flight; rerunning drops a truncated last
line and appends the rest (resume.py says whether it may).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any

from denoisesum.errors import InputError
from denoisesum.extras import require

OUTPUT_FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}
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
    sentence's support (--explain), the text format (--text) and the input's fields (the
    entity, the text and the stars)."""

    slice_: str = "all"
    method: str | None = None  # the summarizing method (None: the model's default)
    raw: bool = False
    explain: bool = False
    as_text: bool = False
    entity_field: str = "entity_id"
    text_field: str = "text"
    rating_field: str = "rating"

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


# ---- records ---------------------------------------------------------------------------------


def summarize_batch(
    summarizer, batch: list[Any], options: OutputOptions
) -> tuple[list[dict], list[str], list[str]]:
    """The records of one batch of ReviewSets (entity_id, then the Summarizer's SummaryResult
    as JSON: summary, reviews_read and reviews_total, warnings, support with --explain), with
    --text their text blocks, and the warning lines the command says, each naming its entity
    (wherever the batch was decoded, the command says them: bulk.py)."""
    results = summarizer.summarize_results(
        [s.reviews for s in batch],
        [s.ratings or None for s in batch],
        options.explain,
        method=options.method,
        slice=options.slice_,
        batch_size=len(batch),
        raw=options.raw,
    )
    records, texts, said = [], [], []
    for review_set, result in zip(batch, results, strict=True):
        records.append({"entity_id": review_set.entity_id, **result.to_dict()})
        for w in result.warnings:
            said.append(f"warning: entity {review_set.entity_id}: {w}")
        if options.as_text:
            texts.append(text_block(review_set.entity_id, result))
    return records, texts, said


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


def spool(output: str | Path) -> Path:
    """A .parquet output's JSONL spool (resumable), made into the .parquet at the end."""
    output = Path(output)
    return output.with_name(output.name + ".partial.jsonl")


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
