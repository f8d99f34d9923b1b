"""Baseline summarizers behind one interface (`Summarizer.summarize(reviews) -> str`).

    first      the entity's first review
    random     a seeded random review (the same for an entity whatever else is summarized)
    clustroid  the review with the highest mean ROUGE-1 F1 against the entity's other reviews
    oracle     the review with the best ROUGE against the gold summary (needs references)
    lexrank    LexRank (Erkan & Radev 2004): central sentences up to a word budget
    word2vec   the review nearest the IDF-weighted word2vec centroid (needs fitting on a corpus)
    opinosis   Opinosis (Ganesan et al. 2010): fused redundant word-graph paths, abstractive

`create(name, words=..., seed=...)` builds one by name; `prepare` fits it on a corpus sample or
loads it; `summarize_sets` runs one over review sets, `summarize_file` does all three for the
`baseline` command. The options and their defaults are in `denoisesum.baselines.options`.
"""

from __future__ import annotations

from typing import Any

from denoisesum.baselines.options import DEFAULT_WORDS

__all__ = [
    "BASELINES",
    "DEFAULT_WORDS",
    "Clustroid",
    "FirstReview",
    "LexRank",
    "Opinosis",
    "Oracle",
    "RandomReview",
    "Summarizer",
    "Word2VecCentroid",
    "create",
    "prepare",
    "sample_texts",
    "summarize_file",
    "summarize_sets",
]


def __getattr__(name: str) -> Any:
    # The baselines load numpy and the ROUGE scorers: load them on first use, so that the CLI
    # can read its defaults from `options` at start-up without paying for them.
    if name in __all__:
        from denoisesum.baselines import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
