"""Token-level segment noise (paper Algorithm 1, TokenAlter).

Every word of the candidate is replaced, with probability p_R, by a sample from the nucleus
(top-p, p_N) of the cloze LM's distribution at its position. The LM runs once per candidate and
all N noisy copies are drawn from the same distributions.
"""

from __future__ import annotations

import torch

from denoisesum.data.vocab import SPECIALS

# Widths tried, each for the rows the previous one did not cover. With the Yelp LM, 65% of rows
# reach p_N = 0.9 within 64 words, 89% within 1024 and 98.5% within 4096; topk of a few words is
# far cheaper than sorting 30k, and the last rows use rejection sampling instead of a sort.
_TOPK_STAGES = (64, 1024, 4096)


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
    rows = torch.arange(probs.shape[0])  # rows not sampled yet
    for k in _TOPK_STAGES:
        if k >= probs.shape[1] or len(rows) == 0:
            break
        top, index = probs[rows].topk(k, dim=-1)  # [R, k], descending
        covered = top.sum(-1) >= top_p  # [R] rows whose nucleus lies inside the top k
        if covered.any():
            out[:, rows[covered]] = _sample_prefix(top[covered], index[covered], top_p, n,
                                                   generator)
        rows = rows[~covered]
    if len(rows):
        out[:, rows] = _sample_by_rejection(probs[rows], top_p, n, generator)
    return out


def _sample_prefix(top: torch.Tensor, index: torch.Tensor, top_p: float, n: int,
                   generator: torch.Generator) -> torch.Tensor:
    """top/index [R, k] (descending probabilities covering top_p) -> [n, R] nucleus samples."""
    before = top.cumsum(-1) - top  # mass of the words ranked above each word
    top = top.masked_fill(before >= top_p, 0.0)  # keep words until the mass reaches top_p
    picks = torch.multinomial(top, n, replacement=True, generator=generator)  # [R, n]
    return index.gather(1, picks).T  # [n, R]


def _sample_by_rejection(probs: torch.Tensor, top_p: float, n: int,
                         generator: torch.Generator) -> torch.Tensor:
    """probs [R, V] -> [n, R] nucleus samples, without sorting the vocabulary.

    Draw from the whole distribution and keep a word iff the words strictly more likely than it
    hold less than top_p of the mass, i.e. iff it is in the nucleus. Drawing from p and keeping
    only nucleus words is exactly sampling from the renormalised nucleus; since the nucleus holds
    at least top_p of the mass, about 1 / top_p draws are needed per sample.
    """
    picks = torch.multinomial(probs, n, replacement=True, generator=generator)  # [R, n]
    todo = torch.ones_like(picks, dtype=torch.bool)
    while todo.any():
        rows = todo.nonzero()[:, 0].unique()
        p_row = probs[rows]  # [r, V]
        p_pick = p_row.gather(1, picks[rows])  # [r, n]
        above = (p_row.unsqueeze(1) * (p_row.unsqueeze(1) > p_pick.unsqueeze(2))).sum(-1)
        todo[rows] &= ~(above < top_p)  # [r, n] accepted draws are done
        if todo.any():
            redo = todo.nonzero()[:, 0].unique()
            picks[redo] = torch.where(todo[redo], torch.multinomial(
                probs[redo], n, replacement=True, generator=generator), picks[redo])
    return picks.T  # [n, R]


def token_noise(ids: torch.Tensor, log_probs: torch.Tensor, n: int, p_replace: float,
                top_p: float, generator: torch.Generator) -> torch.Tensor:
    """ids [L] -> [n, L]: n copies, each word replaced with probability p_replace."""
    samples = nucleus_sample(log_probs, top_p, n, generator)  # [n, L]
    replace = torch.rand(samples.shape, generator=generator) < p_replace
    return torch.where(replace, samples, ids.unsqueeze(0))
