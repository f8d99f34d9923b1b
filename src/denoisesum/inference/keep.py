"""Which of a search's candidate summaries the DenoiseSum method keeps, and what of it
(SummaryPolicy.avoid_contradiction and what goes with it): the first candidate that neither
contradicts itself nor the reviews, else the first with the sentences of such clauses cut
(inference/opinion.py finds them). Public functions, so that a study can try another rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from denoisesum.inference.opinion import check_clauses, clauses, clauses_to_cut, scoped_sides
from denoisesum.inference.policy import SummaryPolicy
from denoisesum.models.rating import POSITIVE, RatingModel, polarity, polarity_sign

SENTENCE_ENDS = (".", "!", "?")


def sentences(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for token in tokens:
        out[-1].append(token)
        if token in SENTENCE_ENDS:
            out.append([])
    return [s for s in out if s]


def end_at_sentence(tokens: list[str]) -> list[str]:
    """Tokens up to their last sentence end (all of them when none has one)."""
    ends = [i for i, t in enumerate(tokens) if t in SENTENCE_ENDS]
    return tokens[: ends[-1] + 1] if ends else tokens


def consistent(
    candidates: list[list[str]] | Callable[[int], list[str]],
    count: int,
    best: int,
    review_texts: list[str],
    target: float | None,
    policy: SummaryPolicy,
    rating: RatingModel,
    side: bool = False,
) -> list[str]:
    """The first candidate (best first; `candidates(i)` gives candidate i's tokens, made when
    needed) with no self-contradiction, no clause against the reviews and none at odds with
    itself, else the first with the sentences of such clauses cut (opinion.clauses_to_cut;
    where all would go, all but those against the reviews, else all but the first), ending at
    its last sentence end. With policy.follow_opinion, first among them those whose opinion
    (the rating model's polarity) is the target's. With policy.mixed_band, a target within it
    of 3 stars (reviews of both minds) makes a sweeping verdict on the place (opinion.sweeping)
    a clause to cut as well, as `side` does whatever the target: the candidates are one side of
    a two-sided summary, whose other side denies any verdict; with policy.side_polarity its
    clauses of the other polarity than the target's are cut too."""
    tokens_of = candidates if callable(candidates) else candidates.__getitem__
    stars = [target] * len(review_texts) if target is not None else None
    scope = policy.against_reviews
    if scope == "below-positive":
        scope = "all" if target is not None and target <= POSITIVE else "overall"
    sides = scoped_sides(review_texts, rating, stars, scope)  # once for every candidate
    band = policy.mixed_band
    verdicts = not side and not (band and target is not None and abs(target - 3) <= band)
    order = [best] + [i for i in range(count) if i != best]
    # a side of a two-sided summary keeps to its side (policy.side_polarity)
    keeps = 0
    if side and target is not None and policy.side_polarity:
        keeps = polarity_sign(target)
    kept = (cut(tokens_of(i), sides, rating, verdicts, keeps) for i in order)
    if not (policy.follow_opinion and target is not None):
        best_kept, best_offends = next(kept)
        if not best_offends:
            return best_kept
        return next((k for k, offends in kept if not offends), best_kept)
    every = list(kept)
    agree = rating.stars([" ".join(k) for k, _ in every])
    ranked = sorted(
        range(len(every)), key=lambda i: (polarity(agree[i]) != polarity(target), every[i][1])
    )
    return every[ranked[0]][0]


def cut(
    tokens: list[str],
    sides: dict[str, int],
    rating: RatingModel,
    verdicts: bool = True,
    keeps: int = 0,
) -> tuple[list[str], bool]:
    """(the tokens without the sentences of clauses to cut, ending at a sentence end;
    whether the candidate held any such clause, whatever could be cut). verdicts: as in
    opinion.clauses_to_cut; keeps: as there, the side the text tells (0: none)."""
    tokens = end_at_sentence(tokens)  # a tail cut off by max_words is never shown
    parts = clauses(" ".join(tokens), rating)
    check = check_clauses(parts, sides)
    offending = clauses_to_cut(parts, check, sides, verdicts, keeps)
    split = sentences(tokens)
    gone = {parts[i].sentence for i in offending}
    if len(gone) >= len(split):  # nothing would be left: not the clauses against reviews
        check = dataclasses.replace(check, against_reviews=[])
        gone = {parts[i].sentence for i in clauses_to_cut(parts, check, sides, verdicts, keeps)}
    if len(gone) >= len(split):  # still nothing: the first sentence stays
        gone -= {0}
    kept = [t for s, x in enumerate(split) if s not in gone for t in x]
    return kept, bool(offending)
