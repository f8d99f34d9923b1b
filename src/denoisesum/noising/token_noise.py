"""Token-level segment noise (paper Algorithm 1, TokenAlter).

Every word of the candidate is replaced, with probability p_R, by a sample from the nucleus
(top-p, p_N) of the cloze LM's distribution at its position. The LM runs once per candidate and
all N noisy copies are drawn from the same distributions.
"""

from __future__ import annotations

import torch

from denoisesum.data.vocab import SPECIALS

# How many of the most likely words to try before sorting the whole vocabulary: most cloze
# distributions reach p_N = 0.9 well inside this, and topk is far cheaper than a full sort.
_TOPK_FIRST = 512


def nucleus_sample(log_probs: torch.Tensor, top_p: float, n: int,
                   generator: torch.Generator) -> torch.Tensor:
    """log_probs [L, V] -> [n, L] samples from each row's top-p nucleus; specials never drawn.

    The nucleus is the smallest set of most likely words whose probability reaches `top_p`
    (after removing special tokens and renormalising).
    """
    probs = log_probs.exp()
    probs[:, : len(SPECIALS)] = 0.0
    probs = probs / probs.sum(-1, keepdim=True)  # [L, V]
    k = min(_TOPK_FIRST, probs.shape[1])
    top, index = probs.topk(k, dim=-1)  # [L, k], sorted descending
    if (top.sum(-1) < top_p).any():  # some row's nucleus is wider: sort those rows fully
        top, index = probs.sort(dim=-1, descending=True)
    before = top.cumsum(-1) - top  # mass of the words ranked above each word
    top = top.masked_fill(before >= top_p, 0.0)  # keep words until the mass reaches top_p
    picks = torch.multinomial(top, n, replacement=True, generator=generator)  # [L, n]
    return index.gather(1, picks).T  # [n, L]


def token_noise(ids: torch.Tensor, log_probs: torch.Tensor, n: int, p_replace: float,
                top_p: float, generator: torch.Generator) -> torch.Tensor:
    """ids [L] -> [n, L]: n copies, each word replaced with probability p_replace."""
    samples = nucleus_sample(log_probs, top_p, n, generator)  # [n, L]
    replace = torch.rand(samples.shape, generator=generator) < p_replace
    return torch.where(replace, samples, ids.unsqueeze(0))
