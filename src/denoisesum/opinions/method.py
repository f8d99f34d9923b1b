"""The opinions method: every review read, the opinions most reviewers share, each written as
one specific third-person sentence that carries the reviews it stands for.

    method = OpinionMethod(lexicon, rating)
    summary = method.summarize(reviews, ratings=[5, 2, None], max_words=60)
    summary.text                                       # "The broth is rich. ..."
    summary.sentences[0].reviews, .count, .total       # [0, 3, 7], 3, 8

Stages (one module each): sentences.py (every distinct review split into sentences, each with
its aspects and stars), grouping.py (opinions: aspect and polarity, and the reviews holding
them), choosing.py (what to say), writing.py (which sentence says it, in the third person).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import regex

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import ConfigError, DenoiseSumError, InputError
from denoisesum.inference.methods import (
    MIN_KNOWN_SHARE,
    Attribution,
    ReviewInput,
    SummaryOptions,
    SummaryResult,
    check_slice,
    empty_slice_message,
    in_slice,
)
from denoisesum.inference.support import explain as explain_support
from denoisesum.models.rating import NEGATIVE, POSITIVE, RatingModel, find_rating_model
from denoisesum.opinions.aspects import FILENAME as LEXICON
from denoisesum.opinions.aspects import Lexicon
from denoisesum.opinions.choosing import choose, divided, side_of
from denoisesum.opinions.fluency import Fluency, Scores
from denoisesum.opinions.grouping import group_opinions
from denoisesum.opinions.sentences import distinct_reviews, read_sentences
from denoisesum.opinions.writing import third_person, tidy

# the opinions each slice says (its reviews: methods.in_slice)
SIDES = {"all": (-1, 0, 1), "complaints": (-1,), "praise": (1,)}
DEFAULT_MAX_WORDS = 80
SETTINGS = ("max_words", "first_person")  # the per-call settings this method takes
MAX_WORDS_RANGE = (5, 1000)
_TOKENIZER = Tokenizer()
DIVIDED_OPENING = "Reviewers are divided."
OTHER_SIDE = "On the other hand, "
# what the method adds to the reviewers' words: left out of the evidence (inference/support.py)
FRAMING = regex.compile(
    r"(?i)\breviewers are divided\.?|\bon the other hand,|\b(?:one|another) reviewer(?:'s)?\b"
)


@dataclass
class OpinionSummary:
    text: str
    sentences: list[Attribution]
    reviews_read: int  # distinct reviews read (all of them)
    warnings: list[str] = field(default_factory=list)


def review_polarity(stars: float) -> float:
    """A review's weight on the unhappy side: 1 negative, 0 positive, 0.5 in between."""
    return 1.0 if stars < NEGATIVE else 0.0 if stars > POSITIVE else 0.5


