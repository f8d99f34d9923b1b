"""Choosing what to say: the opinions most reviews share, praise and complaints in proportion to
the reviews, never two that contradict each other unless the summary says reviewers disagree.

1. **Held widely enough.** An opinion is said when enough distinct reviews hold it
   (`min_holders`: one of up to 2 reviews, two of up to 66, then 3% of them; a neutral
   statement a quarter of them), so the summary's length follows how much the reviews have in
   common.
2. **Strongest first**, where strength is the share of reviews holding it, raised for aspects
   few entities' reviews name (aspects.Lexicon.specificity: "the pho" over "the food") and
   lowered for neutral statements.
3. **In proportion.** Each side (praise, complaints) gets the summary's sentences in the share
   of the reviews on it (3-star reviews count half to each side); unless the reviews are divided,
   the minority's side gets at most one, said last ("On the other hand, ..."), and none when it
   holds less than MINORITY_SHARE of the reviews. The majority's side is never left out.
4. **Consistent.** An aspect is said once, with the polarity most of its reviews give it; both
   sides of it only when the reviews are divided, and then the summary opens by saying so.
5. **Not twice.** A sentence too close to one already chosen (cosine of content words over
   REPEAT) is passed over for the opinion's next best sentence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from denoisesum.opinions.aspects import Lexicon
from denoisesum.opinions.grouping import Opinion
from denoisesum.opinions.sentences import Sentence
from denoisesum.opinions.writing import cosine, ranked_sentences, unit_bag

REPEAT = 0.5  # content-word cosine above which a sentence repeats one already chosen
DIVIDED = (0.3, 0.7)  # a share of unhappy reviews in this range: the reviews are divided
MAX_SENTENCES = 6
NEUTRAL_WEIGHT = 0.6
# reviews not divided: the minority's side gets one sentence when it holds this share of them
MINORITY_SHARE = 0.15
# a neutral statement is often a story ("we went on a Friday"): said only when this share of
# the reviews (and at least 3) make it, as a fact they agree on ("cash only")
NEUTRAL_SHARE = 0.25


@dataclass
class Chosen:
    opinion: Opinion
    sentence: int  # index into the entity's sentences


def min_holders(n_reviews: int) -> int:
    if n_reviews <= 2:
        return 1
    return max(2, math.ceil(0.03 * n_reviews))


def divided(unhappy_share: float) -> bool:
    return DIVIDED[0] <= unhappy_share <= DIVIDED[1]


def strength(opinion: Opinion, n_reviews: int, lexicon: Lexicon) -> float:
    share = len(opinion.reviews) / max(1, n_reviews)
    weight = NEUTRAL_WEIGHT if opinion.polarity == 0 else 1.0
    return share * weight * (1 + 0.25 * lexicon.specificity(opinion.label))


def choose(
    opinions: Sequence[Opinion],
    sentences: Sequence[Sentence],
    unhappy_share: float,
    n_reviews: int,
    lexicon: Lexicon,
    max_words: int,
    sides: tuple[int, ...] = (-1, 0, 1),
    strict: bool = True,
    fluency: Callable | None = None,
) -> list[Chosen]:
    """The opinions to say and the sentence that says each, in the order to say them: the
    majority's side first. When no opinion of a side a reader must hear (the majority's, and
    both sides of divided reviews) is held widely enough, that side is said from single
    reviews: a summary of one side alone would mislead. fluency: writing.ranked_sentences's."""
    ask = _Ask(sentences, unhappy_share, n_reviews, lexicon, max_words, sides, strict, fluency)
    floor = min_holders(n_reviews)
    floors = {-1: floor, 1: floor}
    chosen = ask.pick(opinions, floors)
    # the sides a reader must hear: the majority's, and both when the reviews are divided
    majority = -1 if unhappy_share > 0.5 else 1
    owed = (-1, 1) if divided(unhappy_share) else (majority,)
    silent = [
        side
        for side in owed
        if side in sides and all(side_of(c.opinion.polarity) != side for c in chosen)
    ]
    if floor > 1 and silent:
        chosen = ask.pick(opinions, {**floors, **dict.fromkeys(silent, 1)})
    return _ordered(chosen, unhappy_share)


def side_of(polarity: int) -> int:
    """Praise (and neutral statements) +1, complaints -1."""
    return -1 if polarity < 0 else 1


