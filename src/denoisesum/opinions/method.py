"""The opinions method: every review read, the opinions most reviewers share, each written as
one specific third-person sentence that carries the reviews it stands for.

    method = OpinionMethod(lexicon, rating)
    summary = method.summarize(reviews, ratings=[5, 2, None], max_words=60)
    summary.text                                       # "The broth is rich. ..."
    summary.sentences[0].reviews, .holders, .total     # [0, 3, 7], 3, 8

Stages (one module each): sentences.py (every distinct review split into sentences, each with
its aspects and stars), grouping.py (opinions: aspect and polarity, and the reviews holding
them), choosing.py (what to say), writing.py (which sentence says it, in the third person).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from denoisesum.models.rating import NEGATIVE, POSITIVE, RatingModel
from denoisesum.opinions.aspects import Lexicon
from denoisesum.opinions.choosing import choose, divided, side_of
from denoisesum.opinions.grouping import group_opinions
from denoisesum.opinions.sentences import distinct_reviews, read_sentences
from denoisesum.opinions.writing import third_person

SLICES = {"all": (-1, 0, 1), "complaints": (-1,), "praise": (1,)}
COMPLAINT_STARS, PRAISE_STARS = 3.0, 4.0  # the slices' reviews, as the denoisesum method's
DEFAULT_MAX_WORDS = 80
DIVIDED_OPENING = "Reviewers are divided."
OTHER_SIDE = "On the other hand, "


@dataclass
class AttributedSentence:
    text: str
    aspect: str  # what the opinion is about, as reviewers name it
    polarity: int  # -1 complaint, 0 neutral, +1 praise
    reviews: list[int]  # positions in the input of the reviews holding the opinion
    holders: int  # how many distinct reviews hold it
    total: int  # of how many distinct reviews read

    @property
    def share(self) -> str:
        return f"{self.holders} of {self.total} reviews"


@dataclass
class OpinionSummary:
    text: str
    sentences: list[AttributedSentence]
    reviews_read: int  # distinct reviews read (all of them)
    warnings: list[str] = field(default_factory=list)


def review_polarity(stars: float) -> float:
    """A review's weight on the unhappy side: 1 negative, 0 positive, 0.5 in between."""
    return 1.0 if stars < NEGATIVE else 0.0 if stars > POSITIVE else 0.5


class OpinionMethod:
    """Summarizes a review set by its shared opinions (module docstring)."""

    name = "opinions"

    def __init__(self, lexicon: Lexicon, rating: RatingModel) -> None:
        self.lexicon = lexicon
        self.rating = rating

    def summarize(
        self,
        reviews: Sequence[str],
        ratings: Sequence[float | None] | None = None,
        max_words: int | None = None,
        slice: str = "all",
        first_person: bool = False,
    ) -> OpinionSummary:
        texts, stars, positions = self._slice(reviews, ratings, slice)
        distinct = distinct_reviews(texts)
        warnings = list(distinct.warnings)
        if not distinct.texts:
            return OpinionSummary("", [], 0, [*warnings, f"no review belongs to the {slice}"])
        given = [stars[i] for i in distinct.first]
        sentences, review_stars = read_sentences(distinct.texts, self.lexicon, self.rating, given)
        unhappy = sum(map(review_polarity, review_stars)) / len(review_stars)
        n = len(distinct.texts)
        chosen = choose(
            group_opinions(sentences),
            sentences,
            unhappy,
            n,
            self.lexicon,
            max_words or DEFAULT_MAX_WORDS,
            SLICES[slice],
        )
        out = []
        told = 0  # reviewers already named ("one reviewer", then "another")
        for c in chosen:
            s = sentences[c.sentence]
            holders = sorted(positions[distinct.first[r]] for r in c.opinion.reviews)
            text = s.text
            if not first_person:
                text, named = third_person(s.text, s.aspects, "another" if told else "one")
                told += named
            out.append(
                AttributedSentence(
                    text, c.opinion.label, c.opinion.polarity, holders, len(holders), n
                )
            )
        if not out:
            warnings.append("no opinion of the reviews could be written as a sentence")
        return OpinionSummary(self._text(out, unhappy, slice), out, n, warnings)

    def _slice(self, reviews, ratings, slice: str):
        """The reviews of the slice, their given stars and their positions in the input."""
        if slice not in SLICES:
            raise ValueError(f"slice must be one of {', '.join(SLICES)}, got {slice!r}")
        stars = list(ratings) if ratings is not None else [None] * len(reviews)
        keep = range(len(reviews))
        if slice != "all":
            read = [
                s if s is not None else self.rating.star(t)
                for t, s in zip(reviews, stars, strict=True)
            ]
            if slice == "complaints":
                keep = [i for i in keep if read[i] <= COMPLAINT_STARS]
            else:
                keep = [i for i in keep if read[i] >= PRAISE_STARS]
        return [reviews[i] for i in keep], [stars[i] for i in keep], list(keep)

    @staticmethod
    def _text(sentences: list[AttributedSentence], unhappy: float, slice: str) -> str:
        """The sentences joined; reviews divided open with DIVIDED_OPENING, else the minority's
        one sentence is marked as the other side's."""
        texts = [s.text for s in sentences]
        sides = [side_of(s.polarity) for s in sentences]
        if slice != "all" or len(set(sides)) < 2:
            return " ".join(texts)
        if divided(unhappy):
            return " ".join([DIVIDED_OPENING, *texts])
        k = sides.index(sides[-1])  # the minority's sentence comes last
        texts[k] = OTHER_SIDE + _lower_first(texts[k])
        return " ".join(texts)


def _lower_first(text: str) -> str:
    """ "The broth ..." -> "the broth ..."; a name ("Rick is ...") or "I" keeps its capital."""
    first = text.split(" ", 1)[0]
    common = first.lower() in ("the", "one", "another", "their", "a", "an", "service", "food")
    return text[0].lower() + text[1:] if common or first.islower() else text