class OpinionMethod:
    """Summarizes a review set by its shared opinions (module docstring)."""

    name = "opinions"

    def __init__(
        self, lexicon: Lexicon, rating: RatingModel, fluency: Fluency | None = None
    ) -> None:
        self.lexicon = lexicon
        self.rating = rating
        self.fluency = fluency  # how well sentences read (fluency.py); None: not weighed

    @classmethod
    def from_directory(cls, directory: str | Path | None, rating: RatingModel | None = None):
        """The method of a model directory: its aspects.json, rating model (rating.npz, unless
        given) and noising LM (noise-lm/, where it has one: sentences then weighed by how well
        they read); an error saying how to make what is missing."""
        if directory is None:  # a Summarizer made in Python, not loaded from a directory
            raise DenoiseSumError(
                "the opinions method reads a model directory's aspects.json and rating.npz: "
                "load the summarizer with Summarizer.from_pretrained(DIR)"
            )
        directory = Path(directory)
        if not (directory / LEXICON).is_file():
            raise InputError(
                f"no {LEXICON}: the opinions method needs the aspect lexicon "
                "(`denoisesum aspects CORPUS -o DIR`, or `denoisesum fit`)",
                path=directory,
            )
        rating = rating or find_rating_model(directory)
        if rating is None:
            raise InputError(
                "no rating.npz: the opinions method needs a rating model "
                "(`denoisesum rating`, or `denoisesum fit` on a corpus with ratings)",
                path=directory,
            )
        return cls(Lexicon.load(directory), rating, Fluency.load(directory))

    # ---- the method interface (inference/methods.py) ----------------------------------------

    def summarize_sets(
        self, sets: Sequence[ReviewInput], options: SummaryOptions
    ) -> list[SummaryResult]:
        """One SummaryResult per set, each sentence attributed (`attribution`); with
        options.explain, the evidence of every method too (inference/support.py)."""
        check_slice(options.slice)
        max_words, first_person = _settings(options.settings)
        results = []
        for review_set in sets:
            said = self.summarize(
                review_set.reviews, review_set.ratings, max_words, options.slice, first_person
            )
            tokens = _TOKENIZER(said.text)
            text = " ".join(tokens) if options.raw else said.text
            warnings = [
                empty_slice_message(options.slice) if w.startswith("no review belongs") else w
                for w in said.warnings
            ]
            result = SummaryResult(text, tokens, warnings, attribution=said.sentences)
            if options.explain:
                result = result.with_explanation(
                    explain_support(
                        review_set.reviews,
                        said.text,
                        _TOKENIZER,
                        options.support,
                        self.rating,
                        FRAMING,
                    )
                )
            results.append(result)
        return results

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
        opinions = group_opinions(sentences)
        ask = (sentences, unhappy, n, self.lexicon, max_words or DEFAULT_MAX_WORDS, SIDES[slice])
        fluency = Scores(self.fluency) if self.fluency else None
        # no sentence says an opinion in its own words (a review or two): the best readable
        # sentences of the opinions, their polarity read with their reviews' stars
        chosen = choose(opinions, *ask, fluency=fluency) or choose(
            opinions, *ask, strict=False, fluency=fluency
        )
        out = []
        named: list[int] = []  # reviews whose reviewer the summary has named, in order
        for c in chosen:
            s = sentences[c.sentence]
            holders = sorted(positions[distinct.first[r]] for r in c.opinion.reviews)
            if first_person:
                text = tidy(s.text)
            else:  # third_person tidies too
                text, names = third_person(s.text, s.aspects, _who(s.review, named))
                if names and s.review not in named:
                    named.append(s.review)
            out.append(
                Attribution(text, c.opinion.label, c.opinion.polarity, holders, len(holders), n)
            )
        if not out:
            warnings.append("no opinion of the reviews could be written as a sentence")
        warnings += self._unknown_words(sentences)
        text = joined(out, unhappy, slice, Casing(sentences, self.lexicon))
        return OpinionSummary(text, out, n, warnings)

    def _slice(self, reviews, ratings, slice: str):
        """The reviews of the slice, their given stars and their positions in the input."""
        check_slice(slice)
        stars = list(ratings) if ratings is not None else [None] * len(reviews)
        read = stars
        if slice != "all":  # as the denoisesum method reads them: one review at a time
            read = [
                s if s is not None else self.rating.star(t)
                for t, s in zip(reviews, stars, strict=True)
            ]
        keep = in_slice(read, slice)
        return [reviews[i] for i in keep], [stars[i] for i in keep], keep

    def _unknown_words(self, sentences) -> list[str]:
        """A warning when most of the reviews' words are not the corpus's (another language?)."""
        if not self.lexicon.words:
            return []
        words = [t for s in sentences for t in s.tokens if t.isalpha()]
        known = sum(w in self.lexicon.words for w in words) / len(words) if words else 0.0
        if known >= MIN_KNOWN_SHARE:
            return []
        return [
            f"only {known:.0%} of the reviews' words are words of the model's corpus (below "
            f"{MIN_KNOWN_SHARE:.0%}; another language?): few opinions can be read"
        ]


