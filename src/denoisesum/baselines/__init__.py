"""Baseline summarizers behind one interface (`Summarizer.summarize(reviews) -> str`).

    first      the entity's first review
    random     a seeded random review (the same for an entity whatever else is summarized)
    clustroid  the review with the highest mean ROUGE-1 F1 against the entity's other reviews
    oracle     the review with the best ROUGE against the gold summary (needs references)
    lexrank    LexRank (Erkan & Radev 2004): central sentences up to a word budget
    word2vec   the review nearest the IDF-weighted word2vec centroid (needs fitting on a corpus)
    opinosis   Opinosis (Ganesan et al. 2010): fused redundant word-graph paths, abstractive

`create(name, words=..., seed=...)` builds one by name; `summarize_sets` runs one over review sets.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Iterable, Iterator
from pathlib import Path

from denoisesum.baselines.base import DEFAULT_WORDS, Summarizer
from denoisesum.baselines.lexrank import LexRank
from denoisesum.baselines.opinosis import Opinosis
from denoisesum.baselines.review import Clustroid, FirstReview, Oracle, RandomReview
from denoisesum.baselines.word2vec import Word2VecCentroid
from denoisesum.data.reviewsets import Prediction, ReviewSet
from denoisesum.errors import DenoiseSumError, InputError

BASELINES: dict[str, type[Summarizer]] = {
    cls.name: cls for cls in (FirstReview, RandomReview, Clustroid, Oracle, LexRank,
                              Word2VecCentroid, Opinosis)}


def create(name: str, **options) -> Summarizer:
    """The baseline called `name`, given those of `options` (words, seed, ...) it takes."""
    if name not in BASELINES:
        raise DenoiseSumError(f"unknown baseline '{name}'; choose from {', '.join(BASELINES)}")
    cls = BASELINES[name]
    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in options.items() if k in accepted})


def summarize_sets(summarizer: Summarizer, sets: Iterable[ReviewSet],
                   path: str | Path | None = None) -> Iterator[Prediction]:
    """One prediction per review set; `path` (the sets' file) names the file in errors."""
    for review_set in sets:
        if summarizer.needs_reference and not review_set.summaries:
            raise InputError(f"entity '{review_set.entity_id}' has no gold summaries, which the "
                             f"{summarizer.name} baseline needs", path=path, field="summaries")
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


__all__ = ["BASELINES", "DEFAULT_WORDS", "Clustroid", "FirstReview", "LexRank", "Opinosis",
           "Oracle", "RandomReview", "Summarizer", "Word2VecCentroid", "create", "sample_texts",
           "summarize_sets"]
