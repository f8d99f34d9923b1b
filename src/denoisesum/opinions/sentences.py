"""Every review of an entity, as sentences an opinion can be read from.

    reviews = distinct_reviews(texts)                      # identical reviews once
    sentences = read_sentences(reviews.texts, lexicon, rating)

A review is split into sentences (`inference.support.split_sentences`: after . ! ? … or at a
line break); a sentence of more than MAX_WORDS words (a review without punctuation) is cut at
its commas and conjunctions into clauses, so that one run-on review does not read as one
opinion. Each sentence keeps its text as the reviewer wrote it, its lower-cased tokens, the
aspects it names (aspects.Lexicon) and how many stars it reads as (the rating model of the
model directory, models/rating.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import regex

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.inference.opinion import cue_polarity
from denoisesum.inference.support import split_sentences
from denoisesum.models.rating import RatingModel
from denoisesum.opinions.aspects import Lexicon

MAX_WORDS = 40  # a longer "sentence" is split into clauses
MAX_REVIEW_CHARS = 20_000  # a longer review is read up to here (said in the warnings)
_CLAUSE_BREAK = regex.compile(r"(?<=[,;:])\s+|\s+(?=(?:but|and|so|because)\s)", regex.IGNORECASE)
_SPACES = regex.compile(r"\s+")
# a sentence end glued to the next sentence ("the job.As with"): a space put back
_GLUED = regex.compile(r"(\p{Ll}[.!?])(\p{Lu})")
# where a sentence turns from one opinion to another
_TURNS = frozenset({"but", "however", "although", "though", "except", "while", "yet", ";"})
_TOKENIZER = Tokenizer()


@dataclass
class DistinctReviews:
    texts: list[str]  # each distinct review once, in order of its first appearance
    first: list[int]  # [D] the position in the input of each one's first copy
    copies: list[int]  # [D] how many times each was given
    warnings: list[str] = field(default_factory=list)


@dataclass
class Sentence:
    review: int  # index into DistinctReviews.texts
    text: str  # as written, white space collapsed
    tokens: list[str]  # lower-cased
    aspects: list[str]  # aspect terms named, compounds first
    stars: float  # the rating model's reading, 1-5
    # each aspect's stars: its clause's reading ("the beans are bland, but the salsa is great":
    # the beans low, the salsa high); a sentence of one clause gives every aspect its own
    aspect_stars: dict[str, float] = field(default_factory=dict)
    contrast: bool = False  # two clauses of opposite opinion
    piece: bool = False  # a clause cut from a run-on sentence: counted, never quoted
    cased: bool = True  # its review uses capitals (a lower-case start then marks a fragment)
    felt: int = 0  # the polarity its own words give (cues, or a clear reading), 0: none


def distinct_reviews(texts: Sequence[str]) -> DistinctReviews:
    """Identical reviews (the same words up to case and white space) counted once: a review
    posted many times is one reviewer's opinion."""
    index: dict[str, int] = {}
    out = DistinctReviews([], [], [])
    for i, text in enumerate(texts):
        key = _SPACES.sub(" ", text).strip().lower()
        if key in index:
            out.copies[index[key]] += 1
            continue
        index[key] = len(out.texts)
        out.texts.append(text)
        out.first.append(i)
        out.copies.append(1)
    repeated = sum(c - 1 for c in out.copies)
    if repeated:
        out.warnings.append(f"{repeated} repeated review(s) counted once")
    long = [out.first[d] for d, t in enumerate(out.texts) if len(t) > MAX_REVIEW_CHARS]
    if long:
        shown = ", ".join(str(i) for i in long[:5])
        out.warnings.append(
            f"review(s) {shown} longer than {MAX_REVIEW_CHARS:,} characters: read up to there"
        )
    return out


def clauses(text: str) -> list[str]:
    """A sentence, or the clauses of one longer than MAX_WORDS words."""
    if len(text.split()) <= MAX_WORDS:
        return [text]
    parts = [p for p in _CLAUSE_BREAK.split(text) if p and p.strip()]
    out: list[str] = []
    for part in parts:  # a clause still too long is cut into MAX_WORDS-word pieces
        words = part.split()
        out.extend(" ".join(words[i : i + MAX_WORDS]) for i in range(0, len(words), MAX_WORDS))
    return out


