"""Opinion fidelity: does a summary convey the opinion of its reviews? And does it contradict
itself?

MeanSum's businesses are mostly well rated, so ROUGE on them cannot see a summarizer that calls
every business great. These measures need review sets with stars across the whole range:

    sets = build_opinion_set(CorpusReader(held_out_shards), per_stratum=100, seed=0)
    report = opinion_report(summaries, sets, RatingModel.load(...))

`build_opinion_set` draws `size` reviews of each business and keeps those whose mean stars fall
in a STRATA band (mostly negative ≤ 2.0, mixed 2.75-3.25, mostly positive ≥ 4.5), up to
`per_stratum` businesses each. `opinion_report` reads each summary's stars with the rating
model (summary_stars: sentence by sentence, each side of a two-sided summary apart) and compares
its polarity with the reviews' (their mean stars, models.rating.polarity):
per stratum the share of positive / mixed / negative summaries, the share that agrees, the
share that misleads (the opposite polarity, or a reading 1.5 stars or more from the reviews'
mean), and over all sets Pearson's r between summary and review stars; with it the share of
self-contradicting summaries and of clauses against the reviews (inference/opinion.py).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from denoisesum.data.corpus import Review
from denoisesum.inference.opinion import check_opinion
from denoisesum.inference.support import split_sentences
from denoisesum.models.rating import POLARITIES, RatingModel, polarity
from denoisesum.text import SIDE_OPENING, without_openings

STRATA: dict[str, tuple[float, float]] = {
    "negative": (0.0, 2.0),
    "mixed": (2.75, 3.25),
    "positive": (4.5, 5.0),
}
MISLEADING_GAP = 1.5  # stars between a summary's reading and its reviews' mean


def stratum_of(mean_stars: float) -> str | None:
    for name, (low, high) in STRATA.items():
        if low <= mean_stars <= high:
            return name
    return None


def build_opinion_set(
    reviews: Iterable[Review], per_stratum: int, seed: int = 0, size: int = 8
) -> list[dict]:
    """Review sets {entity_id, reviews, ratings, stratum} of `size` rated reviews per business,
    up to per_stratum businesses in each stratum, in a seeded random order."""
    by_entity: dict[str, list[Review]] = {}
    for review in reviews:
        if review.rating is not None:
            by_entity.setdefault(review.entity_id, []).append(review)
    rng = random.Random(seed)
    entities = sorted(by_entity)
    rng.shuffle(entities)
    taken = dict.fromkeys(STRATA, 0)
    out = []
    for entity in entities:
        if len(by_entity[entity]) < size:
            continue
        drawn = rng.sample(by_entity[entity], size)
        stratum = stratum_of(float(np.mean([r.rating for r in drawn])))
        if stratum is None or taken[stratum] >= per_stratum:
            continue
        taken[stratum] += 1
        out.append(
            {
                "entity_id": entity,
                "reviews": [r.text for r in drawn],
                "ratings": [r.rating for r in drawn],
                "stratum": stratum,
            }
        )
    return out


@dataclass
class StratumReport:
    n: int
    review_stars: float  # mean over sets of the reviews' mean stars
    summary_stars: float  # mean of the summaries' readings
    positive: float  # shares of summaries by polarity
    mixed: float
    negative: float
    agree: float  # summary polarity == the reviews'
    misleading: float
    self_contradicting: float
    against_reviews: float  # share of summaries with a clause against the reviews


@dataclass
class OpinionReport:
    strata: dict[str, StratumReport]
    all: StratumReport
    pearson_r: float  # summary stars vs review mean stars, over all sets

    def to_dict(self) -> dict:
        return asdict(self)


def is_misleading(summary_stars: float, review_stars: float) -> bool:
    sides = {polarity(summary_stars), polarity(review_stars)}
    return sides == {"negative", "positive"} or abs(summary_stars - review_stars) >= MISLEADING_GAP


def _stratum_report(rows: list[dict]) -> StratumReport:
    def share(key: str, value=True) -> float:
        return float(np.mean([r[key] == value for r in rows])) if rows else 0.0

    shares = {p: share("polarity", p) for p in POLARITIES}
    return StratumReport(
        len(rows),
        float(np.mean([r["review_stars"] for r in rows] or [0])),
        float(np.mean([r["summary_stars"] for r in rows] or [0])),
        **shares,
        agree=share("agree"),
        misleading=share("misleading"),
        self_contradicting=share("self_contradicting"),
        against_reviews=share("against_reviews"),
    )


def summary_stars(summary: str, model: RatingModel) -> float:
    """The opinion a reader takes from a summary: the mean reading of its sentences, each
    read alone; of a two-sided summary ("Some reviewers praise it: ... Others complain: ..."),
    the mean of its sides' such readings (text before the first opening counts as a side; a
    text of openings alone is read without them). The rating model reads whole reviews, and read
    at once a summary's strongest words outweigh the rest, so this agrees more often with the
    judges' reading, two-sided summaries most (docs/results/opinion-reading.md)."""
    means = []
    for side in SIDE_OPENING.split(summary):
        sentences = [side[a:b] for a, b in split_sentences(side) if side[a:b].strip()]
        if sentences:
            means.append(float(np.mean(model.stars(sentences))))
    return float(np.mean(means)) if means else model.star(without_openings(summary))


