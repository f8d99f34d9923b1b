"""The adapted model against the one it started from (--from), on the businesses held out of
training: what the evaluate stage adds to its scores.

A small domain corpus has no reference summaries, so nothing here is ROUGE. Two measures:

    held-out review loss   each held-out review in turn is the target and up to `read` other
                           reviews of its business the input: the summarizer's teacher-forced
                           loss (nats per word, the words and </s>, the first `words` words of
                           the target) of that review. The lower, the better the model predicts
                           what this domain's customers write about a business from what the
                           others wrote. Both models read the same inputs for the same targets
                           (drawn with the evaluate seed), in the same vocabulary (--from keeps
                           it), so the difference is paired: by business, with a bootstrap
                           interval over the businesses.
    summary measures       evaluation/heldout.py's scores of both models' summaries of the same
                           review sets (opinion agreement, supported sentences, words no review
                           says, domain terms covered).

With few held-out businesses the summary measures move by a whole business at a time (one of 5
is 20% of an agreement share); the review loss averages over every held-out review, so it is the
firmer of the two, and `few_text` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

TARGETS = 20  # held-out reviews scored per business (drawn), each as the target once
WORDS = 100  # of each target, its first words are scored
READ = 8  # other reviews of its business given as the input
BATCH = 8  # targets per forward pass
FEW = 10  # fewer held-out businesses than this: the report says what that means
INTERVAL_DRAWS = 2000  # bootstrap resamples of the businesses


def review_targets(
    corpus, entity_ids: Sequence[str], seed: int, targets: int = TARGETS, read: int = READ
) -> list[dict[str, Any]]:
    """For each held-out business, up to `targets` of its reviews, each with up to `read` of the
    business's other reviews: [{"entity_id", "target": tokens, "inputs": [tokens, ...],
    "rating": stars or None}], drawn with `seed` (the same for every model scored)."""
    from denoisesum.noising.shard import review_ids

    index = {entity: i for i, entity in enumerate(corpus.entities)}
    lengths = corpus.lengths()
    rng = np.random.default_rng([seed, 7])
    out = []
    for entity in entity_ids:
        reviews = np.flatnonzero((corpus.entity == index[entity]) & (lengths > 0))
        if len(reviews) < 2:
            continue
        chosen = rng.permutation(reviews)[:targets]
        for target in chosen:
            others = reviews[reviews != target]
            inputs = np.sort(rng.choice(others, size=min(read, len(others)), replace=False))
            stars = float(corpus.ratings[target])
            out.append(
                {
                    "entity_id": entity,
                    "target": [corpus.types[t] for t in review_ids(corpus, int(target))],
                    "inputs": [
                        [corpus.types[t] for t in review_ids(corpus, int(r))] for r in inputs
                    ],
                    "rating": None if np.isnan(stars) else stars,
                }
            )
    return out


def review_loss(model_dir: Path, targets: list[dict[str, Any]], words: int = WORDS) -> np.ndarray:
    """float64 [len(targets), 2]: each target's summed loss (nats) and its scored tokens, under
    the summarizer in `model_dir` (inputs cut to its summarize.max_review_tokens)."""
    import torch

    from denoisesum.data.batch import inference_batch, pad_ids
    from denoisesum.models.store import load_denoisesum

    model, vocab, config = load_denoisesum(model_dir)
    model.eval()
    cut = int((config.get("summarize") or {}).get("max_review_tokens") or 150)
    out = np.zeros((len(targets), 2), dtype=np.float64)
    with torch.no_grad():
        for start in range(0, len(targets), BATCH):
            chunk = targets[start : start + BATCH]
            batch = inference_batch(
                [[vocab.encode(r[:cut]) for r in t["inputs"]] for t in chunk],
                ratings=[t["rating"] for t in chunk],
            )
            batch.summary, batch.summary_lengths = pad_ids(
                [vocab.encode(t["target"][:words]) for t in chunk]
            )
            if model.discriminator is not None:  # its KL is not scored: any topics will do
                k = model.config.n_topics
                batch.topics = torch.full((len(chunk), k), 1.0 / k)
            result = model(batch)
            token_nll = result["token_nll"].double()
            lengths = batch.summary_lengths + 1  # the words and </s>
            out[start : start + len(chunk), 0] = token_nll.sum(1).numpy()
            out[start : start + len(chunk), 1] = lengths.double().numpy()
    return out


def by_business(targets: list[dict[str, Any]], losses: np.ndarray) -> dict[str, float]:
    """Nats per word of each business's targets (their losses summed over their tokens)."""
    sums: dict[str, list[float]] = {}
    for target, (loss, tokens) in zip(targets, losses, strict=True):
        entry = sums.setdefault(target["entity_id"], [0.0, 0.0])
        entry[0] += loss
        entry[1] += tokens
    return {entity: loss / tokens for entity, (loss, tokens) in sums.items()}


def paired(model: dict[str, float], base: dict[str, float], seed: int = 0) -> dict[str, Any]:
    """The model's and the base's per-word loss over the same businesses (means of the
    businesses' own), their difference and its 95% bootstrap interval over the businesses."""
    entities = sorted(model)
    diff = np.array([model[e] - base[e] for e in entities])
    rng = np.random.default_rng(seed)
    if len(diff) > 1:
        draws = rng.choice(diff, size=(INTERVAL_DRAWS, len(diff))).mean(axis=1)
        low, high = (float(x) for x in np.percentile(draws, [2.5, 97.5]))
    else:
        low = high = float(diff.mean()) if len(diff) else 0.0
    return {
        "model": float(np.mean([model[e] for e in entities])),
        "base": float(np.mean([base[e] for e in entities])),
        "difference": float(diff.mean()) if len(diff) else 0.0,
        "interval": [low, high],
        "better_businesses": int((diff < 0).sum()),
        "businesses": len(entities),
    }


def loss_line(loss: dict[str, Any], base_name: str) -> str:
    low, high = loss["interval"]
    verdict = (
        "lower: the adapted model predicts this domain's reviews better"
        if high < 0
        else "higher: the adapted model predicts this domain's reviews worse"
        if low > 0
        else "no clear difference"
    )
    return (
        f"held-out review loss (nats per word of a held-out review given {READ} other reviews "
        f"of its business, {loss['reviews']} reviews): {loss['model']:.3f} adapted, "
        f"{loss['base']:.3f} {base_name}, difference {loss['difference']:+.3f} (95% interval "
        f"{low:+.3f} to {high:+.3f} over the businesses; lower in "
        f"{loss['better_businesses']} of {loss['businesses']}): {verdict}"
    )


def few_text(businesses: int) -> str | None:
    """What a held-out evaluation on few businesses can say (None when there are enough)."""
    if businesses >= FEW:
        return None
    if businesses == 0:
        return "no business was held out: nothing says how the model does on unseen ones"
    return (
        f"only {businesses} businesses held out (evaluate.share of a small corpus): each is "
        f"{1 / businesses:.0%} of an agreement or support share, so the summary measures show "
        "only large differences; the review loss, over every held-out review, is the firmer"
        " measure (more held out: --set evaluate.share=0.2, at the cost of training reviews)"
    )
