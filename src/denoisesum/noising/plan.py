"""The synthesis plan: which reviews become candidate summaries, and N for each pair.

Everything here is vectorised over the tokenized corpus (one pass over ~100M ids takes seconds)
and depends only on the corpus, the settings and the seed, never on how many workers run later.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from denoisesum.data.encoded import EncodedCorpus
from denoisesum.noising.candidates import (
    FIRST_PERSON_SINGULAR,
    SENTENCE_END,
    CandidateConfig,
    is_symbol,
)
from denoisesum.noising.document_noise import support
from denoisesum.progress import progress_bar


def _per_review_counts(
    corpus: EncodedCorpus, flags: np.ndarray, reviews: np.ndarray, block: int = 20_000_000
) -> np.ndarray:
    """How many tokens of each of `reviews` have flags[type] set (in blocks: bounded memory)."""
    counts = np.zeros(len(reviews), dtype=np.int64)
    starts, ends = corpus.offsets[reviews], corpus.offsets[reviews + 1]
    for begin in range(0, corpus.n_tokens, block):
        end = min(begin + block, corpus.n_tokens)
        hits = np.concatenate([[0], np.cumsum(flags[corpus.ids[begin:end]], dtype=np.int64)])
        lo = np.clip(starts, begin, end) - begin  # each review's part inside this block
        hi = np.clip(ends, begin, end) - begin
        counts += hits[hi] - hits[lo]
    return counts


def eligible_candidates(
    corpus: EncodedCorpus, cfg: CandidateConfig, allowed: np.ndarray
) -> tuple[np.ndarray, dict[str, int]]:
    """Indices of reviews that satisfy `cfg` among `allowed` ones; and why the others failed."""
    reviews = np.flatnonzero(allowed)
    lengths = corpus.lengths()[reviews]
    ok = (lengths >= cfg.min_tokens) & (lengths <= cfg.max_tokens)
    report = {"reviews": len(reviews), "rejected_length": int((~ok).sum())}
    symbols = np.array([is_symbol(t) for t in corpus.types])
    bad = _per_review_counts(corpus, symbols, reviews) > cfg.max_symbols
    report["rejected_symbols"] = int((ok & bad).sum())
    ok &= ~bad
    if not cfg.allow_first_person:
        first = np.array([t in FIRST_PERSON_SINGULAR for t in corpus.types])
        bad = _per_review_counts(corpus, first, reviews) > 0
        report["rejected_first_person"] = int((ok & bad).sum())
        ok &= ~bad
    if cfg.one_sentence:
        ends = np.array([t in SENTENCE_END for t in corpus.types])
        last_is_end = ends[corpus.ids[np.maximum(corpus.offsets[reviews + 1] - 1, 0)]]
        bad = _per_review_counts(corpus, ends, reviews) - last_is_end > 0
        report["rejected_several_sentences"] = int((ok & bad).sum())
        ok &= ~bad
    report["eligible"] = int(ok.sum())
    return reviews[ok], report


# SynthesisConfig.fit_lengths: the corpus's review lengths (percentiles) the widened bounds reach
FIT_LOW, FIT_HIGH = 10, 75
FIT_MAX_GROWTH = 2  # the widened max_tokens is at most this many times the given one


def fitted_lengths(lengths: np.ndarray, cfg: CandidateConfig) -> CandidateConfig:
    """`cfg` with its length bounds widened to the corpus's own review `lengths` (tokens): from
    their FIT_LOW-th to their FIT_HIGH-th percentile (the longest quarter stays out: a summary
    is not the longest review), never narrower than cfg's bounds and never longer than
    FIT_MAX_GROWTH times its max_tokens (the summaries the model learns to write)."""
    if len(lengths) == 0:
        return cfg
    low, high = np.percentile(lengths, [FIT_LOW, FIT_HIGH])
    return dataclasses.replace(
        cfg,
        min_tokens=max(1, min(cfg.min_tokens, int(low))),
        max_tokens=max(cfg.max_tokens, min(int(high), FIT_MAX_GROWTH * cfg.max_tokens)),
    )


@dataclass
class Plan:
    candidates: np.ndarray  # int64 [pairs] review index of each pair's candidate summary
    n: np.ndarray  # int32 [pairs] number of noisy reviews of each kind

    def save(self, path) -> None:
        with open(path, "wb") as handle:
            np.savez(handle, candidates=self.candidates, n=self.n)

    @classmethod
    def load(cls, path) -> Plan:
        data = np.load(path)
        return cls(data["candidates"], data["n"])


def entity_groups(corpus: EncodedCorpus, reviews: np.ndarray) -> list[np.ndarray]:
    """`reviews` split by entity, each group in review order."""
    order = reviews[np.argsort(corpus.entity[reviews], kind="stable")]
    return [g for g in np.split(order, np.flatnonzero(np.diff(corpus.entity[order])) + 1) if len(g)]


def best_supported(
    corpus: EncodedCorpus,
    eligible: np.ndarray,
    allowed: np.ndarray,
    idf: np.ndarray,
    n: int,
    fraction: float,
) -> tuple[np.ndarray, float]:
    """The `fraction` of `eligible` candidates best supported by their entity's other allowed
    reviews (`document_noise.support`: the mean IDF-ROUGE-1 F1 of the n most similar), in
    review order; and the lowest support kept.

    A candidate whose content many reviews share is closer to what a summary of real reviews
    says than one whose content only its author wrote (not in the paper; issue 14).
    """
    lengths = corpus.lengths()
    is_eligible = np.zeros(len(corpus), dtype=bool)
    is_eligible[eligible] = True
    scores = np.zeros(len(corpus), dtype=np.float32)
    for group in progress_bar(
        entity_groups(corpus, np.flatnonzero(allowed)), desc="support", unit="entity", mininterval=5
    ):
        rows = np.flatnonzero(is_eligible[group])
        if len(rows):
            counts = count_matrix(corpus, group)
            scores[group[rows]] = support(counts, rows, lengths[group], idf, n)
    keep = max(1, round(fraction * len(eligible)))
    ranked = eligible[np.argsort(-scores[eligible], kind="stable")][:keep]
    return np.sort(ranked), float(scores[ranked[-1]])


def count_matrix(corpus: EncodedCorpus, reviews: np.ndarray) -> sparse.csr_matrix:
    """[len(reviews), n_types] word counts."""
    ids = [corpus.ids[corpus.offsets[r] : corpus.offsets[r + 1]] for r in reviews]
    rows = np.repeat(np.arange(len(reviews)), [len(x) for x in ids])
    cols = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    matrix = sparse.csr_matrix(
        (np.ones(len(rows), dtype=np.float32), (rows, cols)),
        shape=(len(reviews), len(corpus.types)),
    )
    matrix.sum_duplicates()
    return matrix


def star_classes(ratings: np.ndarray) -> np.ndarray:
    """float [n] ratings -> int64 [n] opinion classes: 0 for no rating (NaN), else the rating
    clamped to 1..5 and rounded half up (3.5 -> 4; np.rint would round it to even)."""
    ratings = np.asarray(ratings, dtype=np.float64)
    rated = ~np.isnan(ratings)
    classes = np.zeros(len(ratings), dtype=np.int64)
    classes[rated] = np.floor(np.clip(ratings[rated], 1, 5) + 0.5)
    return classes


def rating_balance_weights(ratings: np.ndarray) -> np.ndarray:
    """float64 [n] sampling weights of reviews with these ratings (NaN: none): inversely
    proportional to the frequency of their star class among them, so each class is drawn about
    equally often (Yelp's candidates are mostly 4-5 stars: a summarizer trained on them learns
    to praise). Unrated reviews get the mean weight of the rated ones; all 1 when none is rated.
    """
    classes = star_classes(ratings)
    rated = classes > 0
    weights = np.ones(len(classes), dtype=np.float64)
    if not rated.any():
        return weights
    frequency = np.bincount(classes[rated], minlength=6)  # [6], index 0 unused
    weights[rated] = 1.0 / frequency[classes[rated]]
    weights[~rated] = weights[rated].mean()
    return weights


def make_plan(
    eligible: np.ndarray,
    pairs: int,
    n_mean: float,
    n_std: float,
    seed: int,
    weights: np.ndarray | None = None,
    uses: int = 1,
) -> Plan:
    """Sample `pairs` distinct candidates (fewer if fewer are eligible) and N ~ Normal, N >= 1.

    weights: float [len(eligible)], positive: draw candidates with these relative weights
    (without replacement); None: uniformly, exactly as before weights existed.
    uses: when fewer candidates are eligible than `pairs`, each may make up to this many pairs
    (each pair has its own noise: its random streams are its pair id's): the plan then goes
    through all of them, in a new random order, once per round, and the last round takes a
    sample of them, drawn as above; 1: one pair each."""
    rng = np.random.default_rng([seed, 0])

    def draw(size: int) -> np.ndarray:
        if weights is None:
            return rng.choice(eligible, size=size, replace=False)
        # Efraimidis-Spirakis: the `size` largest keys log(u) / w are a weighted sample without
        # replacement, in O(n log n) (Generator.choice with p and replace=False is far slower)
        keys = np.log(rng.random(len(eligible))) / np.asarray(weights, dtype=np.float64)
        return eligible[np.argsort(-keys, kind="stable")[:size]]

    size = min(pairs, len(eligible) * max(1, uses))
    rounds = []
    while size > 0:
        rounds.append(draw(min(size, len(eligible))))
        size -= len(rounds[-1])
    chosen = np.concatenate(rounds) if rounds else np.zeros(0, dtype=np.int64)
    n = np.maximum(1, np.rint(rng.normal(n_mean, n_std, size=len(chosen)))).astype(np.int32)
    return Plan(chosen.astype(np.int64), n)


def document_frequency(corpus: EncodedCorpus, allowed: np.ndarray) -> np.ndarray:
    """int64 [n_types]: in how many allowed reviews each type occurs."""
    df = np.zeros(len(corpus.types), dtype=np.int64)
    for review in np.flatnonzero(allowed):
        df[np.unique(corpus.ids[corpus.offsets[review] : corpus.offsets[review + 1]])] += 1
    return df


def review_set_sizes(path) -> tuple[float, float]:
    """Mean and standard deviation of the number of reviews per entity in a review-set file."""
    from denoisesum.data.reviewsets import read_review_sets
    from denoisesum.errors import InputError

    sizes = np.array([len(s.reviews) for s in read_review_sets(path)], dtype=float)
    if len(sizes) == 0:
        raise InputError("no review sets in the file", path=path)
    return float(sizes.mean()), float(sizes.std())


def read_entity_list(path) -> list[str]:
    """One entity id per line; blank lines and '#' comments ignored."""
    from denoisesum.io import decode_line, iter_lines

    ids = []
    for line_no, raw in iter_lines(path):
        text = decode_line(raw, path, line_no).split("#", 1)[0].strip()
        if text:
            ids.append(text)
    return ids
