"""Corpus statistics: reviews, entities, reviews per entity, review lengths in tokens."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from denoisesum.data.corpus import Review
from denoisesum.data.tokenizer import Tokenizer


def describe(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {}
    p = np.percentile(values, [5, 50, 95])
    return {
        "mean": float(values.mean()),
        "std": float(values.std()),
        "min": float(values.min()),
        "p5": float(p[0]),
        "median": float(p[1]),
        "p95": float(p[2]),
        "max": float(values.max()),
    }


@dataclass
class CorpusStats:
    reviews: int
    entities: int
    reviews_per_entity: dict[str, float]
    tokens_per_review: dict[str, float]
    total_tokens: int
    with_rating: int
    with_category: int

    def to_text(self) -> str:
        def row(name: str, d: dict[str, float]) -> str:
            if not d:
                return f"{name:<20} -"
            return (
                f"{name:<20} mean {d['mean']:.1f}  std {d['std']:.1f}  min {d['min']:.0f}  "
                f"median {d['median']:.0f}  p95 {d['p95']:.0f}  max {d['max']:.0f}"
            )

        return "\n".join(
            [
                f"{'reviews':<20} {self.reviews:,}",
                f"{'entities':<20} {self.entities:,}",
                f"{'tokens':<20} {self.total_tokens:,}",
                row("reviews per entity", self.reviews_per_entity),
                row("tokens per review", self.tokens_per_review),
                f"{'with rating':<20} {self.with_rating:,}",
                f"{'with category':<20} {self.with_category:,}",
            ]
        )


def corpus_stats(
    reviews: Iterable[Review], tokenizer: Tokenizer, progress: bool = False
) -> CorpusStats:
    per_entity: Counter[str] = Counter()
    lengths = array("i")  # compact: one C int per review, not a Python object
    rated = categorized = 0
    for review in tqdm(reviews, unit=" reviews", disable=not progress, desc="reading"):
        per_entity[review.entity_id] += 1
        lengths.append(len(tokenizer.tokenize(review.text)))
        rated += review.rating is not None
        categorized += review.category is not None
    lens = np.frombuffer(lengths, dtype=np.int32) if lengths else np.zeros(0, np.int32)
    return CorpusStats(
        reviews=len(lens),
        entities=len(per_entity),
        reviews_per_entity=describe(np.fromiter(per_entity.values(), dtype=np.int64)),
        tokens_per_review=describe(lens),
        total_tokens=int(lens.sum()),
        with_rating=rated,
        with_category=categorized,
    )
