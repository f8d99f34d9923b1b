"""A summarize run's batches in a worker process (the process pool's, or a Dask worker): the
command's model, loaded once per process and checked against the command's, decoding one batch
per job as the command would, so the output is the same wherever a batch is decoded.

A worker checks that its model is the command's (the sha256 of its files, as the output's
settings sidecar records them): a worker with another model is an error, never other
summaries. So on a Dask cluster every worker needs denoisesum installed and the model at the
same path (a shared file system) or installed under the same name (`--model denoisesum-yelp`).
"""

from __future__ import annotations

import copy
import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from denoisesum.errors import DenoiseSumError
from denoisesum.execution import outputs
from denoisesum.execution.pool import ProcessPool
from denoisesum.execution.resume import model_fingerprint


@dataclass(frozen=True)
class ModelSpec:
    """What a worker loads: the model (an installed name, or an absolute directory), the
    command's summarizing settings, and the sha256 of the command's model files."""

    model: str
    config: Any  # SummarizerConfig
    fingerprint: tuple[tuple[str, str], ...]
    threads: int | None  # torch threads per worker (None: the worker's default)
    device: str = "cpu"  # the command's device type: float16 on a GPU decodes otherwise


def model_spec(summarizer, threads: int | None) -> ModelSpec:
    """How workers load the command's model: by name when it is an installed one (workers
    have the package), else by absolute path (workers need the same path)."""
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


def load(spec: ModelSpec):
    """The worker's summarizer for `spec`: loaded at its first batch, then reused."""
    key = (spec.model, spec.fingerprint)
    if key not in _LOADED:
        import socket

        import torch

        from denoisesum.summarizer import Summarizer

        if spec.threads:
            torch.set_num_threads(spec.threads)
        summarizer = Summarizer.from_pretrained(spec.model, device=spec.device)
        found = tuple(sorted(model_fingerprint(Path(summarizer.path)).items()))
        if found != spec.fingerprint:
            raise DenoiseSumError(
                f"worker on {socket.gethostname()}: its model {summarizer.path} is not the "
                "command's (other files or contents): give every worker the same model"
            )
        _LOADED.clear()  # one model per worker
        _LOADED[key] = summarizer
    summarizer = _LOADED[key]
    summarizer.config = copy.deepcopy(spec.config)
    return summarizer


def summarize_partition(
    part: list[list[Any]], spec: ModelSpec, options: outputs.OutputOptions
) -> list[tuple[list[dict], list[str], list[str]]]:
    """On a worker: each batch of the partition -> (records, texts, warning lines)."""
    summarizer = load(spec)
    return [outputs.summarize_batch(summarizer, batch, options) for batch in part]


def summarize_one(batch: list[Any], spec: ModelSpec, options: outputs.OutputOptions):
    """On a Dask worker: one batch -> (records, texts, warning lines)."""
    return summarize_partition([batch], spec, options)[0]


def pool_start() -> str:
    """How the process pool starts a summarize run's workers: "fork" on Linux, else "spawn"
    (macOS's system libraries are not safe to fork once they have started threads; Windows
    cannot fork)."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


class Batches:
    """A pool worker's handler: submit(batch, options) -> (records, texts, warning lines)."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec, self.batches = spec, 0

    def submit(self, batch: list[Any], options: outputs.OutputOptions):
        self.batches += 1
        return summarize_partition([batch], self.spec, options)[0]


def _adopted(summarizer, spec: ModelSpec) -> Batches:
    """A forked worker's start: the command's summarizer, inherited, is its model."""
    _LOADED.clear()
    _LOADED[(spec.model, spec.fingerprint)] = summarizer
    return Batches(spec)


def _loaded(spec: ModelSpec) -> Batches:
    """A spawned worker's start: the model loaded from its files."""
    load(spec)
    return Batches(spec)


class BatchPool(ProcessPool):
    """The process pool that decodes a summarize run's batches: `workers` processes of
    `threads` torch threads, forked with the command's model or spawned loading it."""

    def __init__(self, summarizer, workers: int, threads: int, method: str) -> None:
        self.spec = model_spec(summarizer, threads)
        start = (
            functools.partial(_adopted, summarizer, self.spec)
            if method == "fork"
            else functools.partial(_loaded, self.spec)
        )
        super().__init__(start, workers, threads, method=method)
