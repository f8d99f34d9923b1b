"""Token-level segment noise (paper Algorithm 1, TokenAlter).

Every word of the candidate is replaced, with probability p_R, by a sample from the nucleus
(top-p, p_N) of the cloze LM's distribution at its position. The LM runs once per candidate and
all N noisy copies are drawn from the same distributions.

Speed: the LM's output layer is an adaptive softmax, and building its full 30k-word distribution
costs seven times more than its head (the 2,000 most frequent words plus one entry per tail
cluster). `lm_nucleus_sample` computes the head first and needs the tail words only at positions
where they could enter the nucleus, and there only the tail clusters that could; the result is
exactly the full-distribution nucleus.
"""

from __future__ import annotations

import torch
from torch import nn

from denoisesum.data.vocab import SPECIALS

# Widths tried, each for the rows the previous one did not cover. With the Yelp LM, 65% of rows
# reach p_N = 0.9 within 64 words, 89% within 1024 and 98.5% within 4096; topk of a few words is
# far cheaper than sorting 30k, and the last rows use rejection sampling instead of a sort.
_TOPK_STAGES = (64, 1024, 4096)


def nucleus_sample(
    log_probs: torch.Tensor, top_p: float, n: int, generator: torch.Generator
) -> torch.Tensor:
    """log_probs [L, V] -> [n, L] samples from each row's top-p nucleus; specials never drawn.

    The nucleus is the smallest set of most likely words whose probability reaches `top_p`
    (after removing special tokens and renormalising).
    """
    probs = log_probs.exp()
    probs[:, : len(SPECIALS)] = 0.0
    probs = probs / probs.sum(-1, keepdim=True)  # [L, V]
    return _staged_nucleus(probs, top_p, n, generator)


def _staged_nucleus(
    probs: torch.Tensor, top_p: float, n: int, generator: torch.Generator, exact: bool = False
) -> torch.Tensor:
    """probs [R, W] -> [n, R] column indices sampled from each row's top-p nucleus.

    Rows are served by the smallest top-k stage whose mass reaches top_p; the rest by rejection
    sampling, or (exact=True: rows of a partial distribution known to close within W columns)
    by a full sort, which also absorbs rounding that leaves a row's sum a hair below top_p.
    """
    out = torch.empty(n, probs.shape[0], dtype=torch.long)
    rows = torch.arange(probs.shape[0])  # rows not sampled yet
    for k in _TOPK_STAGES:
        if k >= probs.shape[1] or len(rows) == 0:
            break
        top, index = probs[rows].topk(k, dim=-1)  # [R, k], descending
        covered = top.sum(-1) >= top_p  # [R] rows whose nucleus lies inside the top k
        if covered.any():
            out[:, rows[covered]] = _sample_prefix(
                top[covered], index[covered], top_p, n, generator
            )
        rows = rows[~covered]
    if len(rows) and exact:
        top, index = probs[rows].sort(-1, descending=True)
        out[:, rows] = _sample_prefix(top, index, top_p, n, generator)
    elif len(rows):
        out[:, rows] = _sample_by_rejection(probs[rows], top_p, n, generator)
    return out


def _sample_prefix(
    top: torch.Tensor, index: torch.Tensor, top_p: float, n: int, generator: torch.Generator
) -> torch.Tensor:
    """top/index [R, k] (descending probabilities covering top_p) -> [n, R] nucleus samples."""
    before = top.cumsum(-1) - top  # mass of the words ranked above each word
    top = top.masked_fill(before >= top_p, 0.0)  # keep words until the mass reaches top_p
    picks = torch.multinomial(top, n, replacement=True, generator=generator)  # [R, n]
    return index.gather(1, picks).T  # [n, R]


def _sample_by_rejection(
    probs: torch.Tensor, top_p: float, n: int, generator: torch.Generator
) -> torch.Tensor:
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
            picks[redo] = torch.where(
                todo[redo],
                torch.multinomial(probs[redo], n, replacement=True, generator=generator),
                picks[redo],
            )
    return picks.T  # [n, R]


