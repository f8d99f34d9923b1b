"""A summarize run (`denoisesum summarize`): review sets read a batch at a time (inputs.py),
decoded by an executor (executors.py: this process, worker processes, or Dask), written in
input order batch by batch so that a killed run resumes (outputs.py, resume.py), with one
progress reporter (denoisesum.progress).

    written, before = run(summarizer, Source("reviews.csv"), "out.jsonl", OutputOptions())

An input with no review set (after any skipping) is an error naming it, and nothing is written;
a run that skipped bad records (--skip-bad) says how many.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from denoisesum.errors import DenoiseSumError
from denoisesum.execution import outputs
from denoisesum.execution.executors import Executor, Inline, for_run, in_order
from denoisesum.execution.inputs import Source, batches, cost, count_sets, readable
from denoisesum.execution.outputs import (
    CsvSink,
    JsonlSink,
    OutputOptions,
    ParquetSink,
    StreamSink,
    output_format,
    spool,
)
from denoisesum.execution.pool import WorkerLost
from denoisesum.execution.resume import check_resumable, run_settings, write_sidecar
from denoisesum.progress import progress_bar
from denoisesum.version import __version__

# seconds between progress lines when standard error is not a terminal
PROGRESS_SECONDS = float(os.environ.get("DENOISESUM_PROGRESS_SECONDS", "10"))
DEFAULT_OUTPUT = OutputOptions()


class Interrupted(Exception):
    """Ctrl-C during a run; says what was kept and how to continue."""


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def entities_line(progress, status: str = "") -> str:
    """summarize's progress line: entities done (with those from before) of the total, its
    share, this run's rate, the ETA and the time elapsed."""
    elapsed = max(progress.clock() - progress.start, 1e-9)
    done = progress.n - progress.initial
    rate = done / elapsed
    count, total, skipped = progress.n, progress.total, progress.initial
    parts = [f"summarize: {count:.0f}" + (f"/{total}" if total is not None else "") + " entities"]
    if total:
        parts[0] += f" ({100 * count / total:.0f}%)"
    if skipped:
        parts.append(f"{skipped} from before")
    parts.append(f"{rate:.2f} entities/s")
    if total is not None and done:
        parts.append(f"ETA {_duration(max(total - count, 0) / rate)}")
    parts.append(f"elapsed {_duration(elapsed)}")
    return ", ".join(parts)


def summarize_progress(
    total: int | None,
    skipped: int = 0,
    stream: IO[str] | None = None,
    every: float | None = None,
    clock: Callable[[], float] | None = None,
):
    """The run's progress: a bar on a terminal, else a line every `every` seconds (and at the
    end); `skipped`: entities written before (resume)."""
    lines: dict[str, Any] = {"form": entities_line, "announce": False}
    if clock is not None:
        lines["clock"] = clock
    return progress_bar(
        total=total,
        initial=skipped,
        desc="summarize",
        unit="entities",
        stream=stream,
        interval=PROGRESS_SECONDS if every is None else every,
        lines=lines,
    )


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


class _Output:
    """Where a run writes: a resumable file (with its sidecar) or a stream."""

    def __init__(self, summarizer, output: str, options: OutputOptions, overwrite: bool):
        self.output, self.overwrite = output, overwrite
        self.fmt = output_format(output, options.as_text)
        self.path = Path(output)
        self.resumable = (
            output != "-" and self.fmt != "text" and (self.path.is_file() or not self.path.exists())
        )
        self.settings = run_settings(summarizer, self.fmt, options) if self.resumable else {}
        self.started = False
        self.done: set[str] = set()
        self.sink: Any = None
        if self.resumable:
            resume = (not overwrite) and check_resumable(self.path, self.fmt, self.settings)
            self.sink = (
                JsonlSink(self.path)
                if self.fmt == "jsonl"
                else CsvSink(self.path, options.explain)
                if self.fmt == "csv"
                else ParquetSink(self.path, options.explain)
            )
            if resume:
                self.done = set(self.sink.done())

    def open(self, stack: contextlib.ExitStack) -> None:
        if not self.resumable:
            from denoisesum.io import atomic_write

            handle = (
                sys.stdout if self.output == "-" else stack.enter_context(atomic_write(self.output))
            )
            self.sink = StreamSink(handle, self.fmt)

    def start(self, info: dict) -> None:
        """Before the first records (or at the end, when there are none left to write)."""
        if not self.resumable or self.started:
            return
        if self.overwrite:
            for stale in (self.path, spool(self.path)):
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()
        write_sidecar(self.path, self.settings, info)
        self.started = True

    def finish(self, info: dict) -> None:
        self.start(info)
        self.sink.finish()
        if self.resumable:
            write_sidecar(self.path, self.settings, info, complete=True)


def run(
    summarizer,
    source: Source | str,
    output: str,
    options: OutputOptions = DEFAULT_OUTPUT,
    *,
    batch_size: int = 8,
    strict: bool = False,
    overwrite: bool = False,
    by_length: bool = False,
    cluster: Executor | None = None,
) -> tuple[int, int]:
    """Summarize every review set of `source` into `output` (see the package's docstring), the
    records as `options` decide them. cluster: --dask's executor (cluster.Cluster; None: this
    machine); the output is the same. Returns (summaries written by this run, summaries that
    were there before)."""
    source = source if isinstance(source, Source) else Source(source)
    out = _Output(summarizer, output, options, overwrite)
    info = {"input": source.path, "version": __version__}  # said, not compared
    total, skipped = None, 0
    if source.path != "-":
        total, skipped = count_sets(source.sets(), summarizer, strict, out.done, PROGRESS_SECONDS)
        _said_skips(source)
        if total == 0:
            raise source.empty()
    progress = summarize_progress(total, skipped)
    written = 0
    with contextlib.ExitStack() as stack:
        out.open(stack)
        stack.enter_context(_interrupts(lambda: written, output, out.resumable, overwrite))
        todo = batches(source.sets(), batch_size, out.done, cost(summarizer) if by_length else None)
        if strict and source.path == "-":  # no reading ahead on standard input
            todo = readable(summarizer, todo)
        left = None if total is None else -(-(total - skipped) // batch_size)

        def decode(batch: list[Any], chosen: OutputOptions):
            return outputs.summarize_batch(summarizer, batch, chosen)

        executor = stack.enter_context(for_run(summarizer, source.path, left, decode, cluster))
        for records, texts in _decoded(executor, todo, options):
            out.start(info)
            out.sink.write(records, texts)
            written += len(records)
            progress.update(len(records))
        if source.path == "-":
            _said_skips(source)
            if written == 0 and not out.done:
                raise source.empty()
        out.finish(info)
    progress.close()
    return written, len(out.done)


def _decoded(executor: Executor, todo, options: OutputOptions) -> Iterator[tuple[list, list]]:
    """(records, texts) per batch, in input order; the warnings of each batch said here, on
    standard error, wherever it was decoded."""
    ahead = executor.workers * (1 if isinstance(executor, Inline) else 2)
    try:
        for records, texts, said in in_order(
            lambda batch: executor.submit(batch, options), todo, ahead
        ):
            for line in said:
                print(line, file=sys.stderr)
            yield records, texts
    except WorkerLost:
        raise DenoiseSumError(
            "a worker process decoding the batches stopped unexpectedly (killed, or out "
            "of memory); the summaries before its batch were written"
        ) from None


def _said_skips(source: Source) -> None:
    if source.skipped.count:
        print(f"{source.path}: {source.skipped.report()}", file=sys.stderr)
