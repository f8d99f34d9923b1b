"""`denoisesum topics`: a topic model from a review corpus or from synthetic pairs.

From a corpus, LDA trains on a uniform sample of the reviews (reservoir sampling, so the corpus is
streamed once). From a pairs directory, it trains on the pairs' texts that are real reviews: the
summaries and the document-noise reviews (each distinct review once); segment noise is
ungrammatical and is left out.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from denoisesum.data.synthetic import find_shards, iter_pairs
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import DenoiseSumError
from denoisesum.topics.models import (
    CategoryTopics,
    LDAConfig,
    LDATopics,
    category_topics,
    train_lda,
)

T = TypeVar("T")


def is_pairs_dir(sources: list[str]) -> bool:
    return len(sources) == 1 and Path(sources[0]).is_dir()


def reservoir(items: Iterable[T], size: int, seed: int) -> list[T]:
    """A uniform sample of `size` items of a stream, in stream order (all when fewer)."""
    rng = random.Random(seed)
    kept: list[tuple[int, T]] = []
    for i, item in enumerate(items):
        if i < size:
            kept.append((i, item))
        else:
            slot = rng.randrange(i + 1)
            if slot < size:
                kept[slot] = (i, item)
    return [item for _, item in sorted(kept, key=lambda pair: pair[0])]


def pair_documents(pairs_dir: str | Path) -> Iterator[str]:
    """Summaries and distinct document-noise reviews of the pairs (space-separated tokens)."""
    seen: set[int] = set()
    for pair in iter_pairs(find_shards(pairs_dir)):
        for tokens in (pair.summary, *pair.document):
            key = hash(tuple(tokens))
            if key not in seen:
                seen.add(key)
                yield " ".join(tokens)


def build_topics(
    sources: list[str],
    reader_factory,
    kind: str = "lda",
    cfg: LDAConfig | None = None,
    log=lambda message: None,
) -> LDATopics | CategoryTopics:
    """kind 'lda' or 'human'. `reader_factory()` returns a CorpusReader over `sources`."""
    cfg = cfg or LDAConfig()
    pairs = is_pairs_dir(sources)
    if kind == "human":
        if pairs:
            raise DenoiseSumError(
                "--categories human needs a category field, which synthetic "
                "pairs do not have: pass the review corpus instead"
            )
        reader = reader_factory()
        return category_topics(reader, reader.fields.category)
    if kind != "lda":
        raise DenoiseSumError(f"--categories must be 'lda' or 'human', got {kind!r}")
    if pairs:
        documents: list = reservoir(pair_documents(sources[0]), cfg.sample, cfg.seed)
    else:
        texts = reservoir((r.text for r in reader_factory()), cfg.sample, cfg.seed)
        tokenizer = Tokenizer()
        documents = [tokenizer.tokenize(t) for t in texts]
    log(f"training LDA with {cfg.n_topics} topics on {len(documents):,} documents")
    return train_lda(documents, cfg)
