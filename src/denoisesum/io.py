"""File helpers shared by every stage: compressed streams, globs, JSONL and atomic writes."""

from __future__ import annotations

import contextlib
import errno
import glob
import gzip
import io
import json
import lzma
import os
import stat
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
        # the zstd reader has no readline; a BufferedReader adds line iteration
        return io.BufferedReader(ZstdReader(open(path, "rb")))
    return open(path, "rb")


class ZstdReader(io.RawIOBase):
    """A .zst file decompressed frame after frame, in bounded memory.

    zstandard's own stream_reader ends quietly where the data ends, so a file cut in half read
    as a shorter (or empty) file; and it stops after the first frame of a concatenated file.
    This reader reads every frame and raises ZstdError when the file ends inside one.
    """

    # compressed bytes fed per step: small, so that even at zstd's highest ratio (a 128 KB block
    # in 4 bytes) one step gives at most 32 MB; larger steps are no faster
    FEED = 1 << 10

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw  # the compressed file; closed by close()
        self._decompressor = zstandard.ZstdDecompressor()
        self._frame: Any = None  # the open frame's decompressor; None between frames
        self._out = b""
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._pos == len(self._out):
            data = self._raw.read(self.FEED)
            if not data:
                if self._frame is not None:
                    raise zstandard.ZstdError("the file ends inside a frame (truncated)")
                return 0
            self._out, self._pos = self._decompress(data), 0
        n = min(len(buffer), len(self._out) - self._pos)
        buffer[:n] = self._out[self._pos : self._pos + n]
        self._pos += n
        return n

    def _decompress(self, data: bytes) -> bytes:
        parts = []
        while data:
            if self._frame is None:
                self._frame = self._decompressor.decompressobj()
            parts.append(self._frame.decompress(data))
            data = b""
            if self._frame.eof:  # the rest of `data` starts the next frame
                data, self._frame = self._frame.unused_data, None
        return b"".join(parts)

    def close(self) -> None:
        self._raw.close()
        super().close()


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
        raise CorruptFileError(
            f"cannot read (corrupt or truncated file?): {exc}", path=path, line=line_no + 1
        ) from exc


def decode_line(raw: bytes, path: str | Path, line_no: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"undecodable bytes (not UTF-8) at byte {exc.start}", path=path, line=line_no
        ) from exc


BLANK = object()


def parse_json_line(raw: bytes, path: str | Path, line_no: int) -> Any:
    """Parse one JSONL line; BLANK for a blank line; InputError for bad bytes or bad JSON."""
    text = decode_line(raw, path, line_no)
    if not text.strip():
        return BLANK
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=line_no
        ) from exc
    except RecursionError as exc:
        raise InputError(TOO_DEEP, path=path, line=line_no) from exc


# json raises RecursionError on arrays or objects nested some thousands deep
TOO_DEEP = "invalid JSON: nested too deeply"


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed JSON value) for every non-blank line; raise on a bad line."""
    for line_no, raw in iter_lines(path):
        value = parse_json_line(raw, path, line_no)
        if value is not BLANK:
            yield line_no, value


def file_in(path: str | Path, name: str) -> Path:
    """`path` itself, or the file `name` in it when it is a directory (a model directory's
    part, given by the directory or by the file)."""
    path = Path(path)
    return path / name if path.is_dir() else path


def require_file(path: str | Path, field: str | None = None) -> Path:
    """An input that must be a readable file: InputError saying what it is instead."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory, not a file", path=path, field=field)
    if not path.is_file():
        raise InputError("no such file", path=path, field=field)
    if not os.access(path, os.R_OK):
        raise InputError("permission denied", path=path, field=field)
    return path


def require_part(directory: str | Path, name: str, missing: str) -> Path:
    """`directory`/`name`, a file that a saved model (a directory) must hold; when it is not
    there, an InputError naming the directory that says `missing`."""
    path = Path(directory) / name
    if not path.is_file():
        raise InputError(missing, path=directory)
    return path


def check_output_dir(path: str | Path) -> None:
    """An output directory (a model, a run): refuse, before any work, an existing file."""
    if Path(path).exists() and not Path(path).is_dir():
        raise InputError("is a file; the output must be a directory", path=path)


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
            if Path(pattern).is_dir():
                raise InputError("is a directory; give its files (e.g. DIR/*.jsonl)", path=pattern)
            raise InputError("no such file (or the pattern matches no file)", path=pattern)
        paths.extend(Path(m) for m in matches if Path(m) not in paths)
    return paths


