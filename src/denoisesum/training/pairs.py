"""Synthetic training pairs for the summarizer: reading shards, an encoded cache, splits, batches.

Input: the pair shards of `denoisesum synthesize` (format: data/synthetic.py).

The shards are read once into a cache directory (default RUN/data), as EncodedCorpus does for
reviews: every text's tokens as int32 *type ranks* (rank 0 = the most frequent token of the
pairs) in one memory-mapped array, so a vocabulary of any size maps them with one table lookup.
Noisy reviews are cut to `max_review_tokens` when cached (the summary never is); empty reviews
are dropped (chunk noise can delete every chunk of a short review), and a pair left with no
review at all is skipped; both are counted in meta.json.

    ids.npy         int32 [n_tokens]     type rank of every token, texts concatenated
    offsets.npy     int64 [n_texts + 1]  text t is ids[offsets[t]:offsets[t + 1]]
    pair_texts.npy  int64 [n_pairs + 1]  pair p's texts are pair_texts[p] .. pair_texts[p + 1] - 1:
                                         the summary, its segment-noise reviews, then its
                                         document-noise reviews
    n_segment.npy   int32 [n_pairs]      how many of them are segment noise
    pair_id.npy     int64 [n_pairs]      the shards' pair_id
    entity.npy      int32 [n_pairs]      index into entities.json
    ratings.npy     float32 [n_pairs]    the summary's rating, NaN when the pair has none
                                         (format 2; pairs made before ratings were recorded)
    types.json, counts.npy               token strings by rank and their counts in the pairs
    meta.json       sources (shard names, sizes, mtimes), settings, counts; written last
    topics-HASH.npy float32 [n_pairs, K] p(z) of each summary under the topic model with that
                                         hash (computed on first use)

Splits: pairs are held out for the validation loss by a stable hash of their entity id (no
entity is in both). `fraction` keeps a fixed random share of the training pairs (the paper's
10%/50% rows); the held-out pairs are the same whatever the fraction. The order of an epoch
depends only on (seed, epoch), so a resumed run rebuilds it and skips the batches already done.
"""

from __future__ import annotations

import math
import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from denoisesum.config import Range, at_least, check_choice
from denoisesum.data.batch import SummaryBatch, make_batch
from denoisesum.data.encoded import (
    RankedTokens,
    build_directory,
    cache_matches,
    content_fingerprint,
    renumber_by_frequency,
    source_fingerprint,
)
from denoisesum.data.synthetic import find_shards, iter_pairs
from denoisesum.errors import DenoiseSumError
from denoisesum.io import read_json, write_json
from denoisesum.progress import progress_bar
from denoisesum.training.lm_data import heldout_entities

# 2: ratings.npy added (opinion conditioning); a format-1 cache is rebuilt
FORMAT = "denoisesum-pairs/2"
VOCAB_SOURCES = ("pairs", "lm")  # PairVocabConfig.source


@dataclass
class PairVocabConfig:
    max_size: int = 50000  # the paper's 50k, including the 4 special tokens
    min_count: int = 3
    # "pairs": built from the pairs (max_size, min_count); "lm": train.init_lm's own vocabulary,
    # so that every embedding row starts from the LM (the words the LM learned, not the pairs')
    source: str = "pairs"
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "max_size": at_least(5, "the 4 special tokens and a word"),
        "min_count": at_least(1),
    }

    def validate(self) -> None:
        check_choice("source", self.source, VOCAB_SOURCES)


@dataclass
class PairDataConfig:
    max_review_tokens: int = 150  # each noisy review is cut to this many tokens
    max_reviews: int = 0  # per noise kind and pair (the most similar come first); 0 = all
    heldout_percent: float = 1.0  # entities held out for the validation loss; 0 = none
    eval_pairs: int = 1000  # held-out pairs scored at each evaluation; 0 = all
    fraction: float = 1.0  # share of the training pairs used (the paper's 10% / 50% ablation)
    topics: str = ""  # topic model directory (`denoisesum topics`); needed by the discriminator
    BOUNDS: ClassVar[dict[str, Range]] = {
        "max_review_tokens": at_least(1),
        "max_reviews": at_least(0, "0: all"),
        "heldout_percent": Range(0, 100, high_open=True),
        "eval_pairs": at_least(0, "0: all"),
        "fraction": Range(0, 1, low_open=True),
    }


