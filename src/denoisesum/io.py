"""File helpers shared by every stage: compressed streams, globs, JSONL and atomic writes."""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import json
import lzma
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import zstandard

from denoisesum.errors import CorruptFileError, InputError

COMPRESSION_SUFFIXES = (".gz", ".xz", ".zst")


def split_suffixes(path: str | Path) -> tuple[str, str | None]:
    """Return (format suffix, compression suffix): 'a.jsonl.xz' -> ('.jsonl', '.xz')."""
    name = Path(path).name.lower()
    compression = next((s for s in COMPRESSION_SUFFIXES if name.endswith(s)), None)
    if compression:
        name = name[: -len(compression)]
    return Path(name).suffix, compression


def open_binary(path: str | Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing .gz/.xz/.zst transparently."""
    _, compression = split_suffixes(path)
    if compression == ".gz":
        return gzip.open(path, "rb")
    if compression == ".xz":
        return lzma.open(path, "rb")
    if compression == ".zst":
        raw = open(path, "rb")  # noqa: SIM115 - closed through the reader below
        # the zstd reader has no readline; a BufferedReader adds line iteration
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))
    return open(path, "rb")


# What a broken compressed stream raises, by library.
DECOMPRESSION_ERRORS = (EOFError, OSError, lzma.LZMAError, zstandard.ZstdError)


def iter_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line) from a possibly compressed file."""
    line_no = 0
    try:
        with open_binary(path) as handle:
            for line_no, raw in enumerate(handle, start=1):
                yield line_no, raw
    except DECOMPRESSION_ERRORS as exc:
        raise CorruptFileError(f"cannot read (corrupt or truncated file?): {exc}", path=path,
                               line=line_no + 1) from exc


def decode_line(raw: bytes, path: str | Path, line_no: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"undecodable bytes (not UTF-8) at byte {exc.start}",
                         path=path, line=line_no) from exc


BLANK = object()


def parse_json_line(raw: bytes, path: str | Path, line_no: int) -> Any:
    """Parse one JSONL line; BLANK for a blank line; InputError for bad bytes or bad JSON."""
    text = decode_line(raw, path, line_no)
    if not text.strip():
        return BLANK
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})",
                         path=path, line=line_no) from exc


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed JSON value) for every non-blank line; raise on a bad line."""
    for line_no, raw in iter_lines(path):
        value = parse_json_line(raw, path, line_no)
        if value is not BLANK:
            yield line_no, value


def expand_paths(patterns: Iterable[str | Path]) -> list[Path]:
    """Expand files and glob patterns in order, without duplicates; error if one matches nothing."""
    paths: list[Path] = []
    for pattern in patterns:
        pattern = str(pattern)
        matches = [pattern]
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
        matches = [m for m in matches if Path(m).is_file()]
        if not matches:
            raise InputError("no such file (or the pattern matches no file)", path=pattern)
        paths.extend(Path(m) for m in matches if Path(m) not in paths)
    return paths


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8"):
    """Write to a temporary file beside `path`, then rename it over `path`.

    A crash leaves either the old file or the new one, never a half-written file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, value: Any) -> None:
    with atomic_write(path) as handle:
        json.dump(value, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def read_json(path: str | Path) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError as exc:
        raise InputError("file not found", path=path) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from exc


def count_lines(path: str | Path) -> int:
    """Number of lines in a possibly compressed file (for progress bars with an ETA)."""
    n = 0
    try:
        with open_binary(path) as handle:
            while chunk := handle.read(1 << 20):
                n += chunk.count(b"\n")
    except DECOMPRESSION_ERRORS as exc:
        raise CorruptFileError(f"cannot read (corrupt or truncated file?): {exc}",
                               path=path) from exc
    return n
