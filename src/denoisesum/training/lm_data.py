"""Batches for language-model training from an EncodedCorpus.

Reviews are cut into segments of at most `max_len` words. Entities are split into train and
held-out by a stable hash of their id, so no entity contributes to both. Batches hold up to
`batch_tokens` padded tokens and group segments of similar length (less padding, more speed).
The order of an epoch depends only on (seed, epoch): a resumed run rebuilds the same batches
and skips the ones already done.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import torch

from denoisesum.data.encoded import EncodedCorpus


def heldout_entities(entities: list[str], percent: float) -> np.ndarray:
    """bool [n_entities]: True for the ~percent% of entities kept out of training."""
    buckets = np.array([zlib.crc32(e.encode("utf-8")) % 10000 for e in entities])
    return buckets < round(percent * 100)


@dataclass
class Segments:
    start: np.ndarray  # int64 [S] offset of the segment's first token in corpus.ids
    length: np.ndarray  # int32 [S]

    def __len__(self) -> int:
        return len(self.start)


def make_segments(corpus: EncodedCorpus, reviews: np.ndarray, max_len: int) -> Segments:
    """Cut the given reviews into consecutive segments of at most `max_len` tokens."""
    starts, lengths = [], []
    for begin, end in zip(corpus.offsets[reviews], corpus.offsets[reviews + 1], strict=True):
        pieces = np.arange(begin, end, max_len, dtype=np.int64)
        starts.append(pieces)
        lengths.append(np.minimum(end - pieces, max_len).astype(np.int32))
    if not starts:
        return Segments(np.zeros(0, np.int64), np.zeros(0, np.int32))
    return Segments(np.concatenate(starts), np.concatenate(lengths))


def split_reviews(corpus: EncodedCorpus, heldout_percent: float) -> tuple[np.ndarray, np.ndarray]:
    """Indices of (train reviews, held-out reviews); empty reviews are dropped."""
    held = heldout_entities(corpus.entities, heldout_percent)[corpus.entity]
    nonempty = corpus.lengths() > 0
    return np.flatnonzero(~held & nonempty), np.flatnonzero(held & nonempty)


def epoch_batches(
    lengths: np.ndarray, batch_tokens: int, seed: int, epoch: int, pool: int = 100_000
) -> list[np.ndarray]:
    """Segment indices of every batch of one epoch, in training order."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    batches: list[np.ndarray] = []
    for begin in range(0, len(order), pool):
        chunk = order[begin : begin + pool]
        batches.extend(
            _pack(chunk[np.argsort(lengths[chunk], kind="stable")], lengths, batch_tokens)
        )
    return [batches[i] for i in rng.permutation(len(batches))]


def fixed_batches(lengths: np.ndarray, batch_tokens: int) -> list[np.ndarray]:
    """Batches for evaluation: sorted by length, no shuffling."""
    return _pack(np.argsort(lengths, kind="stable"), lengths, batch_tokens)


def _pack(sorted_idx: np.ndarray, lengths: np.ndarray, batch_tokens: int) -> list[np.ndarray]:
    batches, begin = [], 0
    for end in range(1, len(sorted_idx) + 1):
        longest = int(lengths[sorted_idx[end - 1]])
        if end - begin > 1 and (end - begin) * longest > batch_tokens:
            batches.append(sorted_idx[begin : end - 1])
            begin = end - 1
    if begin < len(sorted_idx):
        batches.append(sorted_idx[begin:])
    return batches


def collate(
    corpus: EncodedCorpus, table: np.ndarray, segments: Segments, batch: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    """Segment indices -> (ids [B, L] vocabulary ids right-padded with 0, lengths [B])."""
    lengths = segments.length[batch]
    ids = np.zeros((len(batch), int(lengths.max())), dtype=np.int64)
    for row, (start, n) in enumerate(zip(segments.start[batch], lengths, strict=True)):
        ids[row, :n] = table[corpus.ids[start : start + n]]
    return torch.from_numpy(ids), torch.from_numpy(lengths.astype(np.int64))
