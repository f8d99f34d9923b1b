"""Summarize review sets: the Python API behind `denoisesum summarize`.

    from denoisesum import Summarizer
    summarizer = Summarizer.from_pretrained("runs/summarizer")   # a directory, or a name
    summarizer = Summarizer.from_pretrained()   # the default model, installed with the package
    summarizer.summarize(reviews)                   # one set -> its summary (str)
    summarizer.summarize_results(review_sets)       # many sets -> a SummaryResult each
    summarizer.explain(reviews)                     # one set -> SummaryResult with its evidence
    summarizer.save_pretrained("my-model")          # what from_pretrained loads back

Three ways to summarize, each taking per-call options as keywords: `method` (the summarizing
method, inference/methods.py; default: the model directory's), `slice` ("all", "complaints",
"praise"), and settings: max_words, first_person (every method), and the method's own
(DenoiseSum's: min_words, beam, opinion_weight, any search or policy setting by its name,
inference/policy.py). Options never change the summarizer: each call makes its own decoding,
passed down to the search, so one Summarizer may serve several threads at once.

`SummaryResult` (inference/methods.py) is the record of one summary: summary, tokens,
warnings, reviews_read/reviews_total, explanation. The summarize command (execution/) and
the service (serving/) only format it. DataFrames: inference/frames.py's summarize_frame.

Device: `from_pretrained(..., device="auto")` decodes on the GPU when PyTorch sees one (CUDA),
in float16 autocast there (`half`), else on the CPU in fp32 (bf16 with `config.bf16`).

CPU threads (denoisesum/threads.py): each call decodes on as many torch threads as the cores
other processes leave free, re-measured as it runs, so that a busy machine slows it in
proportion; `threads=N` fixes N. A torch thread count set before the call is left alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from denoisesum.data.vocab import Vocab
from denoisesum.errors import DenoiseSumError
from denoisesum.inference.denoisesum_method import DenoiseSumMethod, load_model
from denoisesum.inference.methods import (
    MIN_KNOWN_SHARE,
    SLICES,
    EmptySliceWarning,
    ReviewInput,
    SummarizingMethod,
    SummaryOptions,
    SummaryResult,
    UnreadableInputWarning,
    empty_slice_message,
    method_factory,
    register_method,
    review_list,
    review_set_list,
)
from denoisesum.inference.policy import SummarizerConfig, option_names
from denoisesum.inference.support import SupportConfig
from denoisesum.io import write_json
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.models.rating import REPORT_FILENAME, find_rating_model
from denoisesum.models.store import (
    CONFIG,
    DEFAULT_MODEL,
    DEFAULT_MODEL_DIR,
    VOCAB,
    WEIGHTS,
    installed_models,
    installed_models_dir,
    read_settings,
    resolve_model,
    save_weights,
)
from denoisesum.opinions.method import OpinionMethod
from denoisesum.threads import governing, governor

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_MODEL_DIR",
    "MIN_KNOWN_SHARE",
    "SLICES",
    "EmptySliceWarning",
    "Summarizer",
    "SummarizerConfig",
    "SummaryResult",
    "UnreadableInputWarning",
    "installed_models",
    "installed_models_dir",
    "load_model",
    "option_names",
    "resolve_model",
]

# one entity's review stars (a star None where unknown; None: none known), and one per entity
Ratings = Iterable[float | None] | None
SetRatings = Iterable[Ratings] | None
DEFAULT_METHOD = "denoisesum"
register_method(DEFAULT_METHOD, lambda summarizer: summarizer.denoisesum)
register_method(
    "opinions",
    lambda summarizer: OpinionMethod.from_directory(summarizer.path, summarizer.rating),
)


def _delegate(name: str, settable: bool = False, doc: str = "") -> property:
    """A Summarizer attribute that is the DenoiseSum method's."""

    def get(self: Summarizer) -> Any:
        return getattr(self.denoisesum, name)

    def put(self: Summarizer, value: Any) -> None:
        setattr(self.denoisesum, name, value)

    return property(get, put if settable else None, doc=doc or f"DenoiseSumMethod.{name}")