_COMMON_FIRST = frozenset(
    """the one another their a an this that these those our my its his her some most all
    every many great good very really not no""".split()
)


class Casing:
    """Whether a sentence's first word keeps its capital inside a sentence: "I", a word in
    capitals, and a name keep it. A common first word or an aspect term ("Customer service")
    is no name; any other word is one where the entity's reviews write it capitalized inside
    their sentences more often than not ("Eric the GM ..."), or never write it inside a
    sentence and the corpus does not know it."""

    def __init__(self, sentences, lexicon: Lexicon | None = None) -> None:
        self.sentences = sentences
        self.terms = lexicon.terms if lexicon else {}
        self.words = lexicon.words if lexicon else frozenset()

    def lower_first(self, text: str) -> str:
        first = text.split(" ", 1)[0]
        return text if self._name(first) else text[0].lower() + text[1:]

    def _name(self, word: str) -> bool:
        low = word.lower()
        if word.islower() or low in _COMMON_FIRST or low in self.terms:
            return False
        if word.isupper() or low in ("i", "i'm", "i've", "i'd", "i'll"):
            return True
        inside = [
            w
            for s in self.sentences
            if s.cased  # a review all in lower case says nothing of names
            for w in (w.strip(_MARKS) for w in s.text.split()[1:])
            if w.lower() == low
        ]
        if not inside:
            return low not in self.words and "'" not in low
        lower = sum(w.islower() for w in inside)
        return lower < len(inside) - lower


_MARKS = ".,!?;:()\"'"


def joined(sentences, unhappy: float, slice: str, casing: Casing | None = None) -> str:
    """A summary's sentences (their .text and .polarity) joined. Reviews divided open with
    DIVIDED_OPENING, each side's sentences together (choosing.py orders them so); otherwise
    the minority's one sentence comes last, marked with OTHER_SIDE (its first word lower-cased
    unless `casing` says it is a name). Blind judges marked "On the other hand" down between
    the sides of divided reviews, where most sentences do not answer the one before."""
    texts = [s.text for s in sentences]
    sides = [side_of(s.polarity) for s in sentences]
    if slice != "all" or len(set(sides)) < 2:
        return " ".join(texts)
    if divided(unhappy):
        return " ".join([DIVIDED_OPENING, *texts])
    k = sides.index(sides[-1])  # the minority's sentence
    texts[k] = OTHER_SIDE + (casing or Casing([])).lower_first(texts[k])
    return " ".join(texts)


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


def _who(review: int, named: list[int]) -> str:
    """How a sentence's reviewer is named: "one", then "another"; "the same" for the reviewer
    named last, "the first" (second, ...) for one named before that."""
    if not named:
        return "one"
    if review == named[-1]:
        return "the same"
    return f"the {_ORDINALS[named.index(review)]}" if review in named else "another"


def _settings(settings) -> tuple[int | None, bool]:
    """(max_words, first_person) of a call's settings; any other is an error naming the
    settings this method takes."""
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise ConfigError(
            f"option {unknown[0]}: not an option of the opinions method "
            f"(its options: {', '.join(SETTINGS)})",
            key=unknown[0],
            reason="not an option of the opinions method",
        )
    max_words = settings.get("max_words")
    low, high = MAX_WORDS_RANGE
    if max_words is not None and (
        isinstance(max_words, bool)
        or not isinstance(max_words, int)
        or not low <= max_words <= high
    ):
        why = f"must be a whole number between {low} and {high}, got {max_words!r}"
        raise ConfigError(f"option max_words: {why}", key="max_words", reason=why)
    first_person = settings.get("first_person")
    if first_person is not None and not isinstance(first_person, bool):
        why = f"must be true or false, got {first_person!r}"
        raise ConfigError(f"option first_person: {why}", key="first_person", reason=why)
    return max_words, bool(first_person)
