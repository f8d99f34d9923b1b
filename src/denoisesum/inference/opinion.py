"""Opinion of a summary's parts: clauses, the aspects they talk about, their polarity.

A reader of "it's a little pricey, but the prices are very reasonable" hears two opinions of one
aspect; of "this is the best pizza ever ... you will not go back" a recommendation and its
opposite. This module finds such pairs with the rating model (models/rating.py) applied clause
by clause, and compares a summary's clauses with what the reviews say of the same aspect.

- A clause is a sentence, split once more at "but" / "however" / ";" (where opinions turn).
- Its aspects are the groups of ASPECTS whose words it uses; a clause with none speaks of the
  place as a whole ("overall", which also holds recommending and coming back).
- Its polarity comes first from a verdict on the place (VERDICT_CUES: "be back", "never
  again", "not disappointed", "worth"), whatever else the clause says ("you won't be going back
  for a quick dinner" is a complaint, though "quick" is praise); then from opinion cues (CUES:
  "pricey", "reasonable", "disappointed", ...). Each cue is flipped by a negation shortly
  before it ("not a bad experience", "you will not be disappointed", "will not go back"): a bag
  of n-grams reads "not bad" as bad, and a review that calls a place "a little pricey" is often
  a five-star one, so the rating model alone hears neither. A clause without cues, or whose
  cues cancel, takes the rating model's reading: positive above POSITIVE_CLAUSE, negative below
  NEGATIVE_CLAUSE, neither in between (a clause that reads mixed asserts nothing a later clause
  could contradict); a short one (fewer than MIN_READ_WORDS words: "go to this location")
  asserts nothing, as the rating model reads such fragments of one-star reviews as one star.
- The reviews' side on an aspect is the mean polarity of their clauses on it (beyond
  ±REVIEW_SIDE); overall, the polarity of their mean stars (given, else read).

`self_contradictions` is a summary giving one aspect both polarities, or a verdict on the place
against a clause that plainly says the opposite ("this is a great place ... the service is
terrible"), or a clause hedging its own strong opinion ("worst customer service is average");
`against_reviews` is a clause whose polarity is the opposite of the reviews' on its
aspect (their clauses on that aspect, or their stars overall). Precision and recall against
hand judgements: docs/results/contradiction.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.models.rating import RatingModel, polarity_sign
from denoisesum.text import SIDE_OPENING

NEGATIVE_CLAUSE, POSITIVE_CLAUSE = 2.25, 3.75
# a clause plainly against a verdict on the place: its cues say so and the rating model agrees
# beyond these stars
PLAINLY_NEGATIVE, PLAINLY_POSITIVE = 1.75, 4.25
MIN_READ_WORDS = 5  # fewer words without a cue: the rating model's reading is not used
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
# opinion cues: +1 praise, -1 complaint (lower-cased tokens)
CUES: dict[str, int] = {
    **dict.fromkeys(
        "great good best amazing awesome excellent delicious friendly helpful attentive "
        "reasonable reasonably affordable cheap fresh clean fast quick worth recommend "
        "recommended love loved nice perfect fantastic wonderful impressed professional tasty "
        "back care".split(),
        1,
    ),
    **dict.fromkeys(
        "bad worst terrible awful horrible rude slow dirty cold bland pricey pricy expensive "
        "overpriced disappointed disappointing mediocre poor gross unprofessional avoid waste "
        "filthy stale greasy wrong".split(),
        -1,
    ),
}
# verdicts on the place: +1 recommending or coming back, -1 the opposite; "again" only counts
# negated ("never again")
VERDICT_CUES: dict[str, int] = {
    **dict.fromkeys("back return returning recommend recommended worth".split(), 1),
    **dict.fromkeys("disappointed avoid".split(), -1),
    "again": 0,
}
_MOVES = frozenset({"back", "return"})  # verdicts only after _MOVE_VERBS
_MOVE_VERBS = frozenset({"be", "come", "coming", "go", "going", "will", "would", "'ll", "to"})
_NEGATORS = frozenset({"not", "n't", "never", "no", "nothing", "hardly", "without", "from"})
_NEGATION_REACH = 3  # a negator flips a cue up to this many tokens after it
_HEDGES = frozenset({"the", "as", "that"})
# words of a verdict on the whole place: their clause speaks of it overall too
_VERDICTS = frozenset(VERDICT_CUES)  # the words that decide a clause also put it on the place
REVIEW_SIDE = 0.25  # the reviews take a side on an aspect when their mean polarity passes it
# a strong opinion and a lukewarm one: together in one clause they contradict (hedged)
_STRONG = frozenset("worst best terrible horrible awful amazing excellent great rude poor".split())
_LUKEWARM = frozenset("ok okay average mediocre decent".split())
_SPLITS = frozenset({"but", "however", ";", "although", "though", ",", "and"})
_ENDS = frozenset({".", "!", "?"})
_TOKENIZER = Tokenizer()


@dataclass
class Clause:
    text: str
    sentence: int  # index of its sentence in the text
    aspects: tuple[str, ...]
    stars: float  # the rating model's reading
    polarity: int  # +1 positive, -1 negative, 0 neither (verdict, cues, then stars)
    cued: bool = False  # its polarity comes from opinion cues, not the rating model alone
    side: int = 0  # the side of a two-sided summary it tells (text.SIDE_OPENINGS); 0: none


@dataclass
class OpinionCheck:
    contradictions: list[tuple[int, int]] = field(default_factory=list)  # clause index pairs
    against_reviews: list[int] = field(default_factory=list)  # clause indices

    @property
    def self_contradicting(self) -> bool:
        return bool(self.contradictions)


def star_side(stars: float) -> int:
    return 1 if stars > POSITIVE_CLAUSE else -1 if stars < NEGATIVE_CLAUSE else 0


def cue_polarity(tokens: Sequence[str], cues: dict[str, int] = CUES) -> int:
    """The sign of a clause's cues, each flipped by a negator up to _NEGATION_REACH tokens
    before it; 0 without cues or when they cancel. A negated praise word after "the" / "as" /
    "that" is a hedge, not a complaint ("not the best", "not as good as the breakfast"). A cue
    of 0 counts only negated, as a complaint ("never again")."""
    total = 0
    for i, token in enumerate(tokens):
        if token not in cues:
            continue
        cue = cues[token]
        if _NEGATORS & set(tokens[max(0, i - _NEGATION_REACH) : i]):
            cue = 0 if cue > 0 and i and tokens[i - 1] in _HEDGES else (-cue or -1)
        total += cue
    return (total > 0) - (total < 0)


def verdict_words(tokens: Sequence[str]) -> list[str]:
    """The tokens, with "back" and "return" blanked where no verb of coming back stands just
    before them: "we will be back" and "will return" are verdicts, "the food came back cold"
    and "the back room" are not."""
    return [
        "" if t in _MOVES and not _MOVE_VERBS & set(tokens[max(0, i - 2) : i]) else t
        for i, t in enumerate(tokens)
    ]


def clause_polarity(tokens: Sequence[str], stars: float) -> tuple[int, bool]:
    """(polarity, cued): a verdict on the place first, then the other cues; else the rating
    model's reading, unless the clause holds a negation (which a bag of n-grams reads wrong:
    "there is n't much better" reads 2 stars) or is too short to read."""
    cues = cue_polarity(verdict_words(tokens), VERDICT_CUES) or cue_polarity(tokens)
    if cues or _NEGATORS & set(tokens):
        return cues, bool(cues)
    if sum(t.isalpha() for t in tokens) < MIN_READ_WORDS:
        return 0, False
    return star_side(stars), False


def split_clauses(tokens: Sequence[str]) -> list[tuple[int, list[str]]]:
    """(sentence index, clause tokens) of a tokenized text, split at sentence ends, turns,
    commas and "and": each clause then holds one opinion on one thing ("the food is great ,
    the service is terrible , and the staff is very friendly" is three)."""
    out: list[tuple[int, list[str]]] = []
    sentence, current = 0, []
    for token in tokens:
        if token in _SPLITS:
            if current:
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
    return (*found, OVERALL) if not found or words & _VERDICTS else found


def clauses(text: str, model: RatingModel) -> list[Clause]:
    """The clauses of `text`, read; those after a side's opening (text.SIDE_OPENINGS) are of
    that side, the opening itself left out."""
    parts, sentence = [], 0
    for side, segment in enumerate(SIDE_OPENING.split(text)):
        tokens = _TOKENIZER.tokenize(segment)
        parts += [(sentence + s, c, side) for s, c in split_clauses(tokens)]
        sentence += sum(t in _ENDS for t in tokens) + bool(tokens and tokens[-1] not in _ENDS)
    stars = model.stars(" ".join(c) for _, c, _ in parts)
    return [
        Clause(" ".join(c), s, aspects_of(c), float(r), *clause_polarity(c, float(r)), side=side)
        for (s, c, side), r in zip(parts, stars, strict=True)
    ]


def self_contradictions(parts: Sequence[Clause]) -> list[tuple[int, int]]:
    """Pairs (i, j), i < j, of clauses of one side giving a shared aspect opposite
    polarities, or of a verdict on the place and a clause plainly saying the opposite; and
    (i, i) for a clause that hedges its own strong opinion (hedged). Two sides' clauses tell
    different reviewers' opinions: they never contradict each other."""
    pairs = [
        (i, j)
        for i, a in enumerate(parts)
        for j in range(i + 1, len(parts))
        if a.side == parts[j].side
        and a.polarity * parts[j].polarity < 0
        and (set(a.aspects) & set(parts[j].aspects) or _against_verdict(a, parts[j]))
    ]
    return sorted(pairs + [(i, i) for i, c in enumerate(parts) if hedged(c)])


def hedged(c: Clause) -> bool:
    """A strong opinion and a lukewarm one in one clause: "worst customer service is average",
    "the best pizza was ok" (judged self-contradicting; the rule took the detector's recall
    over every judged file from 0.51 to 0.57 at precision 0.73 -> 0.75, flagging no more human
    summaries: docs/results/contradiction.md)."""
    words = set(c.text.split())
    return bool(words & _STRONG and words & _LUKEWARM)


def _against_verdict(a: Clause, b: Clause) -> bool:
    """One of two opposite clauses is a verdict on the place and the other plainly says the
    opposite: cues and a rating beyond PLAINLY_NEGATIVE / PLAINLY_POSITIVE. A reader of "this
    is a great place" and "the service is terrible" is told two things; of "it's a little
    pricey" beside it, only a detail."""

    def plain(c: Clause) -> bool:
        limit = c.stars < PLAINLY_NEGATIVE if c.polarity < 0 else c.stars > PLAINLY_POSITIVE
        return c.cued and limit

    return (OVERALL in a.aspects and plain(b)) or (OVERALL in b.aspects and plain(a))


def review_sides(
    reviews: Sequence[str], model: RatingModel, stars: Sequence[float | None] | None = None
) -> dict[str, int]:
    """The reviews' side (+1, -1, 0) per aspect: the mean polarity of their clauses on it;
    "overall" the polarity of their mean stars, given where every review has them, else read."""
    per_aspect: dict[str, list[int]] = {}
    for review in reviews:
        for clause in clauses(review, model):
            for aspect in clause.aspects:
                per_aspect.setdefault(aspect, []).append(clause.polarity)
    out = {}
    for aspect, sides in per_aspect.items():
        mean = float(np.mean(sides))
        out[aspect] = 1 if mean > REVIEW_SIDE else -1 if mean < -REVIEW_SIDE else 0
    out[OVERALL] = overall_side(reviews, model, stars)
    return out


def overall_side(
    reviews: Sequence[str], model: RatingModel, stars: Sequence[float | None] | None = None
) -> int:
    """The reviews' side on the place: the polarity of their mean stars, given where every
    review has them, else read."""
    given = [s for s in (stars or []) if s is not None]
    overall = (
        float(np.mean(given))
        if given and len(given) == len(reviews)
        else float(np.mean(model.stars(reviews)))
    )
    return polarity_sign(overall)


def against_reviews(parts: Sequence[Clause], sides: dict[str, int]) -> list[int]:
    """Clauses whose polarity is the opposite of the reviews' side on one of their aspects."""
    return [
        i
        for i, c in enumerate(parts)
        if any(c.polarity * sides[a] < 0 for a in c.aspects if a in sides)
    ]


def check_opinion(
    summary: str,
    reviews: Sequence[str],
    model: RatingModel,
    stars: Sequence[float | None] | None = None,
    scope: str = "all",
) -> OpinionCheck:
    """Self-contradictions and clauses against the reviews; scope: the aspects the latter
    counts, "all", "overall" (verdicts on the place) or "off"."""
    return check_clauses(clauses(summary, model), scoped_sides(reviews, model, stars, scope))


def scoped_sides(
    reviews: Sequence[str],
    model: RatingModel,
    stars: Sequence[float | None] | None = None,
    scope: str = "all",
) -> dict[str, int]:
    """review_sides restricted to the aspects `scope` counts (check_opinion)."""
    if scope == "off":
        return {}
    if scope == "overall":  # no clause of the reviews needed
        return {OVERALL: overall_side(reviews, model, stars)}
    return review_sides(reviews, model, stars)


def check_clauses(parts: Sequence[Clause], sides: dict[str, int]) -> OpinionCheck:
    """check_opinion for a summary's clauses and the reviews' sides, computed once for every
    candidate summary of the same reviews."""
    return OpinionCheck(self_contradictions(parts), against_reviews(parts, sides))


def clauses_to_cut(
    parts: Sequence[Clause],
    check: OpinionCheck,
    sides: dict[str, int],
    verdicts: bool = True,
    keeps: int = 0,
) -> list[int]:
    """Clause indices whose removal leaves neither a contradiction, nor a clause against the
    reviews, nor one at odds with itself (at_odds), nor with verdicts=False a sweeping verdict
    on the place, nor with keeps (+1 a text of praise, -1 of complaints) a clause of the other
    polarity. Of a contradicting pair goes the clause against the reviews' opinion of the
    place; where they take no side, the verdict on the place (a mixed place keeps its details,
    not a sweeping "this is the best place" or "worst ever"); else the later clause."""
    side = sides.get(OVERALL, 0)
    cut = set(check.against_reviews) | {i for i, c in enumerate(parts) if at_odds(c)}
    if not verdicts:
        cut |= {i for i, c in enumerate(parts) if sweeping(c)}
    if keeps:
        cut |= {i for i, c in enumerate(parts) if c.polarity == -keeps}
    for i, j in check.contradictions:
        a, b = parts[i], parts[j]
        if side:  # the pair's polarities are opposite: one of them is against the reviews
            cut.add(i if a.polarity == -side else j)
        elif OVERALL in a.aspects and OVERALL not in b.aspects:
            cut.add(i)
        else:
            cut.add(j)
    return sorted(cut)


def sweeping(c: Clause) -> bool:
    """A verdict on the whole place, strong or on coming back: "this is the best place in
    phoenix", "worst experience ever", "we will definitely be back", "you will not be
    disappointed" (not one on an aspect: "the best mexican food in phoenix")."""
    tokens = c.text.split()
    verdict = cue_polarity(verdict_words(tokens), VERDICT_CUES) != 0
    return OVERALL in c.aspects and bool(c.polarity) and (bool(set(tokens) & _STRONG) or verdict)


def at_odds(c: Clause) -> bool:
    """A clause whose cues say one thing and whose words read as the opposite, beyond the
    clause thresholds: "you will never waste your money" (a negated complaint, read 1.0
    stars), "nothing bad" (1.4): stock phrases that leave a reader unsure what is meant."""
    return c.cued and star_side(c.stars) == -c.polarity
