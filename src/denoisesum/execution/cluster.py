"""`denoisesum summarize --dask`: the bulk run's batches decoded on a Dask cluster.

The command itself still reads the input, chooses the batches (bulk.batches: the same ones,
resume skipping the entities already written), writes the output and shows progress; only the
decoding moves. Each window of batches becomes a dask.bag with one batch per partition, mapped
by `summarize_partition`; the command keeps two windows in flight (one being decoded while the
previous one is written) and writes each batch's records in input order, so the output is the
single-process run's, byte for byte, and resumes the same way. Memory on the command's side is
bounded by the batches in flight.

Each worker process loads the model once (`_summarizer`: a cache per process, keyed by the
model) and checks that its copy is the command's (the sha256 of its files, as the output's
settings sidecar records them): a worker with another model is an error, never other summaries.
So on a real cluster every worker needs denoisesum installed and the model at the same path (a
shared file system) or installed under the same name (`--model denoisesum-yelp`).

    cluster = Cluster.start("4")                     # a local cluster of 4 worker processes
    cluster = Cluster.start("tcp://10.0.0.5:8786")   # a running scheduler
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from denoisesum.errors import DenoiseSumError
from denoisesum.processes import end_with

if TYPE_CHECKING:
    from denoisesum.inference.bulk import OutputOptions

WORKER_WAIT_S = 60.0  # how long a scheduler's first worker may take to join
_ADDRESS = re.compile(r"^(tcp|tls|ucx|inproc)://\S+$|^[\w.\-]+:\d+$")


@dataclass(frozen=True)
class ModelSpec:
    """What a worker loads: the model (an installed name, or an absolute directory), the
    command's summarizing settings, and the sha256 of the command's model files."""

    model: str
    config: Any  # SummarizerConfig
    fingerprint: tuple[tuple[str, str], ...]
    threads: int | None  # torch threads per worker (None: the worker's default)
    device: str = "cpu"  # the command's device type: float16 on a GPU decodes otherwise


def parse_target(target: str) -> int | str:
    """--dask's value: a number of local worker processes, or a scheduler's address; without
    Dask installed, the line that says which extra to install."""
    from denoisesum.extras import require

    require("dask", "--dask")
    require("distributed", "--dask")
    text = target.strip()
    if text.isdigit():
        n = int(text)
        if not 1 <= n <= 1024:
            raise DenoiseSumError(f"--dask {target}: a local cluster has 1 to 1024 workers")
        return n
    if _ADDRESS.match(text):
        return text
    raise DenoiseSumError(
        f"--dask {target!r}: must be a number of local workers (e.g. 4) or a "
        "scheduler's address (e.g. tcp://10.0.0.5:8786)"
    )


def model_spec(summarizer, threads: int | None) -> ModelSpec:
    """How workers load the command's model: by name when it is an installed one (workers
    have the package), else by absolute path (workers need the same path)."""
    from denoisesum.inference.bulk import model_fingerprint
    from denoisesum.models.store import installed_models_dir

    path = Path(summarizer.path).resolve()
    installed = installed_models_dir().resolve()
    model = path.name if path.parent == installed else str(path)
    return ModelSpec(
        model,
        summarizer.config,
        tuple(sorted(model_fingerprint(path).items())),
        threads,
        summarizer.device.type,
    )


_LOADED: dict[tuple[str, tuple], Any] = {}  # per worker process: the model, loaded once


def _summarizer(spec: ModelSpec):
    """The worker's summarizer for `spec`: loaded at its first partition, then reused."""
    import copy

    key = (spec.model, spec.fingerprint)
    if key not in _LOADED:
        import socket

        import torch

        from denoisesum.inference.bulk import model_fingerprint
        from denoisesum.summarizer import Summarizer

        if spec.threads:
            torch.set_num_threads(spec.threads)
        summarizer = Summarizer.from_pretrained(spec.model, device=spec.device)
        found = tuple(sorted(model_fingerprint(Path(summarizer.path)).items()))
        if found != spec.fingerprint:
            raise DenoiseSumError(
                f"Dask worker on {socket.gethostname()}: its model {summarizer.path} is not the "
                "command's (other files or contents): give every worker the same model"
            )
        _LOADED.clear()  # one model per worker
        _LOADED[key] = summarizer
    summarizer = _LOADED[key]
    summarizer.config = copy.deepcopy(spec.config)
    return summarizer


def pool_start() -> str:
    """How ProcessPool starts its workers: "fork" on Linux, else "spawn" (macOS's system
    libraries are not safe to fork once they have started threads; Windows cannot fork)."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def _adopt(summarizer, spec: ModelSpec, command: int) -> None:
    """A forked worker's start: the command's summarizer, inherited, is its model."""
    import torch

    _worker_of(command)
    if spec.threads:
        torch.set_num_threads(spec.threads)
    _LOADED.clear()
    _LOADED[(spec.model, spec.fingerprint)] = summarizer


def _spawned(spec: ModelSpec, command: int) -> None:
    """A spawned worker's start: the model loaded from its files."""
    _worker_of(command)
    _summarizer(spec)