class Summarizer:
    """The summarizing methods of one model directory behind one interface: `summarize`,
    `summarize_results` and `explain`, each with `method=` (default: `default_method`, the
    model directory's). The DenoiseSum method (`denoisesum`) holds the model, its vocabulary
    and its settings (`config`, set up before summarizing: calls never change it). device:
    "cpu" (the default here; from_pretrained's is "auto"), "auto", "cuda" or "cuda:N". threads:
    torch threads per call on the CPU (None: as many as other processes leave free, never more
    than torch's; module docstring)."""

    def __init__(
        self,
        model: DenoiseSum,
        vocab: Vocab,
        config: SummarizerConfig | None = None,
        device: str | torch.device = "cpu",
        method: str = DEFAULT_METHOD,
        threads: int | None = None,
    ) -> None:
        method_factory(method)  # a known one
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)):
            raise DenoiseSumError(f"threads must be a whole number or None, got {threads!r}")
        if threads is not None and threads < 1:
            raise DenoiseSumError(f"threads must be at least 1, got {threads}")
        self.threads = threads
        self.denoisesum = DenoiseSumMethod(model, vocab, config, device)
        self.default_method = method
        self.path: Path | None = None  # the model directory, when loaded from one
        self._methods: dict[str, SummarizingMethod] = {}
        self._lock = threading.Lock()  # making a method at its first use

    model = _delegate("model")
    vocab = _delegate("vocab")
    device = _delegate("device")
    config = _delegate("config", True, "The DenoiseSum method's SummarizerConfig.")
    rating = _delegate("rating", True, "The rating model (rating.npz), or None.")
    half = _delegate("half", True, "float16 autocast on a GPU.")
    # what the DenoiseSum method reads of a set of reviews (no summary)
    encode_reviews = _delegate("encode_reviews")
    reviews_read = _delegate("reviews_read")
    read_count = _delegate("read_count")
    reading_fields = _delegate("reading_fields")
    known_share = _delegate("known_share")
    input_warnings = _delegate("input_warnings")
    target_stars = _delegate("target_stars")
    warm = _delegate("warm")

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path | None = None,
        config: SummarizerConfig | None = None,
        device: str | torch.device = "auto",
        threads: int | None = None,
    ) -> Summarizer:
        """Load a model directory, or an installed model by name (e.g. "denoisesum-yelp"; None:
        the default model). `config` replaces the settings saved with the model. device: "auto"
        (CUDA when present, else the CPU), "cpu", "cuda" (an error where there is none).
        threads: torch threads per call on the CPU (None: chosen from the free cores)."""
        from denoisesum.models.precision import resolve_device

        device = resolve_device(device)  # before the model loads: a bad device fails fast
        governor()  # the load measured from now: the first call has the loading's to go by
        path = resolve_model(path)
        model, vocab, saved = load_model(path)
        method = read_settings(path).get("method", DEFAULT_METHOD)
        summarizer = cls(model, vocab, config or saved, device, method, threads)
        summarizer.path = Path(path)
        summarizer.rating = find_rating_model(path)
        return summarizer

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write a model directory that from_pretrained loads back as this summarizer: its
        config.json (pretrained_config), vocabulary, weights (fp16 where that loses nothing)
        and rating model (with its report, when loaded with one)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.vocab.save(directory / VOCAB)
        save_weights(directory / WEIGHTS, self.model)
        if self.rating is not None:
            self.rating.save(directory)
            report = self.path / REPORT_FILENAME if self.path else None
            if report is not None and report.is_file() and report != directory / REPORT_FILENAME:
                (directory / REPORT_FILENAME).write_bytes(report.read_bytes())
        write_json(directory / CONFIG, pretrained_config(self))  # last: the rest is in place
        return directory

    # ---- summarizing ------------------------------------------------------------------------

    def method(self, name: str | None = None) -> SummarizingMethod:
        """The summarizing method called `name` (None: default_method), made at its first use;
        an unknown name lists the valid ones."""
        name = name or self.default_method
        factory = method_factory(name)
        with self._lock:
            if name not in self._methods:
                self._methods[name] = factory(self)
            return self._methods[name]

    def summarize(
        self,
        reviews: Iterable[str],
        ratings: Ratings = None,
        *,
        method: str | None = None,
        slice: str = "all",
        **options: Any,
    ) -> str:
        """The readable summary of one entity's reviews (any iterable of texts). ratings: each
        review's stars (None where unknown), the opinion to convey (else the rating model
        reads it); slice: "all", or "complaints" / "praise" to summarize only what people
        complain about / praise. options, for this call only: max_words (the summary ends at
        the last sentence end within them), first_person (allow I/my/me), and the method's own
        (DenoiseSum: min_words, beam, opinion_weight, any setting of policy.option_names()).
        What the result warns (unreadable reviews: UnreadableInputWarning; none of the slice:
        EmptySliceWarning) is warned; the whole record: summarize_results or explain."""
        reviews = review_list(reviews)
        result = self.summarize_results(
            [reviews], [ratings], method=method, slice=slice, batch_size=1, **options
        )[0]
        empty = empty_slice_message(slice) if slice in SLICES else None
        for message in result.warnings:
            kind = EmptySliceWarning if message == empty else UnreadableInputWarning
            warnings.warn(message, kind, stacklevel=2)
        return result.summary

    def summarize_results(
        self,
        review_sets: Iterable[Iterable[str]],
        ratings: SetRatings = None,
        explain: bool = False,
        *,
        method: str | None = None,
        slice: str = "all",
        batch_size: int = 8,
        support: SupportConfig | None = None,
        raw: bool = False,
        **options: Any,
    ) -> list[SummaryResult]:
        """One SummaryResult per review set: the summary, its warnings (said in the result, not
        as Python warnings), reviews_read/reviews_total, and with `explain` each sentence's
        supporting reviews (`support`: the thresholds). ratings: per set, each review's stars
        (or None). batch_size: sets decoded together. raw: the summary as its tokens joined by
        spaces, not readable text. method, slice and options as in summarize."""
        sets = review_set_list(review_sets)
        if ratings is not None:
            ratings = [None if r is None else list(r) for r in ratings]
            if len(ratings) != len(sets):
                raise DenoiseSumError(
                    f"ratings has {len(ratings)} entries for {len(sets)} "
                    "review sets (one list per set, or None)"
                )
        if batch_size < 1:
            raise DenoiseSumError(f"batch_size must be at least 1, got {batch_size}")
        inputs = [ReviewInput(s, ratings[i] if ratings else None) for i, s in enumerate(sets)]
        call = SummaryOptions(slice, explain, support, raw, batch_size, options)
        on_cpu = self.device.type == "cpu"
        with governing(self.threads) if on_cpu else contextlib.nullcontext():
            return self.method(method).summarize_sets(inputs, call)

    def explain(
        self,
        reviews: Iterable[str],
        ratings: Ratings = None,
        *,
        method: str | None = None,
        slice: str = "all",
        support: SupportConfig | None = None,
        **options: Any,
    ) -> SummaryResult:
        """The SummaryResult of one entity's reviews with its evidence: which of the reviews
        support each sentence, with scores (`explanation`; method and thresholds in
        `denoisesum.inference.support`). method, slice and options as in summarize."""
        reviews = review_list(reviews)
        return self.summarize_results(
            [reviews],
            [ratings],
            True,
            method=method,
            slice=slice,
            batch_size=1,
            support=support,
            **options,
        )[0]


# what a model directory's config.json keeps of the training run that made it (fit --from reads
# "train"), without the run's paths
PROVENANCE = ("train", "vocab", "data", "fit")
RUN_PATHS = {"train": ("dev_set", "init_model", "init_lm"), "data": ("topics",)}


def pretrained_config(summarizer: Summarizer) -> dict[str, Any]:
    """The config.json of a model directory for `summarizer`: kind, its default method, the
    model's configuration, the summarizing settings, and what it was loaded with of its
    training run (PROVENANCE) without the run's paths."""
    config: dict[str, Any] = {
        "kind": "denoisesum",
        "method": summarizer.default_method,
        "model": dataclasses.asdict(summarizer.model.config),
        "summarize": dataclasses.asdict(summarizer.config),
    }
    saved = read_settings(summarizer.path) if summarizer.path else {}
    for section in PROVENANCE:
        if isinstance(saved.get(section), dict):
            paths = RUN_PATHS.get(section, ())
            config[section] = {k: v for k, v in saved[section].items() if k not in paths}
    return config