# ---------------------------------------------------------------------------------------------
# the encoded cache


class PairCorpus(RankedTokens):
    """The pairs' texts (summary, segment noise, document noise, in that order per pair) as
    ranked ids; `entity` and `entities` are per pair."""

    def __init__(self, directory: str | Path) -> None:
        super().__init__(directory)
        self.pair_texts = np.load(self.dir / "pair_texts.npy")
        self.n_segment = np.load(self.dir / "n_segment.npy")
        self.pair_id = np.load(self.dir / "pair_id.npy")
        self.ratings = np.load(self.dir / "ratings.npy")  # float32 [n_pairs], NaN: none

    def __len__(self) -> int:
        return len(self.n_segment)

    @property
    def n_document(self) -> np.ndarray:
        return (np.diff(self.pair_texts) - 1 - self.n_segment).astype(np.int32)

    def signature(self) -> list:
        """What identifies the data: shard names and sizes, and the review cut."""
        return [[Path(s["path"]).name, s["bytes"]] for s in self.meta["sources"]] + [
            self.meta["max_review_tokens"]
        ]

    def text(self, t: int) -> np.ndarray:
        return self.ids[self.offsets[t] : self.offsets[t + 1]]

    def summary_tokens(self, pair: int) -> list[str]:
        return [self.types[r] for r in self.text(int(self.pair_texts[pair]))]

    @classmethod
    def build(
        cls,
        pairs_dir: str | Path,
        directory: str | Path,
        max_review_tokens: int,
        progress: bool = True,
    ) -> PairCorpus:
        """Encode the shards of `pairs_dir` into `directory`, reusing a cache of the same data."""
        shards = find_shards(pairs_dir)
        directory = Path(directory)
        if (directory / "meta.json").exists():
            meta = read_json(directory / "meta.json")
            if (
                meta.get("format") == FORMAT
                and cache_matches(meta, shards)
                and meta.get("max_review_tokens") == max_review_tokens
            ):
                return cls(directory)

        def fill(tmp: Path) -> dict[str, Any]:
            counts = _encode_pairs(shards, tmp, max_review_tokens, progress)
            if counts["pairs"] == 0:
                raise DenoiseSumError(f"{pairs_dir}: the shards hold no usable pair")
            return {
                "format": FORMAT,
                "sources": source_fingerprint(shards),
                "content": content_fingerprint(shards),
                "max_review_tokens": max_review_tokens,
                **counts,
            }

        build_directory(directory, fill)
        return cls(directory)


def _encode_pairs(
    shards: list[Path], out: Path, max_review_tokens: int, progress: bool
) -> dict[str, int]:
    type_id: dict[str, int] = {}
    entity_id: dict[str, int] = {}
    offsets, pair_texts = array("q", [0]), array("q", [0])
    n_segment, pair_ids, entity, ratings = array("i"), array("q"), array("i"), array("f")
    empty_reviews = empty_pairs = 0
    with open(out / "raw.i32", "wb") as raw:
        for path in progress_bar(shards, unit="shard", desc="reading pairs", enabled=progress):
            buf = array("i")
            for pair in iter_pairs([path]):
                seg = [r[:max_review_tokens] for r in pair.segment if r]
                doc = [r[:max_review_tokens] for r in pair.document if r]
                empty_reviews += len(pair.segment) + len(pair.document) - len(seg) - len(doc)
                if not seg and not doc:
                    empty_pairs += 1
                    continue
                for tokens in (pair.summary, *seg, *doc):
                    buf.extend(type_id.setdefault(t, len(type_id)) for t in tokens)
                    offsets.append(offsets[-1] + len(tokens))
                pair_texts.append(len(offsets) - 1)
                n_segment.append(len(seg))
                pair_ids.append(pair.pair_id)
                entity.append(entity_id.setdefault(pair.entity_id, len(entity_id)))
                ratings.append(math.nan if pair.rating is None else pair.rating)
            buf.tofile(raw)
    renumber_by_frequency(out, type_id)
    arrays = {
        "offsets": (offsets, np.int64),
        "pair_texts": (pair_texts, np.int64),
        "n_segment": (n_segment, np.int32),
        "pair_id": (pair_ids, np.int64),
        "entity": (entity, np.int32),
        "ratings": (ratings, np.float32),
    }
    for name, (values, dtype) in arrays.items():
        np.save(out / f"{name}.npy", np.frombuffer(values, dtype=dtype))
    write_json(out / "entities.json", list(entity_id))
    return {
        "pairs": len(n_segment),
        "texts": len(offsets) - 1,
        "tokens": offsets[-1],
        "empty_reviews_dropped": empty_reviews,
        "pairs_without_reviews": empty_pairs,
    }