@torch.no_grad()
def lm_nucleus_sample(
    head: nn.AdaptiveLogSoftmaxWithLoss,
    contexts: torch.Tensor,
    top_p: float,
    n: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """contexts [L, P] (BiLM.contexts of one text) -> [n, L] nucleus samples, specials excluded.

    A tail-cluster word w has p(w) = p(cluster) p(w | cluster) <= p(cluster). So when the nucleus
    of the head's words closes on a word at least as likely as every cluster entry, no tail word
    can rank above any word in it, and it is the nucleus of the full distribution. Only the other
    positions pay for the full distribution.
    """
    shortlist = head.shortlist_size
    head_probs = head.head(contexts).softmax(-1)  # [L, shortlist + clusters]
    words = head_probs[:, :shortlist].clone()
    words[:, : len(SPECIALS)] = 0.0
    clusters = head_probs[:, shortlist:]  # [L, clusters]: the mass of each tail cluster
    mass = words.sum(-1) + clusters.sum(-1)  # [L] all but the specials
    out = torch.empty(n, contexts.shape[0], dtype=torch.long)
    rows = torch.arange(contexts.shape[0])  # rows not sampled yet
    for k in (*_TOPK_STAGES, shortlist):
        k = min(k, shortlist)
        top, index = words[rows].topk(k, dim=-1)  # [R, k]
        top = top / mass[rows].unsqueeze(1)  # probabilities in the renormalised distribution
        cum = top.cumsum(-1)
        closes = cum[:, -1] >= top_p  # the head words alone reach top_p
        last = (cum < top_p).sum(-1).clamp(max=k - 1)  # [R] the word that reaches it
        cut = top.gather(1, last.unsqueeze(1)).squeeze(1) * mass[rows]
        biggest = clusters[rows].amax(-1) if clusters.shape[1] else torch.zeros(len(rows))
        exact = closes & (cut >= biggest)
        if exact.any():
            out[:, rows[exact]] = _sample_prefix(top[exact], index[exact], top_p, n, generator)
        # rows that close but not exactly need the tails; only the others try a wider k
        rows, full = rows[~closes], rows[closes & ~exact]
        if len(full):
            out[:, full] = _tail_nucleus(
                head,
                contexts[full],
                words[full],
                clusters[full],
                mass[full],
                cut[closes & ~exact],
                top_p,
                n,
                generator,
            )
        if len(rows) == 0 or k == shortlist:
            break
    if len(rows):
        out[:, rows] = nucleus_sample(head.log_prob(contexts[rows]), top_p, n, generator)
    return out


def _tail_nucleus(
    head: nn.AdaptiveLogSoftmaxWithLoss,
    contexts: torch.Tensor,
    words: torch.Tensor,
    clusters: torch.Tensor,
    mass: torch.Tensor,
    cut: torch.Tensor,
    top_p: float,
    n: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """Rows whose head words reach top_p, closing on a word of probability `cut` [R] that some
    cluster entry exceeds -> [n, R] exact nucleus samples, expanding only those clusters.

    Adding words above `cut` can only make the nucleus close earlier, on a word at least as
    likely as `cut`; so a word below `cut` is never in it, and a cluster whose total mass is
    below `cut` holds no nucleus word. Its words are never computed (they still count in `mass`).
    words [R, shortlist] (specials zeroed), clusters [R, C]: unnormalised head probabilities.
    """
    need = clusters >= cut.unsqueeze(1)  # [R, C] clusters that may hold nucleus words
    out = torch.empty(n, len(contexts), dtype=torch.long)
    for pattern in need.unique(dim=0):
        sel = (need == pattern).all(1)  # [R] rows needing exactly these clusters
        parts, index = [words[sel]], [torch.arange(head.shortlist_size)]
        for i in pattern.nonzero().flatten().tolist():
            within = head.tail[i](contexts[sel]).softmax(-1)  # [r, cluster size]
            parts.append(within * clusters[sel, i : i + 1])
            index.append(torch.arange(head.cutoffs[i], head.cutoffs[i + 1]))
        probs = torch.cat(parts, 1) / mass[sel].unsqueeze(1)  # full-distribution probabilities
        out[:, sel] = torch.cat(index)[_staged_nucleus(probs, top_p, n, generator, exact=True)]
    return out


def token_noise(
    ids: torch.Tensor, samples: torch.Tensor, p_replace: float, generator: torch.Generator
) -> torch.Tensor:
    """ids [L], samples [n, L] -> [n, L]: each word replaced by its sample with prob p_replace."""
    replace = torch.rand(samples.shape, generator=generator) < p_replace
    return torch.where(replace, samples, ids.unsqueeze(0))