def _worker_of(command: int) -> None:
    """A pool worker ends with its command, and Ctrl-C is the command's to handle (it stops the
    workers), not theirs; SIGTERM ends it (a forked one inherits the command's handlers)."""
    import signal

    end_with(command)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def summarize_partition(
    part: list[list[Any]], spec: ModelSpec, options: OutputOptions
) -> list[tuple[list[dict], list[str], list[str]]]:
    """On a worker: each batch of the partition -> (records, texts, warning lines)."""
    from denoisesum.inference.bulk import summarize_batch

    summarizer = _summarizer(spec)
    out = []
    for batch in part:
        said: list[str] = []
        records, texts = summarize_batch(summarizer, batch, options, said.append)
        out.append((records, texts, said))
    return out


class Cluster:
    """A Dask client (and, for a local cluster, the cluster) that decodes bulk batches."""

    def __init__(self, client, cluster=None, threads: int | None = None) -> None:
        self.client, self.cluster, self.threads = client, cluster, threads

    @classmethod
    def start(cls, target: str) -> Cluster:
        """A local cluster of N worker processes (one thread each, torch threads sharing this
        machine's cores), or a client of the scheduler at an address, with a worker."""
        import logging

        where = parse_target(target)
        from distributed import Client, LocalCluster

        if isinstance(where, int):
            cluster = LocalCluster(
                n_workers=where,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            threads = max(1, (os.cpu_count() or 1) // where)
            return cls(Client(cluster), cluster, threads)
        try:
            client = Client(where, timeout=WORKER_WAIT_S)
        except OSError as exc:
            raise DenoiseSumError(f"--dask {where}: cannot reach the scheduler ({exc})") from None
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            client.close()
            raise DenoiseSumError(
                f"--dask {where}: no worker joined the scheduler within {WORKER_WAIT_S:.0f} s"
            ) from None
        return cls(client)

    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def summarize(
        self, todo: Iterable[list[Any]], summarizer, options: OutputOptions
    ) -> Iterator[tuple[list[dict], list[str]]]:
        """(records, texts) per batch of `todo`, in its order, decoded on the workers; their
        warning lines are said on standard error here, as a single-process run says them."""
        import dask.bag as db

        spec = model_spec(summarizer, self.threads)
        window = self.workers()
        pending: collections.deque = collections.deque()
        todo = iter(todo)

        def submit() -> bool:
            chunk = [batch for _, batch in zip(range(window), todo, strict=False)]
            if not chunk:
                return False
            bag = db.from_sequence(chunk, npartitions=len(chunk)).map_partitions(
                summarize_partition, spec, options
            )
            pending.extend(self.client.compute(bag.to_delayed()))
            return True

        more = submit() and submit()  # two windows in flight: decode one, write the other
        while pending:
            yield from _said(pending.popleft().result())
            if more and len(pending) <= window:
                more = submit()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _said(decoded: list[tuple[list[dict], list[str], list[str]]]):
    """(records, texts) of each batch a worker decoded; its warning lines said here, on
    standard error, as a single-process run says them."""
    for records, texts, said in decoded:
        for line in said:
            print(line, file=sys.stderr)
        yield records, texts


class ProcessPool:
    """Worker processes on this machine that decode bulk batches, with `Cluster`'s interface.

    Two batches at once on two threads of one process contend for its interpreter lock between
    torch's kernels (the beam search's bookkeeping is Python); in two processes they do not:
    on 200 dev+test businesses with 2 cores, two processes of one thread each decoded 1.12x as
    fast as two threads (docs/results/decoding-speed.md). Each worker loads the model once, at
    its start (`_summarizer`, checked against the command's), and decodes one batch per task,
    as the command would: the same records, in input order."""

    def __init__(self, summarizer, workers: int, threads: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self.spec = model_spec(summarizer, threads)
        command = os.getpid()
        if pool_start() == "fork":
            # a forked worker starts at once with the command's model in its memory (shared
            # until written), where a spawned one spends about 2 s importing and loading
            context = multiprocessing.get_context("fork")
            start = (_adopt, (summarizer, self.spec, command))
        else:
            context, start = multiprocessing.get_context("spawn"), (_spawned, (self.spec, command))
        self.pool = ProcessPoolExecutor(workers, context, initializer=start[0], initargs=start[1])

    def summarize(
        self, todo: Iterable[list[Any]], summarizer, options: OutputOptions
    ) -> Iterator[tuple[list[dict], list[str]]]:
        """(records, texts) per batch of `todo`, in its order; at most two batches per worker
        in flight (memory bounded by them)."""
        from concurrent.futures.process import BrokenProcessPool

        pending: collections.deque = collections.deque()
        try:
            for batch in todo:
                pending.append(self.pool.submit(summarize_partition, [batch], self.spec, options))
                if len(pending) >= 2 * self.workers:
                    yield from _said(pending.popleft().result())
            while pending:
                yield from _said(pending.popleft().result())
        except BrokenProcessPool:
            raise DenoiseSumError(
                "a worker process decoding the batches stopped unexpectedly (killed, or out "
                "of memory); the summaries before its batch were written"
            ) from None

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ProcessPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