def topic_matrix(corpus: PairCorpus, topics_dir: str | Path) -> np.ndarray:
    """float32 [n_pairs, K]: p(z) of every pair's summary, computed once and cached."""
    from denoisesum.topics.models import fingerprint, load_topics, topic_distributions

    path = corpus.dir / f"topics-{fingerprint(topics_dir)[:16]}.npy"
    if path.is_file():
        return np.load(path)
    model = load_topics(topics_dir)
    summaries = [corpus.summary_tokens(p) for p in range(len(corpus))]
    entities = [corpus.entities[e] for e in corpus.entity]
    matrix = topic_distributions(model, summaries, entities).astype(np.float32)
    tmp = path.with_name(f".{path.name}.tmp.npy")
    np.save(tmp, matrix)
    os.replace(tmp, path)
    return matrix


# ---------------------------------------------------------------------------------------------
# splits and batches


def split_pairs(
    corpus: PairCorpus, cfg: PairDataConfig, usable: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(training pairs, held-out pairs), as sorted pair indices among the `usable` ones."""
    held = heldout_entities(corpus.entities, cfg.heldout_percent)[corpus.entity]
    train = np.flatnonzero(usable & ~held)
    if cfg.fraction < 1:
        keep = round(cfg.fraction * len(train))
        rng = np.random.default_rng([seed, 1])  # independent of the epoch orders ([seed, epoch])
        train = np.sort(train[rng.permutation(len(train))[:keep]])
    if len(train) == 0:
        raise DenoiseSumError(
            f"no training pairs: {int(usable.sum())} usable pairs, "
            f"{int((usable & held).sum())} held out, fraction {cfg.fraction}"
        )
    return train, np.flatnonzero(usable & held)


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """Positions 0..n-1 in the random order of one epoch, cut into batches (the last may be
    smaller)."""
    order = np.random.default_rng([seed, epoch]).permutation(n)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def collate(
    corpus: PairCorpus,
    table: np.ndarray,
    pairs: np.ndarray,
    cfg: PairDataConfig,
    topics: np.ndarray | None,
    segment: bool = True,
    document: bool = True,
    hide_opinion: np.ndarray | None = None,
) -> SummaryBatch:
    """Pair indices -> a SummaryBatch. The reviews of a noise kind whose branch is off are left
    out here (the model would drop them anyway). The batch's ratings are the summaries' opinion
    classes (0 where a pair has no rating, and where hide_opinion [len(pairs)] bool is True)."""
    seg_lists, doc_lists, summaries = [], [], []
    limit = cfg.max_reviews or None
    for p in pairs.tolist():
        first, n_seg = int(corpus.pair_texts[p]), int(corpus.n_segment[p])
        kinds = (
            range(first + 1, first + 1 + n_seg),
            range(first + 1 + n_seg, int(corpus.pair_texts[p + 1])),
        )
        # reviews were cut to max_review_tokens when cached (PairCorpus.build)
        reviews = [
            [table[corpus.text(t)].tolist() for t in texts[:limit]] if on else []
            for texts, on in zip(kinds, (segment, document), strict=True)
        ]
        seg_lists.append(reviews[0])
        doc_lists.append(reviews[1])
        summaries.append(table[corpus.text(first)].tolist())
    rows = None if topics is None else torch.from_numpy(np.asarray(topics[pairs], np.float32))
    ratings = [None if math.isnan(r) else r for r in corpus.ratings[pairs].tolist()]
    if hide_opinion is not None:
        ratings = [None if hide else r for r, hide in zip(ratings, hide_opinion, strict=True)]
    return make_batch(seg_lists, doc_lists, summaries, rows, ratings)
