"""Token-level segment noise (paper Algorithm 1, TokenAlter).

Every word of the candidate is replaced, with probability p_R, by a sample from the nucleus
(top-p, p_N) of the cloze LM's distribution at its position. The LM runs once per candidate and
all N noisy copies are drawn from the same distributions.
"""

from __future__ import annotations

import torch

from denoisesum.data.vocab import SPECIALS

# Widths tried for the most likely words, before sorting a whole row: most cloze distributions
# reach p_N = 0.9 within the first 64 words, and topk of a few words is far cheaper than sorting
# 30k. Each stage handles only the rows the previous one did not cover.
_TOPK_STAGES = (64, 1024)


def nucleus_sample(log_probs: torch.Tensor, top_p: float, n: int,
                   generator: torch.Generator) -> torch.Tensor:
    """log_probs [L, V] -> [n, L] samples from each row's top-p nucleus; specials never drawn.

    The nucleus is the smallest set of most likely words whose probability reaches `top_p`
    (after removing special tokens and renormalising).
    """
    probs = log_probs.exp()
    probs[:, : len(SPECIALS)] = 0.0
    probs = probs / probs.sum(-1, keepdim=True)  # [L, V]
    out = torch.empty(n, probs.shape[0], dtype=torch.long)
    rows = torch.arange(probs.shape[0])
    for k in (*_TOPK_STAGES, probs.shape[1]):
        if k >= probs.shape[1]:
            top, index = probs[rows].sort(dim=-1, descending=True)  # [R, V]
        else:
            top, index = probs[rows].topk(k, dim=-1)  # [R, k], sorted descending
        done = top.sum(-1) >= top_p if k < probs.shape[1] else torch.ones(len(rows), dtype=bool)
        if done.any():
            out[:, rows[done]] = _sample_prefix(top[done], index[done], top_p, n, generator)
        rows = rows[~done]
        if len(rows) == 0:
            break
    return out


def _sample_prefix(top: torch.Tensor, index: torch.Tensor, top_p: float, n: int,
                   generator: torch.Generator) -> torch.Tensor:
    """top/index [R, k] (descending probabilities covering top_p) -> [n, R] nucleus samples."""
    before = top.cumsum(-1) - top  # mass of the words ranked above each word
    top = top.masked_fill(before >= top_p, 0.0)  # keep words until the mass reaches top_p
    picks = torch.multinomial(top, n, replacement=True, generator=generator)  # [R, n]
    return index.gather(1, picks).T  # [n, R]


def token_noise(ids: torch.Tensor, log_probs: torch.Tensor, n: int, p_replace: float,
                top_p: float, generator: torch.Generator) -> torch.Tensor:
    """ids [L] -> [n, L]: n copies, each word replaced with probability p_replace."""
    samples = nucleus_sample(log_probs, top_p, n, generator)  # [n, L]
    replace = torch.rand(samples.shape, generator=generator) < p_replace
    return torch.where(replace, samples, ids.unsqueeze(0))
