"""How positive a text reads, in the corpus's own star ratings: a word-rating lexicon.

    lexicon = RatingLexicon.fit((r.text, r.rating) for r in CorpusReader(paths)
                             if r.rating is not None)
    lexicon.rating(summary) - lexicon.rating(" ".join(reviews))  # > 0: the summary is rosier

Each word's weight is how far the mean rating of the reviews that use it lies from the corpus's
mean, shrunk toward 0 for rare words: (Σ ratings − n·mean) / (n + shrink). A text's offset is
the mean weight of its words that the lexicon knows; its estimated rating is a straight line of
the offset, fit by least squares on the first texts of the corpus (a mean of weights is pulled
toward 0 by the many neutral words, so the line stretches it back to stars). It needs no
model and no labels beyond the ratings users already give; it is crude (no negation), but it
ranks Yelp reviews by stars well enough to compare a summary's tone with its reviews' (the
sentiment probe, lab/studies/sentiment_probe.py). Words are those of evaluation.style.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from denoisesum.evaluation.style import sentences
from denoisesum.io import write_json


def _words(text: str) -> set[str]:
    return {w for s in sentences(text) for w in s}


@dataclass
class RatingLexicon:
    mean: float  # the corpus's mean rating
    weights: dict[str, float] = field(default_factory=dict)  # word -> rating offset
    intercept: float = 0.0  # rating ≈ intercept + slope · offset; (0, 0): the mean alone
    slope: float = 0.0

    @classmethod
    def fit(
        cls,
        rated: Iterable[tuple[str, float]],
        min_count: int = 20,
        shrink: float = 20.0,
        calibrate: int = 20_000,
    ) -> RatingLexicon:
        """(text, rating) pairs -> the lexicon of words in at least `min_count` of them, its
        line fit on the first `calibrate` pairs."""
        counts: Counter[str] = Counter()
        sums: Counter[str] = Counter()
        total, kept = 0.0, []
        for n, (text, rating) in enumerate(rated):
            for word in _words(text):
                counts[word] += 1
                sums[word] += rating
            total += rating
            if n < calibrate:
                kept.append((text, rating))
        if not kept:
            raise ValueError("a rating lexicon needs rated texts; none were given")
        mean = total / (n + 1)
        lexicon = cls(
            mean,
            {w: (sums[w] - c * mean) / (c + shrink) for w, c in counts.items() if c >= min_count},
        )
        lexicon.intercept, lexicon.slope = _line(
            [lexicon.offset(t) for t, _ in kept], [r for _, r in kept], mean
        )
        return lexicon

    def offset(self, text: str) -> float:
        """Mean weight of the text's known word tokens (0.0 when it has none)."""
        known = [self.weights[w] for s in sentences(text) for w in s if w in self.weights]
        return sum(known) / len(known) if known else 0.0

    def rating(self, text: str) -> float:
        if self.slope == 0.0:
            return self.mean
        return self.intercept + self.slope * self.offset(text)

    def token_weights(self, tokens: Sequence[str]) -> list[float]:
        """The weight of each token of a vocabulary (0.0 for the words it does not know)."""
        return [self.weights.get(t.lower(), 0.0) for t in tokens]

    def save(self, path: Path) -> None:
        write_json(
            path,
            {
                "mean": self.mean,
                "intercept": self.intercept,
                "slope": self.slope,
                "weights": self.weights,
            },
        )

    @classmethod
    def load(cls, path: Path) -> RatingLexicon:
        data = json.loads(Path(path).read_text())
        return cls(
            float(data["mean"]),
            {str(k): float(v) for k, v in data["weights"].items()},
            float(data["intercept"]),
            float(data["slope"]),
        )


def _line(x: Sequence[float], y: Sequence[float], mean: float) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y on x; (mean, 0) when x does not vary."""
    try:
        slope, intercept = statistics.linear_regression(x, y)
    except statistics.StatisticsError:  # fewer than two points, or x constant
        return mean, 0.0
    return intercept, slope
