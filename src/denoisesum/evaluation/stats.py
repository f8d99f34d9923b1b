"""Bootstrap confidence intervals over entities, and a paired significance test between systems.

Every metric here is a mean over entities, so entities are the unit resampled: an interval says
how much the score would move on another test set of the same size from the same distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


def bootstrap_samples(n: int, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """[resamples, n] entity indices drawn with replacement; the same seed gives the same draws,
    and every metric of a report uses the same draws."""
    if n < 1 or resamples < 1:
        raise ValueError("need at least one entity and one resample")
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def percentile_interval(
    scores: Sequence[float], samples: np.ndarray, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `scores`."""
    means = np.asarray(scores, dtype=float)[samples].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class PairedTest:
    """System A minus system B on the same entities."""

    mean_a: float
    mean_b: float
    difference: float  # mean over entities of A - B
    ci_low: float  # bootstrap interval of the difference
    ci_high: float
    p_value: float  # two-sided, approximate randomization
    trials: int

    def to_dict(self) -> dict:
        return asdict(self)


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    trials: int = 10000,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedTest:
    """Approximate randomization test of "A and B score the same" on paired per-entity scores.

    Under the null hypothesis each entity's two scores are exchangeable, so every trial swaps
    them with probability 1/2 (flips the sign of the entity's difference) and we count how often
    the mean difference is at least as large in absolute value as the observed one. The +1 in
    numerator and denominator counts the observed assignment itself, so p is never 0.
    """
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.shape != b_arr.shape or a_arr.ndim != 1 or len(a_arr) == 0:
        raise ValueError("paired scores must be two equally long, non-empty lists")
    diff = a_arr - b_arr
    observed = abs(diff.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(trials, len(diff)))
    permuted = np.abs((signs * diff).mean(axis=1))
    # A tolerance, so that ties that are equal in exact arithmetic count as ties.
    at_least = int(np.count_nonzero(permuted >= observed - 1e-9))
    low, high = percentile_interval(diff, bootstrap_samples(len(diff), resamples, seed), confidence)
    return PairedTest(
        mean_a=float(a_arr.mean()),
        mean_b=float(b_arr.mean()),
        difference=float(diff.mean()),
        ci_low=low,
        ci_high=high,
        p_value=(at_least + 1) / (trials + 1),
        trials=trials,
    )