def opinion_rows(summaries: Sequence[str], sets: Sequence[dict], model: RatingModel) -> list[dict]:
    """Per set: its stratum, the review and summary stars (summary_stars), polarity, agreement,
    misleading, self-contradiction and clauses against the reviews."""
    stars = [summary_stars(s, model) for s in summaries]
    rows = []
    for summary, rs, s in zip(summaries, sets, stars, strict=True):
        ratings = rs.get("ratings") or []
        given = [r for r in ratings if r is not None]
        review_stars = (
            float(np.mean(given)) if given else float(np.mean(model.stars(rs["reviews"])))
        )
        check = check_opinion(summary, rs["reviews"], model, ratings or None)
        rows.append(
            {
                "entity_id": rs["entity_id"],
                "stratum": rs.get("stratum", "all"),
                "review_stars": review_stars,
                "summary_stars": float(s),
                "polarity": polarity(float(s)),
                "agree": polarity(float(s)) == polarity(review_stars),
                "misleading": is_misleading(float(s), review_stars),
                "self_contradicting": check.self_contradicting,
                "against_reviews": bool(check.against_reviews),
            }
        )
    return rows


def opinion_report(
    summaries: Sequence[str], sets: Sequence[dict], model: RatingModel
) -> tuple[OpinionReport, list[dict]]:
    rows = opinion_rows(summaries, sets, model)
    strata = {
        name: _stratum_report([r for r in rows if r["stratum"] == name])
        for name in dict.fromkeys(r["stratum"] for r in rows)
    }
    x = [r["summary_stars"] for r in rows]
    y = [r["review_stars"] for r in rows]
    r = float(np.corrcoef(x, y)[0, 1]) if len(rows) > 1 and np.std(x) and np.std(y) else 0.0
    return OpinionReport(strata, _stratum_report(rows), r), rows


def format_opinion_report(report: OpinionReport) -> str:
    head = (
        f"{'stratum':<10} {'n':>4} {'reviews':>7} {'summary':>7} {'pos':>5} {'mixed':>5} "
        f"{'neg':>5} {'agree':>5} {'mislead':>7} {'contra':>6} {'against':>7}"
    )
    lines = [head]
    for name, s in [*report.strata.items(), ("all", report.all)]:
        lines.append(
            f"{name:<10} {s.n:>4} {s.review_stars:>7.2f} {s.summary_stars:>7.2f} "
            f"{s.positive:>5.0%} {s.mixed:>5.0%} {s.negative:>5.0%} {s.agree:>5.0%} "
            f"{s.misleading:>7.0%} {s.self_contradicting:>6.0%} "
            f"{s.against_reviews:>7.0%}"
        )
    lines.append(f"Pearson r (summary vs review stars): {report.pearson_r:.3f}")
    return "\n".join(lines)
