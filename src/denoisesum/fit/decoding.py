"""What the decode and evaluate stages of `denoisesum fit` decode with a trained summarizer: the
dev search over min_length and the decoding levers (scored by ROUGE), and the review sets of the
businesses held out of training with their stars. Module-level functions over a model directory,
apart from the stages so that tests and studies call them without a Recipe."""

from __future__ import annotations

import dataclasses
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.synthetic import find_shards, iter_pairs
from denoisesum.fit.request import Log


def held_out_sets(corpus: EncodedCorpus, ids: list[str], cfg) -> list[dict]:
    """A review set per held-out business: up to cfg.reviews of its reviews (drawn with
    cfg.seed), as text (tokens joined by spaces) with their stars (None where unknown)."""
    from denoisesum.noising.shard import review_ids

    index = {entity: i for i, entity in enumerate(corpus.entities)}
    rng = np.random.default_rng([cfg.seed, 1])
    sets = []
    for entity in ids:
        reviews = np.flatnonzero(corpus.entity == index[entity])
        if len(reviews) > cfg.reviews:
            reviews = np.sort(rng.choice(reviews, size=cfg.reviews, replace=False))
        stars = [float(corpus.ratings[r]) for r in reviews]
        sets.append(
            {
                "entity_id": entity,
                "reviews": [
                    " ".join(corpus.types[t] for t in review_ids(corpus, int(r))) for r in reviews
                ],
                "ratings": [None if np.isnan(x) else x for x in stars],
            }
        )
    return sets


def best_band(rows: list[dict[str, Any]], own: float) -> dict[str, Any]:
    """The row of the band whose summaries agree most often with their reviews' opinion; on a
    tie the decoding's `own` band, then the narrower (the fewer two-sided summaries)."""
    return max(rows, key=lambda r: (r["opinion_agrees"], r["mixed_band"] == own, -r["mixed_band"]))


def given_stars_summaries(summarizer, sets: list[dict], **options: Any) -> list[str]:
    """The summaries of held_out_sets' `sets`, each review's stars given where the corpus has
    them, as a user with a rated corpus would; options: per-call (Summarizer.summarize's)."""
    ratings = [s["ratings"] if any(r is not None for r in s["ratings"]) else None for s in sets]
    results = summarizer.summarize_results([s["reviews"] for s in sets], ratings, **options)
    return [r.summary for r in results]


def candidate_lengths(pairs_dir: Path, limit: int) -> np.ndarray:
    """Lengths (tokens) of the first `limit` candidate summaries of the pairs: a uniform sample,
    since the synthesis plan draws candidates at random."""
    pairs = islice(iter_pairs(find_shards(pairs_dir)), limit or None)
    return np.array([len(pair.summary) for pair in pairs], dtype=np.int64)


def dev_summarizer(model_dir: Path, shortlist: int | None, device: str = "cpu"):
    """The model with its own settings, but `shortlist` when not None, on `device` (fit's
    train.train.device: auto, cpu or cuda)."""
    from denoisesum.summarizer import Summarizer, load_model

    model, vocab, config = load_model(model_dir)
    if shortlist is not None:
        config = dataclasses.replace(config, shortlist=shortlist)
    return Summarizer(model, vocab, config, device)


def search_min_length(
    model_dir: Path,
    sets: list,
    grid: list[int],
    log: Log,
    shortlist: int | None = None,
    device: str = "cpu",
) -> list[dict]:
    """Decode the review sets with each min_length of `grid` (the model's other settings) and
    score the summaries against the references (rouge-score F1): a row per value."""
    from denoisesum.evaluation.decoded import decode_and_score
    from denoisesum.evaluation.rouge import ROUGE_TYPES

    summarizer = dev_summarizer(model_dir, shortlist, device)
    cap = summarizer.config.search.max_words
    rows = []
    for value in grid:
        run = decode_and_score(summarizer, sets, "rouge", min_words=min(value, cap))
        rows.append(
            {
                "min_length": value,
                **{t: run.means[t] for t in ROUGE_TYPES},
                "mean": run.rouge_mean,
                "words": run.words,
            }
        )
        log(
            f"  min_length {value}: dev ROUGE mean {rows[-1]['mean']:.2f}, "
            f"{rows[-1]['words']:.1f} words"
        )
    return rows


def compare_levers(
    model_dir: Path,
    sets: list,
    min_length: int,
    levers: dict[str, dict],
    log: Log,
    shortlist: int | None = None,
    device: str = "cpu",
) -> dict[str, dict]:
    """Decode the review sets with the model's decoding at `min_length` ("base") and with each
    lever's changes on top; rouge-score means and, for the levers, paired tests against base."""
    from denoisesum.evaluation.decoded import decode_and_score
    from denoisesum.evaluation.report import compare

    summarizer = dev_summarizer(model_dir, shortlist, device)
    base = {"min_words": min(min_length, summarizer.config.search.max_words)}
    out, base_report = {}, None
    for name, changes in {"base": {}, **levers}.items():
        run = decode_and_score(summarizer, sets, "rouge", **{**base, **changes})
        out[name] = {"changes": changes, **run.means, "mean": run.rouge_mean, "words": run.words}
        if base_report is None:
            base_report = run.report
        else:
            out[name]["vs_base"] = {
                m: t.to_dict() for m, t in compare(run.report, base_report).items()
            }
        log(f"  {name}: dev ROUGE mean {out[name]['mean']:.2f}, {out[name]['words']:.1f} words")
    return out
