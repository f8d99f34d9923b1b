"""Decoding with several summarizers of one vocabulary at once: their word distributions averaged.

    model = EnsembleModel([model_a, model_b])        # DenoiseSum or ShortlistModel, same words
    hyps = beam_search(model, batch, config)

Each step, p(w) = mean over the models of p_m(w) (a mixture, as fairseq's ensembles do, rather
than a product of experts: one model's near-zero probability does not veto a word). Measured on
the Yelp dev set with the shipped model and its nearest neighbours (the same weights trained on
further): level or worse than the shipped model alone, at k times its cost
(lab/results/archive/mixture-probes.md), so no shipped setting uses it. A study's wrapper: the
package never imports it (lab/studies/mixture_probes.py uses it through lab/studies/_harness.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from denoisesum.inference.beam import DecodeStateLike, DecodingModel


@dataclass
class EnsembleState:
    states: tuple[DecodeStateLike, ...]  # one per model, in the ensemble's order

    def index_select(self, index: torch.Tensor) -> EnsembleState:
        return EnsembleState(tuple(s.index_select(index) for s in self.states))


class EnsembleModel:
    """The beam-search protocol (encode, decode_step) over `models`, whose word ids (or
    shortlist positions) must mean the same words."""

    def __init__(self, models: Sequence[DecodingModel]) -> None:
        if not models:
            raise ValueError("an ensemble needs at least one model")
        self.models = list(models)

    def encode(self, batch) -> EnsembleState:
        return EnsembleState(tuple(m.encode(batch) for m in self.models))

    def decode_step(
        self, state: EnsembleState, prev_tokens: torch.Tensor, words: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, EnsembleState]:
        """prev_tokens [B*] -> log of the mean of the models' p(w_t) [B*, V], next states.
        words [B*, V] bool: each row's own words (sets decoded together over a shortlist)."""
        steps = [
            m.decode_step(s, prev_tokens, words=words)
            for m, s in zip(self.models, state.states, strict=True)
        ]
        log_probs = torch.stack([lp for lp, _ in steps])  # [k, B*, V]
        mean = torch.logsumexp(log_probs, 0) - math.log(len(steps))  # [B*, V]
        return mean, EnsembleState(tuple(s for _, s in steps))
