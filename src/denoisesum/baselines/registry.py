"""The baselines by name, and how one is made ready: fitted on a corpus sample or loaded."""

from __future__ import annotations

import inspect
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from denoisesum.baselines.base import Summarizer
from denoisesum.baselines.lexrank import LexRank
from denoisesum.baselines.opinosis import Opinosis
from denoisesum.baselines.options import DEFAULT_SAMPLE, DEFAULT_SEED, DEFAULT_WORDS
from denoisesum.baselines.review import Clustroid, FirstReview, Oracle, RandomReview
from denoisesum.baselines.word2vec import Word2VecCentroid
from denoisesum.data.corpus import CorpusReader, FieldNames
from denoisesum.data.reviewsets import Prediction, ReviewSet, read_review_sets
from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.io import require_file

BASELINES: dict[str, type[Summarizer]] = {
    cls.name: cls
    for cls in (FirstReview, RandomReview, Clustroid, Oracle, LexRank, Word2VecCentroid, Opinosis)
}

Log = Callable[[str], None]


def silent(message: str) -> None:
    """A `log` that drops progress messages."""


def create(name: str, **options) -> Summarizer:
    """The baseline called `name`, given those of `options` (words, seed, ...) it takes."""
    if name not in BASELINES:
        raise DenoiseSumError(f"unknown baseline '{name}'; choose from {', '.join(BASELINES)}")
    cls = BASELINES[name]
    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in options.items() if k in accepted})


def prepare(
    summarizer: Summarizer,
    corpus: Sequence[str] = (),
    *,
    sample: int = DEFAULT_SAMPLE,
    seed: int = DEFAULT_SEED,
    model: Path | None = None,
    fields: FieldNames | None = None,
    log: Log = silent,
) -> Summarizer:
    """`summarizer` ready to use: fitted on `sample` reviews of `corpus` (word2vec also saved to
    `model` then), or word2vec loaded from `model`."""
    name = summarizer.name
    if model is not None and not isinstance(summarizer, Word2VecCentroid):
        raise DenoiseSumError(f"--model/--word2vec-model is for word2vec, not {name}")
    if corpus:
        _fit(summarizer, corpus, fields, sample, seed, log)
        if model is not None:
            summarizer.save(model)
            log(f"{name}: saved to {model}")
        return summarizer
    if model is not None:
        return Word2VecCentroid.load(model)
    if summarizer.needs_fit:
        raise DenoiseSumError(
            f"the {name} baseline must be trained first: pass --corpus FILES "
            "(optionally with --model DIR to keep it) or --model DIR"
        )
    return summarizer


def _fit(
    summarizer: Summarizer,
    corpus: Sequence[str],
    fields: FieldNames | None,
    sample: int,
    seed: int,
    log: Log,
) -> None:
    name = summarizer.name
    if not summarizer.can_fit:
        raise DenoiseSumError(
            f"the {name} baseline learns nothing from a corpus; drop "
            "--corpus (lexrank and word2vec use one)"
        )
    start = time.perf_counter()
    texts = sample_texts(CorpusReader(corpus, fields or FieldNames()), sample, seed)
    log(f"{name}: sampled {len(texts):,} reviews in {time.perf_counter() - start:.0f} s")
    start = time.perf_counter()
    summarizer.fit(texts)
    log(f"{name}: fitted in {time.perf_counter() - start:.0f} s")


def summarize_file(
    name: str,
    path: Path,
    *,
    words: int = DEFAULT_WORDS,
    seed: int = DEFAULT_SEED,
    corpus: Sequence[str] = (),
    sample: int = DEFAULT_SAMPLE,
    model: Path | None = None,
    fields: FieldNames | None = None,
    log: Log = silent,
) -> list[Prediction]:
    """The `name` baseline's prediction for every review set in the file at `path`; the other
    options are those of `create` and `prepare`."""
    summarizer = create(name, words=words, seed=seed)
    require_file(path)  # before any fitting, which can take minutes
    summarizer = prepare(
        summarizer, corpus, sample=sample, seed=seed, model=model, fields=fields, log=log
    )
    return list(summarize_sets(summarizer, read_review_sets(path), path))


def summarize_sets(
    summarizer: Summarizer, sets: Iterable[ReviewSet], path: str | Path | None = None
) -> Iterator[Prediction]:
    """One prediction per review set; `path` (the sets' file) names the file in errors."""
    for review_set in sets:
        if summarizer.needs_reference and not review_set.summaries:
            raise InputError(
                f"entity '{review_set.entity_id}' has no gold summaries, which the "
                f"{summarizer.name} baseline needs",
                path=path,
                field="summaries",
            )
        summary = summarizer.summarize(review_set.reviews, references=review_set.summaries)
        yield Prediction(entity_id=review_set.entity_id, summary=summary)


def sample_texts(reader: Iterable, size: int, seed: int = 0) -> list[str]:
    """A uniform sample of `size` review texts from a corpus stream (reservoir sampling), in
    corpus order; the whole corpus when it is smaller."""
    rng = random.Random(seed)
    kept: list[tuple[int, str]] = []
    for i, review in enumerate(reader):
        if i < size:
            kept.append((i, review.text))
        else:
            slot = rng.randrange(i + 1)
            if slot < size:
                kept[slot] = (i, review.text)
    return [text for _, text in sorted(kept)]
