"""The settings of `denoisesum synthesize` (the [synthesize] table of fit): how many pairs, which
reviews may be candidate summaries, and the token, chunk and document noise. Apart from
pipeline.py so that the workers (shard.py), the driver (pipeline.py) and fit's and the command
line's configs read them without the job."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from denoisesum.config import Range, at_least, between, check_choice
from denoisesum.noising.candidates import PRESETS, CandidateConfig, preset


@dataclass
class NoiseConfig:
    p_replace: float = 0.8  # token replacement probability p_R
    top_p: float = 0.9  # nucleus threshold p_N
    p_remove_chunk: float = 0.4
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "p_replace": between(0, 1),
        "top_p": Range(0, 1, low_open=True),
        "p_remove_chunk": between(0, 1),
    }


DOCUMENT_NOISE = ("similar", "random")


@dataclass
class SynthesisConfig:
    pairs: int = 100_000  # the paper's Yelp size
    preset: str = "yelp"
    candidates: CandidateConfig | None = None  # overrides the preset when given
    n_mean: float = 8.0  # N ~ Normal(n_mean, n_std), at least 1; Yelp dev: 8 reviews each
    n_std: float = 0.0
    noise: NoiseConfig = field(default_factory=NoiseConfig)
    inventory_reviews: int = 5_000  # candidate-like reviews parsed for chunks and templates
    shard_size: int = 500
    lm_batch: int = 32  # candidates per LM forward pass
    seed: int = 1
    # keep only this share of the eligible candidates, those best supported by their entity's
    # other reviews (plan.best_supported; not in the paper); 1.0: all of them, as the paper
    central_fraction: float = 1.0
    # which of the entity's other reviews are the document noise: "similar", the N most similar
    # to the candidate (the paper); "random", N of them at random (not in the paper: at
    # inference the reviews are not chosen to resemble any summary)
    document_noise: str = "similar"
    # draw candidate summaries with weights inverse to their star class's frequency (not in the
    # paper): an opinion-conditioned summarizer needs negative summaries to learn from, and most
    # Yelp candidates are 4-5 stars; False: uniformly, as the paper
    balance_ratings: bool = False
    # when fewer reviews pass the candidate constraints than `pairs` asks for, widen their
    # length bounds to the corpus's own lengths (plan.fitted_lengths: from its 10th to its 75th
    # percentile, never narrower than the constraints' own bounds, nor longer than twice their
    # max_tokens); False: the constraints as given, as the paper
    fit_lengths: bool = False
    # the most pairs made from one candidate summary, each with its own token and chunk noise,
    # when fewer candidates qualify than `pairs` asks for; 1: one pair each, as the paper (a
    # small corpus then gives as many pairs as it has candidates)
    uses_per_candidate: int = 1
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "pairs": at_least(1),
        "uses_per_candidate": at_least(1, "1: each candidate makes one pair"),
        "n_mean": at_least(1),
        "n_std": at_least(0),
        "inventory_reviews": at_least(1),
        "shard_size": at_least(1),
        "lm_batch": at_least(1),
        "seed": at_least(0),
        "central_fraction": Range(0, 1, low_open=True),
    }

    def validate(self) -> None:
        """The choices (each number's range: BOUNDS); the candidate preset is checked even when
        `candidates` overrides it (its name is reported)."""
        check_choice("document_noise", self.document_noise, DOCUMENT_NOISE)
        check_choice("preset", self.preset, PRESETS)

    def candidate_config(self) -> CandidateConfig:
        return self.candidates or preset(self.preset)
