"""Batches of the DenoiseSum summarizer (models/denoisesum.py): their layout and their builders.

A batch holds B pairs whose reviews are flattened into R rows, in any order:

    reviews          [R, T]  word ids, right-padded (the padding value is never read)
    review_lengths   [R]     real words per review, >= 1
    review_pair      [R]     which pair (0..B-1) each review belongs to
    review_kind      [R]     SEGMENT (0) or DOCUMENT (1) noise, or BOTH (2): read by both branches
    summary          [B, S]  summary word ids WITHOUT <s>/</s>, right-padded (training only);
    summary_lengths  [B]     the model adds <s> before and </s> after, as bilm.add_boundaries does,
                             and scores the L words plus </s>
    topics           [B, K]  p(z) of each summary, e.g. from LDA (training, discriminator only)
    ratings          [B]     opinion class of each summary: 0 unknown, 1..5 the star rating
                             rounded (`opinion_class`); read only by a model with opinion on
                             (None: unknown for every pair)

Training pairs come from `make_batch`: per pair, its segment-noise reviews (read by the model's
branch c) and its document-noise reviews (read by branch d). At inference there are no noise
kinds: every real review goes to BOTH branches (the paper treats X as both X_c and X_d), which
`inference_batch` does by giving each review the kind BOTH: it is encoded once and its states
serve both branches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import torch

from denoisesum.data.vocab import PAD_ID

SEGMENT, DOCUMENT, BOTH = 0, 1, 2  # review kinds; BOTH: a review given to both branches (inference)


@dataclass
class SummaryBatch:
    """See the module docstring for the layout."""

    reviews: torch.Tensor  # [R, T] long
    review_lengths: torch.Tensor  # [R] long
    review_pair: torch.Tensor  # [R] long, 0..n_pairs-1
    review_kind: torch.Tensor  # [R] long, SEGMENT, DOCUMENT or BOTH
    n_pairs: int
    summary: torch.Tensor | None = None  # [B, S] long, no <s>/</s>
    summary_lengths: torch.Tensor | None = None  # [B] long
    topics: torch.Tensor | None = None  # [B, K] float, rows sum to 1
    ratings: torch.Tensor | None = None  # [B] long, 0 (unknown) or 1..5 stars

    def to(self, device: torch.device | str) -> SummaryBatch:
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return SummaryBatch(
            **{k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in moved.items()}
        )


N_OPINIONS = 6  # opinion classes: 0 = unknown, 1..5 stars


def opinion_class(rating: float | None) -> int:
    """A rating -> its opinion class: 0 when unknown (None or NaN), else the rating clamped to
    1..5 and rounded half up (so 3.5 is 4, as noising/plan.star_classes counts it)."""
    if rating is None or math.isnan(rating):
        return 0
    return math.floor(min(max(rating, 1.0), 5.0) + 0.5)


def _ratings_tensor(ratings: Sequence[float | None] | torch.Tensor, n_pairs: int) -> torch.Tensor:
    """Ratings of n_pairs summaries (numbers or None; or a tensor of opinion classes) -> [B]
    long opinion classes."""
    if isinstance(ratings, torch.Tensor):
        out = ratings.to(torch.long)
        if bool(((out < 0) | (out >= N_OPINIONS)).any()):
            raise ValueError(f"opinion classes must be in 0..{N_OPINIONS - 1}")
    else:
        out = torch.tensor([opinion_class(r) for r in ratings], dtype=torch.long)
    if out.shape != (n_pairs,):
        raise ValueError(f"ratings must give one value per pair ({n_pairs}), got {list(out.shape)}")
    return out


def pad_ids(seqs: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Lists of word ids -> ([N, max_len] right-padded with PAD_ID, [N] lengths)."""
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    width = max((len(s) for s in seqs), default=1) or 1
    out = torch.full((len(seqs), width), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
    return out, lengths


def make_batch(
    segment: Sequence[Sequence[Sequence[int]]],
    document: Sequence[Sequence[Sequence[int]]],
    summaries: Sequence[Sequence[int]] | None = None,
    topics: Sequence[Sequence[float]] | torch.Tensor | None = None,
    ratings: Sequence[float | None] | torch.Tensor | None = None,
) -> SummaryBatch:
    """Per pair: its segment-noise reviews, its document-noise reviews (lists of word ids), the
    summary's word ids (no <s>/</s>), its topic distribution and its rating (a number or None,
    made an opinion class; or a tensor of opinion classes)."""
    if len(segment) != len(document):
        raise ValueError("segment and document must list the same number of pairs")
    rows, pair, kind = [], [], []
    for b, (seg, doc) in enumerate(zip(segment, document, strict=True)):
        for k, reviews in ((SEGMENT, seg), (DOCUMENT, doc)):
            rows.extend(reviews)
            pair.extend([b] * len(reviews))
            kind.extend([k] * len(reviews))
    reviews, lengths = pad_ids(rows)
    batch = SummaryBatch(
        reviews,
        lengths,
        torch.tensor(pair, dtype=torch.long),
        torch.tensor(kind, dtype=torch.long),
        len(segment),
    )
    if summaries is not None:
        batch.summary, batch.summary_lengths = pad_ids(summaries)
    if topics is not None:
        batch.topics = torch.as_tensor(topics, dtype=torch.float)
    if ratings is not None:
        batch.ratings = _ratings_tensor(ratings, len(segment))
    return batch


def inference_batch(
    review_sets: Sequence[Sequence[Sequence[int]]],
    ratings: Sequence[float | None] | torch.Tensor | None = None,
) -> SummaryBatch:
    """Real reviews of each entity -> a batch that gives all of them to both branches.
    ratings: the opinion each summary is to have (see make_batch); None: unknown."""
    batch = make_batch(review_sets, [[] for _ in review_sets], ratings=ratings)
    batch.review_kind.fill_(BOTH)
    return batch


def of_kind(review_kind: torch.Tensor, kind: int) -> torch.Tensor:
    """review_kind [R] -> [R] bool: the reviews a branch of noise kind `kind` (SEGMENT or
    DOCUMENT) reads, those of its kind and those of kind BOTH."""
    return (review_kind == kind) | (review_kind == BOTH)


def review_word_counts(
    reviews: torch.Tensor, review_pair: torch.Tensor, n_pairs: int, vocab_size: int
) -> torch.Tensor:
    """[B, V] float: how many of pair b's reviews use word w (each review once, however often).
    reviews [R, T] word ids, padding included (callers ignore PAD_ID's count); review_pair [R]."""
    uses = torch.zeros(len(reviews), vocab_size, device=reviews.device)  # [R, V]
    uses.scatter_(1, reviews, 1.0)
    counts = torch.zeros(n_pairs, vocab_size, device=reviews.device)  # [B, V]
    return counts.index_add_(0, review_pair, uses)