def read_sentences(
    texts: Sequence[str],
    lexicon: Lexicon,
    rating: RatingModel,
    given: Sequence[float | None] | None = None,
) -> tuple[list[Sentence], list[float]]:
    """The sentences of each review (texts: the distinct reviews), with their aspects and
    stars, and each review's stars: the given ones (None where unknown), else the rating
    model's reading of its sentences. A review's stars lean a sentence the rating model reads
    as neither good nor bad toward its reviewer's verdict ("we found a mouse in the room" in a
    1-star review is a complaint)."""
    pieces: list[tuple[int, str, bool]] = []
    cased = [any(c.isupper() for c in review[:MAX_REVIEW_CHARS]) for review in texts]
    for r, review in enumerate(texts):
        review = _GLUED.sub(r"\1 \2", review[:MAX_REVIEW_CHARS])
        for start, end in split_sentences(review):
            cut = clauses(_SPACES.sub(" ", review[start:end]).strip())
            pieces.extend((r, clause, len(cut) > 1) for clause in cut)
    tokens = [_TOKENIZER(text) for _, text, _ in pieces]
    parts = [turns(t) for t in tokens]
    counts = [[rating.counts(p) for p in ps] for ps in parts]
    read = iter(rating.stars_of_counts([c for cs in counts for c in cs]).tolist())
    own = [[next(read) for _ in ps] for ps in parts]
    stars = _review_stars(len(texts), pieces, counts, rating, given)
    out = []
    for (r, text, piece), toks, ps, ones in zip(pieces, tokens, parts, own, strict=True):
        sentence = Sentence(r, text, toks, [], 3.0, piece=piece, cased=cased[r])
        part_stars = [leaned(p, s, stars[r]) for p, s in zip(ps, ones, strict=True)]
        sentence.felt = own_polarity(toks, sum(ones) / len(ones))
        sentence.stars = sum(part_stars) / len(part_stars)
        for p, s in zip(ps, part_stars, strict=True):
            for term in mentions(lexicon, p):
                sentence.aspect_stars.setdefault(term, s)
        sentence.aspects = list(sentence.aspect_stars)
        sentence.contrast = len(ps) > 1 and max(part_stars) - min(part_stars) > 1.0
        out.append(sentence)
    return out, stars


def _review_stars(n, pieces, counts, rating: RatingModel, given) -> list[float]:
    """Each review's given stars, else the rating model's reading of all its sentences (their
    n-grams counted together: those across two sentences left out)."""
    given = list(given) if given is not None else [None] * n
    unknown = [r for r in range(n) if given[r] is None]
    if unknown:
        totals: list[Counter] = [Counter() for _ in range(n)]
        for (r, _, _), cs in zip(pieces, counts, strict=True):
            for c in cs:
                totals[r].update(c)
        read = rating.stars_of_counts([totals[r] for r in unknown])
        for r, s in zip(unknown, read, strict=True):
            given[r] = float(s)
    return given


# opinion words that name their aspect: "overpriced" is about the price
IMPLIED = {w: "price" for w in "overpriced pricey pricy expensive cheap affordable priced".split()}


def mentions(lexicon: Lexicon, tokens: Sequence[str]) -> list[str]:
    """The aspects a clause names, with those its opinion words imply."""
    found = lexicon.mentions(tokens)
    implied = [IMPLIED[t] for t in tokens if t in IMPLIED and IMPLIED[t] in lexicon.terms]
    return list(dict.fromkeys(found + implied))


def own_polarity(tokens: Sequence[str], stars: float) -> int:
    """The polarity a sentence's own words give: its cues, else a clear reading of the rating
    model (below 2.5 or above 4.3: it reads about 3.7 into a text without opinion words)."""
    cue = cue_polarity(tokens)
    if cue:
        return cue
    return -1 if stars < 2.5 else 1 if stars > 4.3 else 0


def leaned(tokens: Sequence[str], stars: float, review_stars: float) -> float:
    """How many stars a clause gives what it names. Its opinion words first (the cue lexicon of
    inference/opinion.py, negation included: "not good" is a complaint): 4.5 or 1.5. Else the
    rating model's reading, which is unsure of a short text without such words (it reads the
    corpus's prior, about 3.7, into "we found a mouse in the room!"), halfway to the stars of
    the review it comes from."""
    cue = cue_polarity(tokens)
    if cue:
        return 3.0 + 1.5 * cue
    return 0.5 * stars + 0.5 * review_stars


def turns(tokens: Sequence[str]) -> list[list[str]]:
    """Tokens cut where the opinion may turn (before "but", "although", ...)."""
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token in _TURNS and parts[-1]:
            parts.append([])
        parts[-1].append(token)
    return [p for p in parts if p]