def check_output(path: str | Path, inputs: Iterable[str | Path] = ()) -> None:
    """Refuse, before any work, an output that cannot be written as a file or that is one of
    the inputs (same file by inode, whatever path names it): InputError naming it."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory; give a file name for the output", path=path)
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise InputError(f"cannot be created: {parent} is a file, not a directory", path=path)
    for source in inputs:
        if (
            str(source) != "-"
            and path.exists()
            and Path(source).exists()
            and os.path.samefile(path, source)
        ):
            raise InputError(
                f"is also an input ({source}); writing it would destroy that "
                "input: choose another output",
                path=path,
            )
    if not path.exists() or path.is_file():  # a device or FIFO is written through, in place
        _check_writable(path)


def _check_writable(path: Path) -> None:
    """Refuse, before any work, an output whose directory takes no new file (no permission, a
    read-only file system, /proc): atomic_write makes its temporary file there."""
    parent = next((p for p in Path(os.path.realpath(path)).parents if p.exists()), None)
    if parent is None:
        return
    try:
        fd, probe = tempfile.mkstemp(prefix=".denoisesum-probe.", dir=parent)
    except OSError as exc:
        raise InputError(f"cannot be written ({parent}: {exc.strerror or exc})", path=path) from exc
    os.close(fd)
    os.unlink(probe)


def _new_file_mode(path: Path) -> int:
    """The mode a plain open() would give: an existing file's own, else 0o666 less the umask
    (mkstemp makes 0o600 files, which other users could not read)."""
    with contextlib.suppress(FileNotFoundError):
        return stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


# What a write fails with when the system, not the program, is at fault: a full disk or quota,
# a file too large, a read-only file system, an I/O error, a reader that went away.
WRITE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO, errno.EPIPE}
)


def output_error(exc: OSError, path: str | Path) -> InputError:
    """An OSError met while writing `path` ('-': standard output), as one line naming it."""
    name = "standard output" if str(path) == "-" else path
    return InputError(f"cannot write: {exc.strerror or exc}", path=name)


@contextlib.contextmanager
def writing(path: str | Path):
    """Report a write to `path` that the system refuses (a full disk, a closed pipe) as an
    InputError naming it. Only errors that name no other file are taken as this write's."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno in WRITE_ERRNOS:
            raise output_error(exc, path) from exc
        raise


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8"):
    """Write to a temporary file beside `path`, then rename it over `path`.

    A crash leaves either the old file or the new one, never a half-written file. The file gets
    the mode an ordinary write would give (an overwritten file keeps its own). An output that is
    not a regular file (a device such as /dev/null, a FIFO, /dev/stdout) is written through, as a
    shell's `>` would: renaming over it would replace it with a regular file. A symlink keeps
    pointing where it did: the file it names is the one replaced. A write the system refuses
    (no permission, a read-only or full disk, /proc) is an InputError naming `path`.
    """
    path = Path(path)
    check_output(path)
    if path.exists() and not path.is_file():
        try:
            handle = open(path, mode, encoding=None if "b" in mode else encoding)  # noqa: SIM115
        except OSError as exc:  # a socket, a device that refuses writes
            raise InputError(
                f"is not a regular file and cannot be written: {exc.strerror}", path=path
            ) from exc
        with writing(path), handle:  # /dev/full: ENOSPC
            yield handle
        return
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:  # no permission, a read-only file system, /proc
        raise output_error(exc, path) from exc
    try:
        os.chmod(tmp, _new_file_mode(target))
        with writing(path):
            with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.replace(tmp, target)
            except OSError as exc:  # a file owned by another user in a sticky directory
                raise output_error(exc, path) from exc
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
    except UnicodeDecodeError as exc:
        raise InputError(f"undecodable bytes (not UTF-8) at byte {exc.start}", path=path) from exc
    except RecursionError as exc:
        raise InputError(TOO_DEEP, path=path) from exc
    except OSError as exc:  # a directory, no permission
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc


def count_lines(path: str | Path) -> int:
    """Number of lines in a possibly compressed file (for progress bars with an ETA)."""
    n = 0
    try:
        with open_binary(path) as handle:
            while chunk := handle.read(1 << 20):
                n += chunk.count(b"\n")
    except DECOMPRESSION_ERRORS as exc:
        raise CorruptFileError(
            f"cannot read (corrupt or truncated file?): {exc}", path=path
        ) from exc
    return n
