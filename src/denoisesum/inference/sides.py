"""Reviews of both minds, summarized as two sides (SummaryPolicy.mixed_sides): which reviews
praise and which complain, and each side's opening and share of the summary's words."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from denoisesum.inference.methods import PRAISE_STARS
from denoisesum.inference.policy import SummaryPolicy
from denoisesum.text import SIDE_COUNTED, SIDE_OPENINGS

# policy.mixed_sides: per side of reviews of both minds, which side, its reviews' positions and
# their mean stars. Its complaints are reviews of at most SIDE_COMPLAINT_STARS (a 3-star review
# is of both minds itself). Each side's summary opens with words that say whose opinion it is
# (text.SIDE_OPENINGS): two sides stated as plain fact read as a summary at odds with itself
Sides = list[tuple[str, list[int], float]]
SIDE_COMPLAINT_STARS = 2.0


def side_plans(
    sides: Sides, n_read: int, policy: SummaryPolicy
) -> list[tuple[list[str], Fraction]]:
    """Per side of a split summary (mixed_sides, of n_read reviews read): its opening's
    tokens and its share of the words. Halves and "some ... others" unless
    policy.side_shares: then a side of at least 1.5 times the other's reviews gets two
    thirds, and the openings count ("most" for over half the reviews read, "one")."""
    (kind, first, _), (other, second, _) = sides
    openings = [SIDE_OPENINGS[kind][0], SIDE_OPENINGS[other][1]]
    half = Fraction(1, 2)  # exact: a side's bounds are min_words x share, rounded down
    if not policy.side_shares:
        return [(openings[0].split(), half), (openings[1].split(), half)]
    share = Fraction(2, 3) if 2 * len(first) >= 3 * len(second) else half
    for i, (k, side) in enumerate(((kind, first), (other, second))):
        if len(side) == 1:
            openings[i] = SIDE_COUNTED[k]["one"]
        elif i == 0 and len(side) > n_read / 2:
            openings[i] = SIDE_COUNTED[k]["most"]
    return [(openings[0].split(), share), (openings[1].split(), 1 - share)]


def mixed_sides(
    target: float | None, policy: SummaryPolicy, read_stars: Callable[[], list[float]]
) -> Sides | None:
    """With policy.mixed_sides, for reviews of both minds (their target stars within
    mixed_band of 3, at least one review of praise and one of complaints): each side's
    kind, its reviews' positions and their mean stars (read_stars(): each review's stars, the
    given or the rating model's), the side of more reviews first
    (on a tie, the one nearer the target); else None."""
    off = not (policy.mixed_sides and policy.mixed_band)  # 0: no reviews of both minds
    if off or target is None or abs(target - 3) > policy.mixed_band:
        return None
    read = read_stars()
    praise = [j for j, s in enumerate(read) if s >= PRAISE_STARS]
    complaints = [j for j, s in enumerate(read) if s <= SIDE_COMPLAINT_STARS]
    if not (praise and complaints):
        return None
    sides = [
        (kind, side, sum(read[j] for j in side) / len(side))
        for kind, side in (("praise", praise), ("complaints", complaints))
    ]
    if (len(complaints), target < 3) > (len(praise), False):
        sides.reverse()
    return sides
