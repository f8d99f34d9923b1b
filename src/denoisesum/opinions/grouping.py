"""Opinions: the sentences that say the same thing about the same aspect, and who says it.

An opinion is an aspect and a polarity ("the broth", negative). A sentence holds an opinion on
each aspect it names (a compound counts for its head noun: "pork ramen" for "ramen", so that
the specific and the plain mention of a dish are one opinion), with the polarity its stars read
as (sentences.leaned: below 2.7 negative, above 3.7 positive, else neutral: a fact such as
"cash only"). An opinion is held by the distinct reviews that have such a sentence; its
strength is how many they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from denoisesum.opinions.sentences import Sentence


@dataclass
class Opinion:
    aspect: str  # the head noun of the aspect
    polarity: int  # -1 negative, 0 neutral, +1 positive
    sentences: list[int] = field(default_factory=list)  # indices into the entity's sentences
    reviews: set[int] = field(default_factory=set)  # the distinct reviews that hold it
    terms: Counter = field(default_factory=Counter)  # how the aspect is named

    @property
    def label(self) -> str:
        """The aspect as reviewers name it most often ("pork ramen" or "ramen")."""
        return self.terms.most_common(1)[0][0]


# a clause's stars (sentences.leaned) below NEGATIVE: a complaint; above POSITIVE: praise
NEGATIVE, POSITIVE = 2.7, 3.7


def sentence_polarity(stars: float) -> int:
    return -1 if stars < NEGATIVE else 1 if stars > POSITIVE else 0


def head(term: str) -> str:
    return term.rsplit(" ", 1)[-1]


def group_opinions(sentences: Sequence[Sentence]) -> list[Opinion]:
    """Every (aspect, polarity) the sentences state, strongest first (most reviews, then most
    sentences, then by name for a stable order)."""
    found: dict[tuple[str, int], Opinion] = {}
    for i, sentence in enumerate(sentences):
        for term in sentence.aspects:
            polarity = sentence_polarity(sentence.aspect_stars.get(term, sentence.stars))
            key = (head(term), polarity)
            opinion = found.get(key) or found.setdefault(key, Opinion(*key))
            opinion.sentences.append(i)
            opinion.reviews.add(sentence.review)
            opinion.terms[term] += 1
    return sorted(
        found.values(), key=lambda o: (-len(o.reviews), -len(o.sentences), o.aspect, o.polarity)
    )
