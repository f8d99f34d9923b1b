"""Opinion of a summary's parts: clauses, the aspects they talk about, their polarity.

A reader of "it's a little pricey, but the prices are very reasonable" hears two opinions of one
aspect; of "this is the best pizza ever ... you will not go back" a recommendation and its
opposite. This module finds such pairs with the rating model (models/rating.py) applied clause
by clause, and compares a summary's clauses with what the reviews say of the same aspect.

- A clause is a sentence, split once more at "but" / "however" / ";" (where opinions turn).
- Its aspects are the groups of ASPECTS whose words it uses; a clause with none speaks of the
  place as a whole ("overall", which also holds recommending and coming back).
- Its stars are the rating model's; it is `positive` above POSITIVE_CLAUSE, `negative` below
  NEGATIVE_CLAUSE and counts for neither in between (a clause that reads mixed asserts nothing
  a later clause could contradict). The thresholds are stricter than the polarity of whole
  texts: a short clause's expected rating is noisier.

`self_contradictions` is a summary giving one aspect both polarities; `against_reviews` is a
clause whose polarity is the opposite of the reviews' on its aspect (their clauses on that
aspect, or their stars overall). Precision and recall against hand judgements:
docs/results/faithfulness.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.models.rating import RatingModel

NEGATIVE_CLAUSE, POSITIVE_CLAUSE = 2.25, 3.75
OVERALL = "overall"
# words that put a clause on an aspect (lower-cased tokens); everything else is "overall"
ASPECTS: dict[str, frozenset[str]] = {
    "price": frozenset(
        "price prices priced pricey pricy expensive cheap cheaper overpriced cost "
        "costs money value affordable reasonable reasonably $".split()
    ),
    "speed": frozenset(
        "wait waited waiting slow fast quick quickly long minutes hour hours "
        "line prompt promptly".split()
    ),
    "quality": frozenset(
        "food quality meal meals dish dishes taste tasted tasty flavor flavors "
        "fresh bland delicious portions".split()
    ),
    "staff": frozenset(
        "staff service server servers waiter waitress employees employee owner "
        "owners manager rude friendly helpful attentive customer".split()
    ),
    "cleanliness": frozenset(
        "clean dirty filthy cleanliness smell smelled gross sanitary bathroom bathrooms".split()
    ),
}
_TURNS = frozenset({"but", "however", ";", "although", "though"})
_ENDS = frozenset({".", "!", "?"})
_TOKENIZER = Tokenizer()


@dataclass
class Clause:
    text: str
    sentence: int  # index of its sentence in the text
    aspects: tuple[str, ...]
    stars: float

    @property
    def polarity(self) -> int:
        """+1 positive, -1 negative, 0 neither."""
        return 1 if self.stars > POSITIVE_CLAUSE else -1 if self.stars < NEGATIVE_CLAUSE else 0


@dataclass
class OpinionCheck:
    contradictions: list[tuple[int, int]] = field(default_factory=list)  # clause index pairs
    against_reviews: list[int] = field(default_factory=list)  # clause indices

    @property
    def self_contradicting(self) -> bool:
        return bool(self.contradictions)


def split_clauses(tokens: Sequence[str]) -> list[tuple[int, list[str]]]:
    """(sentence index, clause tokens) of a tokenized text, split at sentence ends and turns."""
    out: list[tuple[int, list[str]]] = []
    sentence, current = 0, []
    for token in tokens:
        if token in _TURNS and current:
            out.append((sentence, current))
            current = []
            continue
        current.append(token)
        if token in _ENDS:
            out.append((sentence, current))
            sentence, current = sentence + 1, []
    if current:
        out.append((sentence, current))
    return [(s, c) for s, c in out if any(t.isalpha() for t in c)]


def aspects_of(tokens: Sequence[str]) -> tuple[str, ...]:
    words = set(tokens)
    found = tuple(name for name, vocab in ASPECTS.items() if words & vocab)
    return found or (OVERALL,)


def clauses(text: str, model: RatingModel) -> list[Clause]:
    parts = split_clauses(_TOKENIZER.tokenize(text))
    stars = model.stars(" ".join(c) for _, c in parts)
    return [
        Clause(" ".join(c), s, aspects_of(c), float(r))
        for (s, c), r in zip(parts, stars, strict=True)
    ]


def self_contradictions(parts: Sequence[Clause]) -> list[tuple[int, int]]:
    """Pairs (i, j), i < j, of clauses giving a shared aspect opposite polarities."""
    return [
        (i, j)
        for i, a in enumerate(parts)
        for j in range(i + 1, len(parts))
        if a.polarity * parts[j].polarity < 0 and set(a.aspects) & set(parts[j].aspects)
    ]


def review_opinions(
    reviews: Sequence[str], model: RatingModel, stars: Sequence[float | None] | None = None
) -> dict[str, float]:
    """The reviews' mean stars per aspect: over their clauses on it; "overall" is the mean of
    the given stars where every review has one, else of the rating model's reading."""
    per_aspect: dict[str, list[float]] = {}
    for review in reviews:
        for clause in clauses(review, model):
            for aspect in clause.aspects:
                per_aspect.setdefault(aspect, []).append(clause.stars)
    out = {a: float(np.mean(v)) for a, v in per_aspect.items() if a != OVERALL}
    given = [s for s in (stars or []) if s is not None]
    if given and len(given) == len(reviews):
        out[OVERALL] = float(np.mean(given))
    else:
        out[OVERALL] = float(np.mean(model.stars(reviews)))
    return out


def against_reviews(parts: Sequence[Clause], opinions: dict[str, float]) -> list[int]:
    """Clauses whose polarity is the opposite of the reviews' on one of their aspects."""

    def side(stars: float) -> int:
        return 1 if stars > POSITIVE_CLAUSE else -1 if stars < NEGATIVE_CLAUSE else 0

    return [
        i
        for i, c in enumerate(parts)
        if any(c.polarity * side(opinions[a]) < 0 for a in c.aspects if a in opinions)
    ]


def check_opinion(
    summary: str,
    reviews: Sequence[str],
    model: RatingModel,
    stars: Sequence[float | None] | None = None,
) -> OpinionCheck:
    parts = clauses(summary, model)
    return OpinionCheck(
        self_contradictions(parts), against_reviews(parts, review_opinions(reviews, model, stars))
    )
