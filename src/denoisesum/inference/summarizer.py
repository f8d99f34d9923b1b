"""Summarize review sets with a trained DenoiseSum model: the Python API behind
`denoisesum summarize`.

    from denoisesum import Summarizer
    summarizer = Summarizer.from_pretrained("runs/summarizer")   # a directory, or a name
    summarizer = Summarizer.from_pretrained()   # the default model, installed with the package
    summarizer.summarize(["The ramen was rich...", "Great broth, slow service...", ...])
    summarizer.explain(reviews)      # the summary and the reviews supporting each sentence
    summarizer.summarize_result(reviews, explain=True)   # SummaryResult: the whole record
    summarizer.summarize_frame(df, entity="business_id", text="text")  # pandas in and out

One record per summary: `summarize_results` returns a `SummaryResult` per review set (the
summary, its warnings, the reading fields, the support when asked); the summarize command
(inference/bulk.py) and the service (serving/) only format it. `summarize` and
`summarize_batch` return the summary text alone, as they always have.

Device: `from_pretrained(..., device="auto")` decodes on the GPU when PyTorch sees one (CUDA),
in float16 autocast there (`half`), else on the CPU in fp32 (bf16 with `config.bf16`).

A model directory (format and checks: models/store.py) of kind "denoisesum" may carry, beside
"kind" and "model", the settings to summarize with:

    config.json         {"kind": "denoisesum", "model": {...},
                         "summarize": {"max_review_tokens": 150, "read_reviews": 8,
                                       "decode": {DecodeConfig fields}}}

"summarize" is optional: it lets a model ship the decoding settings it was tuned with (e.g. a
min_length for its domain); absent keys take the SummarizerConfig defaults. Other top-level keys
(the training run's settings, say) are ignored.

Many reviews: the model reads at most `read_reviews` (8, the size of the sets it was trained on)
of an entity's reviews, by default the most central ones (`select`; inference/selection.py);
`reviews_read(reviews)` says which, `read_count(len(reviews))` how many, and `reading_fields`
what the summarize command and the service report (reviews_read, reviews_total).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import regex
import torch

from denoisesum.config import Range, at_least, build
from denoisesum.data.batch import inference_batch
from denoisesum.data.tokenizer import detokenize
from denoisesum.data.vocab import SPECIALS, Vocab
from denoisesum.errors import ConfigError, DenoiseSumError
from denoisesum.inference.beam import DecodeConfig, banned_words, beam_search
from denoisesum.inference.constraints import WordLists
from denoisesum.inference.opinion import check_clauses, clauses, clauses_to_cut, scoped_sides
from denoisesum.inference.rerank import choose, review_subsets
from denoisesum.inference.selection import SELECT_MODES, select_reviews
from denoisesum.inference.shortlist import ShortlistModel, shortlist_rows
from denoisesum.inference.support import Explanation, SupportConfig
from denoisesum.inference.support import explain as explain_support
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.models.precision import resolve_device, use_bf16
from denoisesum.models.rating import (
    POSITIVE,
    RatingModel,
    find_rating_model,
    polarity,
    polarity_sign,
)
from denoisesum.models.store import CONFIG, load_denoisesum, parse_section
from denoisesum.text import SIDE_COUNTED, SIDE_OPENINGS, is_content_word

# one entity's review stars (a star None where unknown; None: none known), and one per entity
Ratings = Iterable[float | None] | None
SetRatings = Iterable[Ratings] | None

# The models installed with the package: package data under denoisesum/pretrained/, one directory
# per model (pyproject.toml), loaded by name; the default is the Yelp summarizer.
PRETRAINED = "pretrained"
DEFAULT_MODEL = "denoisesum-yelp"


def installed_models_dir() -> Path:
    """Where the installed models are: denoisesum/pretrained/ wherever the package is (a source
    checkout, site-packages)."""
    return Path(str(resources.files("denoisesum") / PRETRAINED))


def installed_models() -> list[str]:
    """The names of the installed models (directories with a config.json)."""
    root = installed_models_dir()
    return sorted(p.name for p in root.iterdir() if (p / CONFIG).is_file()) if root.is_dir() else []


DEFAULT_MODEL_DIR = installed_models_dir() / DEFAULT_MODEL


def resolve_model(name_or_path: str | Path | None) -> Path:
    """A model directory from a path or the name of an installed model (None: the default). An
    existing directory wins over a name; anything else that is not a name (it has a path
    separator) is returned as given, for load_model to say what is wrong with it."""
    if name_or_path is None:
        if not DEFAULT_MODEL_DIR.is_dir():
            raise DenoiseSumError(
                f"no default model is installed (looked for {DEFAULT_MODEL_DIR}); pass a model "
                "directory: Summarizer.from_pretrained('path/to/model') or `denoisesum summarize "
                "--model DIR` (a directory with model.safetensors, config.json, vocab.json)"
            )
        return DEFAULT_MODEL_DIR
    path = Path(name_or_path)
    text = str(name_or_path)
    if path.is_dir() or "/" in text or os.sep in text or text in ("", ".", ".."):
        return path
    if text in installed_models():
        return installed_models_dir() / text
    names = ", ".join(installed_models()) or "none"
    raise DenoiseSumError(
        f"no model directory or installed model named {text!r} (installed models: {names})"
    )


# An entity's reviews are flagged when fewer than this share of their words (tokens with a
# letter or digit) are in the model's vocabulary, or when they have no word at all. The MeanSum
# Yelp dev entities have 94-100% (median 99.4%); French reviews about 57%, German 41%, Spanish
# 43%, Chinese 0% (benchmarks/readability.py; docs/results/readability.md).
MIN_KNOWN_SHARE = 0.8
_HAS_WORD = regex.compile(r"[\p{L}\p{N}]")


class UnreadableInputWarning(UserWarning):
    """The reviews are mostly words the model does not know: its summary is likely invented."""


# which reviews a summary speaks for: all of them, the complaints (reviews of at most
# COMPLAINT_STARS), or the praise (at least PRAISE_STARS); stars are the given ones, else the
# rating model's reading
SLICES = ("all", "complaints", "praise")
COMPLAINT_STARS, PRAISE_STARS = 3.0, 4.0
# decode.mixed_sides: per side of reviews of both minds, which side, its reviews' positions and
# their mean stars. Its complaints are reviews of at most SIDE_COMPLAINT_STARS (a 3-star review
# is of both minds itself). Each side's summary opens with words that say whose opinion it is
# (text.SIDE_OPENINGS): two sides stated as plain fact read as a summary at odds with itself
Sides = list[tuple[str, list[int], float]]
SIDE_COMPLAINT_STARS = 2.0


# per-call options of summarize / summarize_batch / summarize_results: every DecodeConfig field
# by its own name, and these short names -> the field each sets (first_person says what is
# allowed: it sets block_first_person to its opposite)
CALL_OPTIONS = {
    "max_words": "max_length",
    "min_words": "min_length",
    "beam": "beam_size",
    "first_person": "block_first_person",
    "opinion_weight": "opinion_weight",
}


def option_names() -> list[str]:
    """Every per-call option: the short names, then the DecodeConfig fields."""
    fields = [f.name for f in dataclasses.fields(DecodeConfig)]
    return list(CALL_OPTIONS) + [f for f in fields if f not in CALL_OPTIONS]


def decode_options(decode: DecodeConfig, options: dict[str, Any]) -> DecodeConfig:
    """`decode` with per-call options applied (option_names(); a None value changes nothing),
    checked by DecodeConfig's one validation (config.build: its BOUNDS and validate()). A length
    cap (max_words, max_length) ends the summary at its last sentence end within it, and brings
    min_length down to it unless that is given too. A ConfigError names the option as given."""
    valid = option_names()
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(
            f"unknown option {', '.join(map(repr, unknown))}; valid options: {', '.join(valid)}",
            key=unknown[0],
            reason="unknown option",
        )
    changes, named = {}, {}
    for name, value in options.items():
        if value is not None:
            key = CALL_OPTIONS.get(name, name)
            flip = name == "first_person" and isinstance(value, bool)
            changes[key], named[key] = (not value if flip else value), name
    cap = changes.get("max_length")
    if isinstance(cap, int) and not isinstance(cap, bool):  # a length cap, never mid-sentence
        changes.setdefault("end_at_sentence", True)
        changes.setdefault("min_length", min(decode.min_length, cap))
    try:
        return build(DecodeConfig, {**asdict(decode), **changes})
    except ConfigError as exc:
        name = named.get(exc.key or "", exc.key)
        raise ConfigError(f"option {name}: {exc.reason}", key=name, reason=exc.reason) from None


def review_list(reviews: Iterable[str], where: str = "") -> list[str]:
    """Review texts from any iterable (a list, a tuple, a generator, a pandas Series) as a
    list; a lone string, or anything that is not iterable, is an error."""
    if isinstance(reviews, str | bytes) or not isinstance(reviews, Iterable):
        raise DenoiseSumError(
            f"{where}reviews must be a list of review texts, got {type(reviews).__name__} "
            "(a list, a tuple or any iterable of strings)"
        )
    return list(reviews)


def review_set_list(review_sets: Iterable[Iterable[str]]) -> list[list[str]]:
    """Review sets from any iterable of iterables of texts, as lists."""
    if isinstance(review_sets, str | bytes) or not isinstance(review_sets, Iterable):
        raise DenoiseSumError(
            "review_sets must be a list of lists of review texts, got "
            f"{type(review_sets).__name__} (any iterable of iterables of strings)"
        )
    return [review_list(s, f"review set {i}: ") for i, s in enumerate(review_sets)]


class EmptySliceWarning(UserWarning):
    """No review of a set belongs to the asked slice (no complaint, no praise): no summary."""


def empty_slice_message(slice: str) -> str:
    bound = "at most" if slice == "complaints" else "at least"
    stars = COMPLAINT_STARS if slice == "complaints" else PRAISE_STARS
    return f"no review belongs to the {slice} (reviews of {bound} {stars:g} stars): no summary"


@dataclass
class SummaryResult:
    """One review set's summary and what its reader should know: the record that the
    summarize command writes (one line, one row) and the service answers, both only formatting
    it (`to_dict`)."""

    summary: str  # readable text ("" when no review belongs to the slice); tokens with raw=True
    tokens: list[str]  # the tokenized form (lower-cased, PTB clitics: what ROUGE scripts read)
    # why the summary may not come from the reviews: unreadable input (input_warnings), no
    # review of the slice, most sentences unsupported (with explain)
    warnings: list[str] = field(default_factory=list)
    # how many reviews the model read of how many it was given, when it chose which (more
    # than its read_reviews); None when it read them all
    reviews_read: int | None = None
    reviews_total: int | None = None
    explanation: Explanation | None = None  # each sentence's supporting reviews (explain=True)

    @property
    def support(self) -> dict[str, Any] | None:
        """The explanation as JSON, without the summary it explains; None unless explained."""
        if self.explanation is None:
            return None
        return {k: v for k, v in self.explanation.to_dict().items() if k != "summary"}

    def to_dict(self) -> dict[str, Any]:
        """The JSON record: summary; reviews_read and reviews_total when the model chose which
        reviews to read; warnings when there are any; support when explained."""
        record: dict[str, Any] = {"summary": self.summary}
        if self.reviews_read is not None:
            record["reviews_read"] = self.reviews_read
            record["reviews_total"] = self.reviews_total
        if self.warnings:
            record["warnings"] = list(self.warnings)
        if self.explanation is not None:
            record["support"] = self.support
        return record


@dataclass
class SummarizerConfig:
    max_review_tokens: int = 150  # each review is cut to its first words (encoder cost is linear)
    # an entity's first max_reviews reviews are considered (the rest are ignored); the model
    # reads read_reviews of them (all when there are no more), chosen by `select`: "central"
    # (most similar to the others: inference/selection.py), "first", or "random" (seeded)
    max_reviews: int = 1000
    read_reviews: int = 8
    select: str = "central"
    seed: int = 0  # for select = "random"
    # bfloat16 matmuls and LSTMs (torch.autocast): about 2x faster on CPUs with AVX512-BF16
    # or AMX (decoding is bound by reading the 30k-word output layers every step); on CPUs
    # without them fp32, with a warning (models/precision.py); log-probabilities change in the
    # third digit, so a close beam may go another way
    bf16: bool = False
    # on a CPU in fp32, decoding steps read the decoders' weights packed as fp16 and multiply
    # in fp32 (models/packed.py): for a saved model, whose weights are fp16 numbers, the same
    # products up to the order of their sums, with half the memory traffic
    packed_fp16: bool = True
    # decode over the `shortlist` most frequent words plus the input's words (0: the whole
    # vocabulary): cheaper output layers, normalised over fewer words (inference/shortlist.py)
    shortlist: int = 0
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "max_review_tokens": at_least(1),
        "max_reviews": at_least(1),
        "read_reviews": at_least(1),
        "seed": at_least(0),
        "shortlist": at_least(0, "0: every word"),
    }

    def validate(self) -> None:
        for name, ok, why in [
            ("select", self.select in SELECT_MODES, f"must be one of {', '.join(SELECT_MODES)}"),
        ]:
            if not ok:
                value = getattr(self, name)
                raise ConfigError(f"{name}={value!r} {why}", key=name, reason=f"{value!r} {why}")


def load_model(directory: str | Path) -> tuple[DenoiseSum, Vocab, SummarizerConfig]:
    """Read a model directory (format: models/store.py): the model in eval mode, its
    vocabulary and the summarizing settings saved with it (config.json's "summarize")."""
    model, vocab, config = load_denoisesum(directory)
    settings = parse_section(
        SummarizerConfig, config.get("summarize", {}), Path(directory) / CONFIG, "summarize"
    )
    return model, vocab, settings


class Summarizer:
    """A DenoiseSum model, its vocabulary, and the settings to summarize with (`config`, which
    may be changed between calls). device: "cpu" (the default here; from_pretrained's is
    "auto"), "auto" (the GPU when PyTorch sees one, else the CPU), "cuda" or "cuda:N"; on a GPU
    decoding runs in float16 autocast unless `half` is set to False."""

    def __init__(
        self,
        model: DenoiseSum,
        vocab: Vocab,
        config: SummarizerConfig | None = None,
        device: str | torch.device = "cpu",
    ) -> None:
        self.device = resolve_device(device)
        # float16 autocast on a GPU: about half the memory traffic of the output layers; a
        # close beam may go another way than in fp32 (tests/test_device.py measures how often)
        self.half = self.device.type == "cuda"
        self.model = model.eval().to(self.device)
        self.vocab = vocab
        self.config = config or SummarizerConfig()
        self.path: Path | None = None  # the model directory, when loaded from one
        self._classes: tuple[list[int], list[int], set[int]] | None = None  # _word_classes
        self._content_ids: torch.Tensor | None = None  # _word_classes' content words, a tensor
        self._bf16_ok: bool | None = None  # whether this device computes bf16 (_bf16)
        # how many stars a text reads as (the model directory's rating.npz): the reviews'
        # opinion when no stars are given, opinion steering and the contradiction checks
        self.rating: RatingModel | None = None
        self._pull: torch.Tensor | None = None  # [V] each word's pull on the stars (_word_pull)

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path | None = None,
        config: SummarizerConfig | None = None,
        device: str | torch.device = "auto",
    ) -> Summarizer:
        """Load a model directory, or an installed model by name (e.g. "denoisesum-yelp"; None:
        the default model). `config` replaces the settings saved with the model. device: "auto"
        (CUDA when present, else the CPU), "cpu", "cuda" (an error where there is none)."""
        device = resolve_device(device)  # before the model loads: a bad device fails fast
        path = resolve_model(path)
        model, vocab, saved = load_model(path)
        summarizer = cls(model, vocab, config or saved, device)
        summarizer.path = Path(path)
        summarizer.rating = find_rating_model(path)
        return summarizer

    # ---- input ------------------------------------------------------------------------------

    def encode_reviews(self, reviews: Sequence[str], where: str = "") -> list[list[int]]:
        """Review texts -> the word ids the model reads: the reviews of `reviews_read`, each cut
        to max_review_tokens words."""
        encoded = self._encode_all(reviews, where)
        return [encoded[i] for i in self._select(encoded)]

    def reviews_read(self, reviews: Sequence[str]) -> list[int]:
        """Indices (into `reviews`, ascending) of the reviews the model reads: all of the first
        max_reviews when there are at most read_reviews, else read_reviews of them chosen by
        `config.select` (inference/selection.py)."""
        return self._select(self._encode_all(reviews))

    def read_count(self, total: int) -> int:
        """How many of `total` reviews the model reads (len(reviews_read), without reading)."""
        return min(total, self.config.max_reviews, self.config.read_reviews)

    def reading_fields(self, total: int) -> dict[str, int]:
        """{"reviews_read": n, "reviews_total": total} when the model chooses which of `total`
        reviews to read (more than read_reviews among the first max_reviews), else {}: what
        the summarize command and the service add to a summary."""
        if min(total, self.config.max_reviews) <= self.config.read_reviews:
            return {}
        return {"reviews_read": self.read_count(total), "reviews_total": total}

    def _select(self, encoded: list[list[int]]) -> list[int]:
        return select_reviews(
            encoded, self.config.read_reviews, self.config.select, self.config.seed
        )

    def _encode_all(self, reviews: Sequence[str], where: str = "") -> list[list[int]]:
        """Review texts -> word ids, cut to max_reviews reviews of max_review_tokens words."""
        reviews = review_list(reviews, where)
        if not reviews:
            raise DenoiseSumError(f"{where}no reviews to summarize")
        out = []
        for i, text in enumerate(reviews[: self.config.max_reviews]):
            if not isinstance(text, str):
                raise DenoiseSumError(f"{where}review {i} is a {type(text).__name__}, not text")
            tokens = self.vocab.tokenizer.tokenize(text)[: self.config.max_review_tokens]
            if not tokens:
                raise DenoiseSumError(f"{where}review {i} is empty")
            out.append(self.vocab.encode(tokens))
        return out

    def known_share(self, reviews: Sequence[str]) -> float | None:
        """The share of the words the model considers (tokens with a letter or digit, of the
        first max_reviews reviews, whichever of them it reads) that its vocabulary knows; None
        when there is no word at all."""
        tokens = [
            t
            for text in list(reviews)[: self.config.max_reviews]
            if isinstance(text, str)
            for t in self.vocab.tokenizer.tokenize(text)[: self.config.max_review_tokens]
        ]
        words = [t for t in tokens if _HAS_WORD.search(t)]
        return sum(t in self.vocab.index for t in words) / len(words) if words else None

    def input_warnings(self, reviews: Sequence[str]) -> list[str]:
        """Why the model may not be able to read these reviews (empty: nothing to say): no
        words at all (punctuation, emoji, invisible characters), or fewer than MIN_KNOWN_SHARE
        of the words it reads known to its vocabulary (another language, say)."""
        known = self.known_share(reviews)
        if known is None:
            return [
                "the reviews have no words (only punctuation, symbols or invisible "
                "characters): the summary cannot come from them"
            ]
        if known < MIN_KNOWN_SHARE:
            return [
                f"only {known:.0%} of the reviews' words are known to the model (below "
                f"{MIN_KNOWN_SHARE:.0%}; another language?): the summary is likely "
                "invented"
            ]
        return []

    def _warn_unreadable(self, review_sets: Sequence[Sequence[str]]) -> None:
        for i, reviews in enumerate(review_sets):
            for message in self.input_warnings(reviews):
                where = f"review set {i}: " if len(review_sets) > 1 else ""
                warnings.warn(where + message, UnreadableInputWarning, stacklevel=3)

    # ---- summarizing ------------------------------------------------------------------------

    def summarize_tokens_batch(
        self,
        review_sets: Iterable[Iterable[str]],
        batch_size: int = 8,
        ratings: SetRatings = None,
        slice: str = "all",
    ) -> list[list[str]]:
        """Tokenized summaries (lower-cased, PTB clitics: what ROUGE scripts expect), one per
        review set, decoded `batch_size` entities at a time. ratings: per set, each review's
        stars (None where unknown), the opinion the summary follows; slice: "all",
        "complaints" or "praise" (SLICES), the reviews the summary speaks for."""
        return self._summarize_tokens(review_sets, batch_size, ratings, slice)[0]

    # inference mode, not only no_grad: each of a decoding step's few hundred small ops skips
    # autograd's bookkeeping (version counters, views' metadata): 1.13x the CPU time of steps
    # of 4 short review sets, as the service takes (docs/results/service.md)
    @torch.inference_mode()
    def _summarize_tokens(
        self,
        review_sets: Iterable[Iterable[str]],
        batch_size: int,
        ratings: SetRatings,
        slice: str,
        warn: bool = True,
    ) -> tuple[list[list[str]], list[bool]]:
        """summarize_tokens_batch's summaries, and per set whether no review of it belonged to
        the slice (no summary; an EmptySliceWarning unless `warn` is False)."""
        review_sets = review_set_list(review_sets)
        if ratings is not None:
            ratings = [None if r is None else list(r) for r in ratings]
        if batch_size < 1:
            raise DenoiseSumError(f"batch_size must be at least 1, got {batch_size}")
        if ratings is not None and len(ratings) != len(review_sets):
            raise DenoiseSumError(
                f"ratings has {len(ratings)} entries for {len(review_sets)} "
                "review sets (one list per set, or None)"
            )
        sets, stars = [], []
        for i, reviews in enumerate(review_sets):
            kept, kept_stars = self.slice_reviews(
                reviews, ratings[i] if ratings else None, slice, f"review set {i}: ", warn
            )
            sets.append(kept)
            stars.append(kept_stars)
        # a set with no review of the slice is skipped (it warned); an empty set is an error
        todo = [i for i, kept in enumerate(sets) if kept or slice == "all"]
        entities = []
        for i in todo:
            ids = self._encode_all(sets[i], f"review set {i}: ")  # encode_reviews, keeping
            read = self._select(ids)  # which reviews it reads for their stars
            texts, read_stars = [sets[i][j] for j in read], [stars[i][j] for j in read]
            target = self.target_stars(texts, read_stars)
            sides = self._mixed_sides(texts, read_stars, target) if slice == "all" else None
            entities.append(([ids[j] for j in read], target, sides))
        out: list[list[str]] = [[] for _ in review_sets]
        for i, tokens in zip(todo, self._decode_sides(entities, batch_size), strict=True):
            out[i] = tokens
        return out, [not kept and slice != "all" for kept in sets]

    def _decode_sides(
        self, entities: list[tuple[list[list[int]], float | None, Sides | None]], batch_size: int
    ) -> list[list[str]]:
        """Per entity (its reviews' ids, target stars, _mixed_sides): _decode's summary, or for
        reviews of both minds the summaries of each side, each in its share of the words
        (_side_plans), joined."""
        whole = [e for e, (_, _, sides) in enumerate(entities) if sides is None]
        found = self._decode(
            [entities[e][0] for e in whole], batch_size, [entities[e][1] for e in whole]
        )
        out: list[list[str]] = [[] for _ in entities]
        for e, tokens in zip(whole, found, strict=True):
            out[e] = tokens
        split = [e for e, (_, _, sides) in enumerate(entities) if sides is not None]
        if not split:
            return out
        sides = [side for e in split for side in entities[e][2]]
        reviews = [[entities[e][0][j] for j in side[1]] for e in split for side in entities[e][2]]
        plans = [p for e in split for p in self._side_plans(entities[e][2], len(entities[e][0]))]
        side_tokens: list[list[str]] = [[] for _ in sides]
        cfg = self.config.decode
        for share in sorted({share for _, share in plans}):  # one decode per share of the words
            todo = [i for i, (_, s) in enumerate(plans) if s == share]
            low, high = int(cfg.min_length * share), max(1, int(cfg.max_length * share))
            with self.options(min_length=low, max_length=high):
                summaries = self._decode(
                    [reviews[i] for i in todo], batch_size, [sides[i][2] for i in todo], side=True
                )
            for i, tokens in zip(todo, summaries, strict=True):
                side_tokens[i] = tokens
        pairs = iter(zip((opening for opening, _ in plans), side_tokens, strict=True))
        for e in split:
            (first_opening, first), (second_opening, second) = next(pairs), next(pairs)
            if first and second:
                first, second = first_opening + first, second_opening + second
            out[e] = first + second
        return out

    def _side_plans(self, sides: Sides, n_read: int) -> list[tuple[list[str], Fraction]]:
        """Per side of a split summary (_mixed_sides, of n_read reviews read): its opening's
        tokens and its share of the words. Halves and "some ... others" unless
        decode.side_shares: then a side of at least 1.5 times the other's reviews gets two
        thirds, and the openings count ("most" for over half the reviews read, "one")."""
        (kind, first, _), (other, second, _) = sides
        openings = [SIDE_OPENINGS[kind][0], SIDE_OPENINGS[other][1]]
        half = Fraction(1, 2)  # exact: a side's bounds are min_length x share, rounded down
        if not self.config.decode.side_shares:
            return [(openings[0].split(), half), (openings[1].split(), half)]
        share = Fraction(2, 3) if 2 * len(first) >= 3 * len(second) else half
        for i, (k, side) in enumerate(((kind, first), (other, second))):
            if len(side) == 1:
                openings[i] = SIDE_COUNTED[k]["one"]
            elif i == 0 and len(side) > n_read / 2:
                openings[i] = SIDE_COUNTED[k]["most"]
        return [(openings[0].split(), share), (openings[1].split(), 1 - share)]

    def _mixed_sides(
        self, reviews: list[str], stars: list[float | None], target: float | None
    ) -> Sides | None:
        """With decode.mixed_sides, for reviews of both minds (their target stars within
        mixed_band of 3, at least one review of praise and one of complaints): each side's
        kind, its positions among `reviews` and its mean stars, the side of more reviews first
        (on a tie, the one nearer the target); else None."""
        cfg = self.config.decode
        off = not (cfg.mixed_sides and cfg.mixed_band)  # mixed_band 0: no reviews of both minds
        if off or target is None or abs(target - 3) > cfg.mixed_band:
            return None
        read = self._given_or_read(reviews, stars)
        praise = [j for j, s in enumerate(read) if s >= PRAISE_STARS]
        complaints = [j for j, s in enumerate(read) if s <= SIDE_COMPLAINT_STARS]
        if not (praise and complaints):
            return None
        sides = [
            (kind, side, sum(read[j] for j in side) / len(side))
            for kind, side in (("praise", praise), ("complaints", complaints))
        ]
        if (len(complaints), target < 3) > (len(praise), False):
            sides.reverse()
        return sides

    def summarize_tokens(
        self,
        reviews: Sequence[str],
        ratings: Sequence[float | None] | None = None,
        slice: str = "all",
    ) -> list[str]:
        """The summary of one entity's reviews as tokens."""
        return self.summarize_tokens_batch([reviews], 1, [ratings], slice)[0]

    # ---- opinion ----------------------------------------------------------------------------

    def slice_reviews(
        self,
        reviews: Sequence[str],
        stars: Sequence[float | None] | None,
        slice: str,
        where: str = "",
        warn: bool = True,
    ) -> tuple[list[str], list[float | None]]:
        """The reviews (and their stars) a summary of `slice` speaks for; no reviews when none
        belongs to it (and an EmptySliceWarning, unless `warn` is False)."""
        if slice not in SLICES:
            raise DenoiseSumError(f"slice={slice!r}: must be one of {', '.join(SLICES)}")
        reviews = review_list(reviews, where)
        stars = list(stars) if stars is not None else [None] * len(reviews)
        if len(stars) != len(reviews):
            raise DenoiseSumError(
                f"{where}{len(stars)} ratings for {len(reviews)} reviews "
                "(one per review, None where unknown)"
            )
        if slice == "all":
            return list(reviews), stars
        if self.rating is None and None in stars:
            raise DenoiseSumError(
                f"slice={slice!r} needs every review's stars, or a model "
                "with a rating model (rating.npz) to read them"
            )
        read = self._given_or_read(reviews, stars)
        keep = [
            i
            for i, s in enumerate(read)
            if (s <= COMPLAINT_STARS if slice == "complaints" else s >= PRAISE_STARS)
        ]
        if not keep and warn:
            warnings.warn(where + empty_slice_message(slice), EmptySliceWarning, stacklevel=3)
        return [reviews[i] for i in keep], [read[i] for i in keep]

    def _given_or_read(self, reviews: Sequence[str], stars: Sequence[float | None]) -> list[float]:
        """Each review's stars: the given ones, else the rating model's reading."""
        return [
            s if s is not None else self.rating.star(r) for r, s in zip(reviews, stars, strict=True)
        ]

    def target_stars(self, reviews: Sequence[str], stars: Sequence[float | None]) -> float | None:
        """The opinion a summary of these reviews should convey: their mean stars when every
        one is given, else the rating model's mean reading (None without a rating model)."""
        if stars and None not in stars:
            return sum(stars) / len(stars)
        return None if self.rating is None else float(self.rating.stars(reviews).mean())

    def _word_pull(self) -> torch.Tensor:
        """[V] each content word's pull on the stars, scaled so that the 99th percentile of
        its size is 1 (opinion_weight is then in nats per star of difference). Function words
        ("not", "no", "but") pull nothing: alone they push a summary toward "not bad", whose
        opinion is the opposite of the word's."""
        if self._pull is None:
            weights = self.rating.word_weights()
            content = set(self._word_classes()[0])
            pull = torch.tensor(
                [
                    weights.get(w, 0.0) if i in content else 0.0
                    for i, w in enumerate(self.vocab.tokens)
                ]
            )
            scale = float(pull.abs()[pull != 0].quantile(0.99)) if bool(pull.any()) else 1.0
            self._pull = (pull / scale).clamp(-1, 1)
        return self._pull

    def _word_classes(self) -> tuple[list[int], list[int], set[int]]:
        """(content words, sentence ends, ids the input-overlap score ignores) of the
        vocabulary: content words are alphabetic non-stopwords; ignored are the specials and
        tokens with no letter or digit."""
        if self._classes is None:
            tokens = self.vocab.tokens
            content = [i for i, w in enumerate(tokens) if i >= len(SPECIALS) and is_content_word(w)]
            ends = [self.vocab.index[w] for w in (".", "!", "?") if w in self.vocab.index]
            ignore = {
                i
                for i, w in enumerate(tokens)
                if i < len(SPECIALS) or not any(ch.isalnum() for ch in w)
            }
            self._classes = content, ends, ignore
        return self._classes

    def _content_tensor(self) -> torch.Tensor:
        """_word_classes' content words as a tensor (computed once)."""
        if self._content_ids is None:
            self._content_ids = torch.tensor(self._word_classes()[0])
        return self._content_ids

    def _decode(
        self,
        encoded: list[list[list[int]]],
        batch_size: int,
        targets: list[float | None] | None = None,
        side: bool = False,
    ) -> list[list[str]]:
        """Per entity, the best hypothesis; with decode.rerank, the candidate (n-best and
        review-subset hypotheses) closest to its reviews (inference/rerank.py); with
        decode.avoid_contradiction, the best that neither contradicts itself nor the reviews
        (_consistent). targets: per entity, the stars the summary should convey (None:
        unknown); side: as in _consistent."""
        cfg = self.config.decode
        targets = targets or [None] * len(encoded)
        sources, owner = list(encoded), list(range(len(encoded)))
        if cfg.rerank:
            for e, reviews in enumerate(encoded):
                for keep in review_subsets(len(reviews), cfg.subsets):
                    sources.append([reviews[i] for i in keep])
                    owner.append(e)
        candidates: list[list[list[int]]] = [[] for _ in encoded]
        found = self._search(sources, batch_size, [targets[e] for e in owner])
        for e, hyps in zip(owner, found, strict=True):
            candidates[e].extend(hyps)  # the full set's hypotheses first, best first
        ignore = self._word_classes()[2]
        out = []
        for reviews, cands, target in zip(encoded, candidates, targets, strict=True):
            best = choose(cands, reviews, ignore, cfg.rerank_ngrams) if cfg.rerank and cands else 0
            if not cands:
                out.append([])
            elif cfg.avoid_contradiction and self.rating is not None:
                out.append(self._consistent(cands, best, reviews, target, side))
            elif cfg.end_at_sentence:  # a summary stopped at max_length mid-sentence
                out.append(_end_at_sentence(self.vocab.decode(cands[best])))
            else:
                out.append(self.vocab.decode(cands[best]))
        return out

    def _consistent(
        self,
        cands: list[list[int]],
        best: int,
        reviews: list[list[int]],
        target: float | None,
        side: bool = False,
    ) -> list[str]:
        """The first candidate (best first) with no self-contradiction, no clause against the
        reviews and none at odds with itself, else the first with the sentences of such clauses
        cut (opinion.clauses_to_cut; where all would go, all but those against the reviews,
        else all but the first), ending at its last sentence end. With decode.follow_opinion, first
        among them those whose opinion (the rating model's polarity) is the target's. With
        decode.mixed_band, a target within it of 3 stars (reviews of both minds) makes a sweeping
        verdict on the place (opinion.sweeping) a clause to cut as well, as `side` does whatever
        the target: the candidates are one side of a two-sided summary (_decode_sides), whose
        other side denies any verdict; with decode.side_polarity its clauses of the other
        polarity than the target's are cut too."""
        texts = [" ".join(self.vocab.decode(r)) for r in reviews]
        stars = [target] * len(texts) if target is not None else None
        scope = self.config.decode.against_reviews
        if scope == "below-positive":
            scope = "all" if target is not None and target <= POSITIVE else "overall"
        sides = scoped_sides(texts, self.rating, stars, scope)  # once for every candidate
        band = self.config.decode.mixed_band
        verdicts = not side and not (band and target is not None and abs(target - 3) <= band)
        order = [best] + [i for i in range(len(cands)) if i != best]
        # a side of a two-sided summary keeps to its side (decode.side_polarity)
        keeps = 0
        if side and target is not None and self.config.decode.side_polarity:
            keeps = polarity_sign(target)
        kept = (self._cut(self.vocab.decode(cands[i]), sides, verdicts, keeps) for i in order)
        if not (self.config.decode.follow_opinion and target is not None):
            best_kept, best_offends = next(kept)
            if not best_offends:
                return best_kept
            return next((k for k, offends in kept if not offends), best_kept)
        every = list(kept)
        agree = self.rating.stars([" ".join(k) for k, _ in every])
        ranked = sorted(
            range(len(every)), key=lambda i: (polarity(agree[i]) != polarity(target), every[i][1])
        )
        return every[ranked[0]][0]

    def _cut(
        self, tokens: list[str], sides: dict[str, int], verdicts: bool = True, keeps: int = 0
    ) -> tuple[list[str], bool]:
        """(the tokens without the sentences of clauses to cut, ending at a sentence end;
        whether the candidate held any such clause, whatever could be cut). verdicts: as in
        opinion.clauses_to_cut; keeps: as there, the side the text tells (0: none)."""
        tokens = _end_at_sentence(tokens)  # a tail cut off by max_length is never shown
        parts = clauses(" ".join(tokens), self.rating)
        check = check_clauses(parts, sides)
        offending = clauses_to_cut(parts, check, sides, verdicts, keeps)
        sentences = _sentences(tokens)
        cut = {parts[i].sentence for i in offending}
        if len(cut) >= len(sentences):  # nothing would be left: not the clauses against reviews
            check = dataclasses.replace(check, against_reviews=[])
            cut = {parts[i].sentence for i in clauses_to_cut(parts, check, sides, verdicts, keeps)}
        if len(cut) >= len(sentences):  # still nothing: the first sentence stays
            cut -= {0}
        kept = [t for s, x in enumerate(sentences) if s not in cut for t in x]
        return kept, bool(offending)

    def _bf16(self) -> bool:
        """config.bf16 where this device computes bf16 (else fp32, with one warning)."""
        if self.config.bf16 and self._bf16_ok is None:
            self._bf16_ok = use_bf16(self.device, "bf16 decoding")
        return self.config.bf16 and bool(self._bf16_ok)

    def _autocast(self) -> torch.autocast:
        """The precision of decoding: bfloat16 with config.bf16 (where the device has it),
        else float16 on a GPU (`half`), else fp32."""
        if self._bf16():
            return torch.autocast(self.device.type, torch.bfloat16)
        half = self.half and self.device.type == "cuda"
        return torch.autocast(self.device.type, torch.float16, enabled=half)

    def warm(self) -> None:
        """Do now what the first summary would do once and keep: the vocabulary's word classes,
        the rating model's word pull, and the decoders' weights packed as fp16 (with a
        shortlist, the output layers' rows every shortlist starts with). The service calls it
        once: the summarizer copies its requests decode with (serving/worker.py) then share
        these instead of each making its own, and so do the processes of `serve --workers`,
        forked after it (the packed weights take about 10 MiB, read at every step)."""
        self._word_classes()
        if self.config.shortlist:
            self._content_tensor()
        if self.rating is not None:
            self._word_pull()
        if self.model.pack(self._packing()) and self.config.shortlist:
            no_reviews = torch.empty(0, 0, dtype=torch.long, device=self.device)
            rows = shortlist_rows(no_reviews, self.config.shortlist, len(self.vocab))
            for branch in self.model.branches().values():
                branch.decoder.out_rows(rows)  # packs them, and keeps them (the "out:head")

    def _packing(self) -> bool:
        return self.config.packed_fp16 and self.device.type == "cpu" and not self._bf16()

    def _search(
        self,
        sources: list[list[list[int]]],
        batch_size: int,
        targets: list[float | None] | None = None,
    ) -> list[list[list[int]]]:
        """Beam search over each review set: its hypotheses' word ids, best first. targets:
        the stars each summary should convey (the opinion of an opinion model, the steering
        of decode.opinion_weight; None: unknown)."""
        targets = targets or [None] * len(sources)
        self.model.pack(self._packing())
        content, ends, _ = self._word_classes()
        if self.config.shortlist:  # a tensor: shortlist positions are looked up, not listed
            content = self._content_tensor()
        lists = WordLists(banned_words(self.config.decode, self.vocab.index), content, ends)
        out: list[list[list[int]]] = []
        for start in range(0, len(sources), batch_size):
            wanted = targets[start : start + batch_size]
            batch = inference_batch(sources[start : start + batch_size], wanted).to(self.device)
            model, words, ids, reviews = self.model, lists, list, batch.reviews
            allowed = None
            if self.config.shortlist:
                rows = shortlist_rows(batch.reviews, self.config.shortlist, len(self.vocab))
                model = ShortlistModel(self.model, rows)
                words = WordLists(
                    *(
                        model.positions(x)
                        for x in (lists.banned, lists.content, lists.sentence_ends)
                    )
                )
                ids, reviews = model.vocab_ids, model.position[batch.reviews]
                if batch.n_pairs > 1:  # each entity over its own shortlist, as alone
                    allowed = model.entity_words(batch, self.config.shortlist)
            bias = self._bias(wanted, model)
            with self._autocast():
                found = beam_search(
                    model,
                    batch,
                    self.config.decode,
                    words=words,
                    reviews=reviews,
                    bias=bias,
                    allowed=allowed,
                )
            out.extend([ids(h.tokens) for h in hyps] for hyps in found)
        return out

    def _bias(self, targets: list[float | None], model) -> torch.Tensor | None:
        """[B, V] opinion steering: min(0, target - opinion_tone) x each word's pull (at most
        opinion_reach stars down), in the
        search's output space (a ShortlistModel's positions); None when off or nothing to
        steer. Only downward: the model's own voice is already positive (its summaries read
        4.3-4.6 stars whatever the reviews), so reviews that read at least opinion_tone are
        summarized as the model would without steering."""
        cfg = self.config.decode
        if not cfg.opinion_weight or self.rating is None or all(t is None for t in targets):
            return None
        reach = cfg.opinion_reach or float("inf")
        shift = torch.tensor(
            [max(-reach, min(0.0, t - cfg.opinion_tone)) if t is not None else 0.0 for t in targets]
        )
        pull = self._word_pull()
        if isinstance(model, ShortlistModel):
            pull = pull[model.rows.cpu()]
        return (shift.unsqueeze(1) * pull.unsqueeze(0)).to(self.device)  # [B, V]

    def summarize_batch(
        self,
        review_sets: Iterable[Iterable[str]],
        batch_size: int = 8,
        warn: bool = True,
        ratings: SetRatings = None,
        slice: str = "all",
        **options: Any,
    ) -> list[str]:
        """Readable summaries (detokenized, sentence case), one per review set (any iterable of
        any iterables of texts). Review sets the model cannot read (`input_warnings`) raise an
        UnreadableInputWarning unless `warn` is False (for callers that report
        `input_warnings` themselves). ratings, slice and options: as in summarize."""
        review_sets = review_set_list(review_sets)
        with self.options(**options):
            tokens = self.summarize_tokens_batch(review_sets, batch_size, ratings, slice)
        summaries = [detokenize(t) for t in tokens]
        if warn:
            self._warn_unreadable(review_sets)
        return summaries

    def summarize(
        self, reviews: Iterable[str], ratings: Ratings = None, slice: str = "all", **options: Any
    ) -> str:
        """The readable summary of one entity's reviews (any iterable of texts; an
        UnreadableInputWarning when the model cannot read them: `input_warnings`). ratings:
        each review's stars (None where unknown), the opinion to convey (else the rating model
        reads it); slice: "all", or "complaints" / "praise" to summarize only what people
        complain about / praise. options, for this call only (option_names()): max_words (the
        summary ends at the last sentence end within them), min_words, beam, first_person
        (allow I/my/me), opinion_weight, or any DecodeConfig field by its name. The whole
        record (warnings, reading fields, support): summarize_result."""
        reviews = review_list(reviews)
        with self.options(**options):
            summary = detokenize(self.summarize_tokens(reviews, ratings, slice))
        self._warn_unreadable([reviews])
        return summary

    def summarize_results(
        self,
        review_sets: Iterable[Iterable[str]],
        ratings: SetRatings = None,
        slice: str = "all",
        batch_size: int = 8,
        explain: bool = False,
        support: SupportConfig | None = None,
        raw: bool = False,
        **options: Any,
    ) -> list[SummaryResult]:
        """One SummaryResult per review set: the summary, its warnings (said in the result, not
        as Python warnings), reviews_read/reviews_total, and with `explain` each sentence's
        supporting reviews (`support`: the thresholds). raw: the summary as its tokens joined
        by spaces, not readable text. ratings, slice and options as in summarize."""
        sets = review_set_list(review_sets)
        with self.options(**options):  # an empty slice is said in the result, not warned
            tokens, empty = self._summarize_tokens(sets, batch_size, ratings, slice, warn=False)
        results = []
        for reviews, words, no_slice in zip(sets, tokens, empty, strict=True):
            said = self.input_warnings(reviews) + ([empty_slice_message(slice)] if no_slice else [])
            text = " ".join(words) if raw else detokenize(words)
            result = SummaryResult(text, words, said, **self.reading_fields(len(reviews)))
            results.append(self.explain_result(result, reviews, support) if explain else result)
        return results

    def summarize_result(
        self,
        reviews: Iterable[str],
        ratings: Ratings = None,
        slice: str = "all",
        explain: bool = False,
        **options: Any,
    ) -> SummaryResult:
        """summarize_results of one entity's reviews."""
        return self.summarize_results([reviews], [ratings], slice, 1, explain, **options)[0]

    def explain_result(
        self, result: SummaryResult, reviews: Iterable[str], config: SupportConfig | None = None
    ) -> SummaryResult:
        """`result` with its explanation (which reviews support each sentence), whose warnings
        join the result's."""
        found = self.explain(review_list(reviews), result.summary, config)
        return dataclasses.replace(
            result, explanation=found, warnings=result.warnings + found.warnings
        )

    def summarize_frame(
        self,
        frame: Any,
        entity: str = "entity_id",
        text: str = "text",
        rating: str | None = None,
        slice: str = "all",
        batch_size: int = 8,
        explain: bool = False,
        **options: Any,
    ) -> Any:
        """A pandas DataFrame of reviews (one row each: its entity, its text, optionally its
        stars) -> a DataFrame of summaries, one row per entity in order of its first review:
        the entity column, summary, reviews_read, reviews_total (empty when every review was
        read), warnings (a list), and support (a dict) with `explain`. Needs pandas."""
        from denoisesum.inference.frames import frame_review_sets, results_frame

        ids, sets, stars = frame_review_sets(frame, entity, text, rating)
        results = self.summarize_results(sets, stars, slice, batch_size, explain, **options)
        return results_frame(entity, ids, results, explain)

    @contextlib.contextmanager
    def options(self, **options: Any) -> Iterator[None]:
        """Decode with per-call options (option_names()) inside the block; an unknown option or
        a value out of its range is a DenoiseSumError naming it (decode_options)."""
        if not options:
            yield
            return
        old = self.config.decode
        self.config.decode = decode_options(old, options)
        try:
            yield
        finally:
            self.config.decode = old

    def explain(
        self,
        reviews: Iterable[str],
        summary: str | None = None,
        config: SupportConfig | None = None,
    ) -> Explanation:
        """Which of the reviews support each sentence of `summary` (None: summarize them first),
        with scores; method and thresholds in `denoisesum.inference.support`."""
        reviews = review_list(reviews)
        if summary is None:
            summary = self.summarize(reviews)
        return explain_support(reviews, summary, self.vocab.tokenizer, config, self.rating)


def _sentences(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for token in tokens:
        out[-1].append(token)
        if token in (".", "!", "?"):
            out.append([])
    return [s for s in out if s]


def _end_at_sentence(tokens: list[str]) -> list[str]:
    """Tokens up to their last sentence end (all of them when none has one)."""
    ends = [i for i, t in enumerate(tokens) if t in (".", "!", "?")]
    return tokens[: ends[-1] + 1] if ends else tokens