@dataclass
class _Ask:
    sentences: Sequence[Sentence]
    unhappy_share: float
    n_reviews: int
    lexicon: Lexicon
    max_words: int
    sides: tuple[int, ...]
    strict: bool  # a complaint or praise quoted only from a sentence whose words say it
    fluency: Callable | None = None  # sentences -> how well each reads (fluency.Scores)

    def pick(self, opinions: Sequence[Opinion], floors: dict[int, int]) -> list[Chosen]:
        """floors: per side, the reviews an opinion needs."""
        n = self.n_reviews
        neutral_floor = max(3, floors[1], NEUTRAL_SHARE * n)
        pool = [
            o
            for o in opinions
            if o.polarity in self.sides
            and len(o.reviews) >= (floors[side_of(o.polarity)] if o.polarity else neutral_floor)
        ]
        pool.sort(key=lambda o: -strength(o, n, self.lexicon))
        queues = {side: [o for o in pool if side_of(o.polarity) == side] for side in (-1, 1)}
        split = divided(self.unhappy_share)
        minority = 1 if self.unhappy_share > 0.5 else -1
        share = self.unhappy_share if minority < 0 else 1 - self.unhappy_share
        # not divided: the minority gets at most one sentence, and none when it is small
        room = {minority: 0 if share < MINORITY_SHARE else 1, -minority: MAX_SENTENCES}
        if split:
            room[minority] = MAX_SENTENCES
        return self._fill(opinions, queues, room, split)

    def _fill(self, opinions, queues, room, split: bool) -> list[Chosen]:
        vectors = _Bags(self.sentences)
        chosen: list[Chosen] = []
        taken: dict[str, int] = {}  # aspect -> the polarity said of it
        words = 0
        while len(chosen) < MAX_SENTENCES and (queues[-1] or queues[1]):
            side = _next_side(chosen, queues, self.unhappy_share)
            opinion = queues[side].pop(0)
            if sum(side_of(c.opinion.polarity) == side for c in chosen) >= room[side]:
                continue
            said = taken.get(opinion.aspect)
            if said is not None and not (split and said * opinion.polarity == -1):
                continue  # said once, or both ways only when the reviews are divided
            if said is None and not _majority(opinion, opinions):
                continue
            index = _fresh_sentence(opinion, self, vectors, chosen)
            if index is None:
                continue
            length = len(self.sentences[index].text.split())
            if chosen and words + length > self.max_words:
                break
            chosen.append(Chosen(opinion, index))
            taken[opinion.aspect] = opinion.polarity
            words += length
        return chosen


def _next_side(chosen: list[Chosen], queues: dict[int, list], unhappy_share: float) -> int:
    if not queues[-1]:
        return 1
    if not queues[1]:
        return -1
    unhappy = sum(c.opinion.polarity < 0 for c in chosen)
    return -1 if unhappy < unhappy_share * (len(chosen) + 1) - 0.5 else 1


def _majority(opinion: Opinion, opinions: Sequence[Opinion]) -> bool:
    """Whether no other polarity of the same aspect is held by more reviews."""
    return all(
        len(o.reviews) <= len(opinion.reviews)
        for o in opinions
        if o.aspect == opinion.aspect and o.polarity != opinion.polarity and o.polarity != 0
    )


def _fresh_sentence(
    opinion: Opinion, ask: _Ask, vectors: _Bags, chosen: list[Chosen]
) -> int | None:
    group = [ask.sentences[i] for i in opinion.sentences]
    ranked = ranked_sentences(
        group, opinion.polarity, opinion.label, ask.lexicon.words, ask.strict, ask.fluency
    )
    for k in ranked:
        index = opinion.sentences[k]
        if all(cosine(vectors[index], vectors[c.sentence]) <= REPEAT for c in chosen):
            return index
    return None


class _Bags:
    """Each sentence's content words as a unit vector, made when first asked for: only the
    sentences compared for repeats need one."""

    def __init__(self, sentences: Sequence[Sentence]) -> None:
        self.sentences = sentences
        self.made: dict[int, dict[str, float]] = {}

    def __getitem__(self, i: int) -> dict[str, float]:
        if i not in self.made:
            self.made[i] = unit_bag(self.sentences[i].tokens)
        return self.made[i]


def _ordered(chosen: list[Chosen], unhappy_share: float) -> list[Chosen]:
    """The majority side first, each side strongest first (as chosen)."""
    first = -1 if unhappy_share > 0.5 else 1
    return [c for c in chosen if (c.opinion.polarity < 0) == (first < 0)] + [
        c for c in chosen if (c.opinion.polarity < 0) != (first < 0)
    ]
