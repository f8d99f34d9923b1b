"""Which unsupervised choice among candidate summaries works best, on the DEV set.

    python -m lab.studies.rerank_study denoisesum-yelp ../shared/data/yelp/meansum_dev.jsonl \
        --subsets 3 [--candidates runs/levers/candidates.json] [--markdown FILE]

Decodes every dev entity once from all its reviews and once from each of `--subsets` review
subsets (inference/rerank.py), keeps every finished hypothesis (best first per decode), then
scores several choosers, each using only the input reviews (and the model's own ranking):

- model: the full set's best hypothesis (what decoding returns without rerank);
- overlap-1 / overlap-2: mean ROUGE-1 (-1..2) F1 against each review (`DecodeConfig.rerank`);
- pooled-1: ROUGE-1 F1 against all reviews as one text;
- full-only overlap-2: the same, among the full set's hypotheses only (beam n-best);
- consensus-1 / consensus-2 (and full-only consensus-2): minimum Bayes risk, the candidate with
  the highest mean ROUGE-1 (-1..2) F1 against the other candidates (what most of them say);
and, as the ceiling of any chooser, oracle: the candidate with the best ROUGE-1 against the
reference (uses the reference: not a system). Candidates are cached in `--candidates`, so
choosers can be compared without decoding again. Dev only: this picks a setting.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np
from denoisesum.inference.rerank import OverlapScorer, review_subsets

from benchmarks.common import emit
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.evaluation.rouge import rouge_f1_per_entity
from denoisesum.evaluation.stats import paired_test
from denoisesum.io import write_json
from denoisesum.summarizer import Summarizer


def decode_candidates(summarizer: Summarizer, sets: list, subsets: int) -> list[list[dict]]:
    """Per entity: every hypothesis, with the decode it came from (0: all reviews) and its rank."""
    encoded = [summarizer.encode_reviews(s.reviews) for s in sets]
    sources, owner, origin = [], [], []
    for e, reviews in enumerate(encoded):
        for j, keep in enumerate(
            [list(range(len(reviews))), *review_subsets(len(reviews), subsets)]
        ):
            sources.append([reviews[i] for i in keep])
            owner.append(e)
            origin.append(j)
    out: list[list[dict]] = [[] for _ in sets]
    for e, j, hyps in zip(owner, origin, summarizer._search(sources, 8), strict=True):
        out[e].extend({"ids": h, "decode": j, "rank": r} for r, h in enumerate(hyps))
    return out


def pooled_r1(candidate: list[int], reviews: list[list[int]], ignore: set[int]) -> float:
    cand = Counter(i for i in candidate if i not in ignore)
    pool = Counter(i for r in reviews for i in r if i not in ignore)
    hit = sum((cand & pool).values())
    return 0.0 if not hit else 2 * hit / (sum(cand.values()) + sum(pool.values()))


def choosers(summarizer: Summarizer) -> dict:
    ignore = summarizer._word_classes()[2]

    def overlap(n: int, full_only: bool = False):
        def pick(cands: list[dict], reviews: list[list[int]]) -> int:
            scorer = OverlapScorer(reviews, ignore, n)
            pool = [i for i, c in enumerate(cands) if c["decode"] == 0 or not full_only]
            return max(pool, key=lambda i: (scorer.score(cands[i]["ids"]), -i))

        return pick

    def consensus(n: int, full_only: bool = False):
        """Minimum Bayes risk: the candidate closest to the other candidates."""

        def pick(cands: list[dict], reviews: list[list[int]]) -> int:
            pool = [i for i, c in enumerate(cands) if c["decode"] == 0 or not full_only]

            def agreement(i: int) -> float:
                others = [cands[j]["ids"] for j in pool if j != i]
                return OverlapScorer(others, ignore, n).score(cands[i]["ids"]) if others else 0.0

            return max(pool, key=lambda i: (agreement(i), -i))

        return pick

    return {
        "model": lambda cands, reviews: 0,
        "overlap-1": overlap(1),
        "overlap-2": overlap(2),
        "full-only overlap-2": overlap(2, True),
        "consensus-1": consensus(1),
        "consensus-2": consensus(2),
        "full-only consensus-2": consensus(2, True),
        "pooled-1": lambda cands, reviews: max(
            range(len(cands)), key=lambda i: (pooled_r1(cands[i]["ids"], reviews, ignore), -i)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("dev", type=Path)
    parser.add_argument("--subsets", type=int, default=3)
    parser.add_argument("--candidates", type=Path, default=Path("runs/levers/candidates.json"))
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    sets = list(read_review_sets(args.dev))
    summarizer = Summarizer.from_pretrained(args.model)
    if args.candidates.exists():
        candidates = json.loads(args.candidates.read_text())
    else:
        candidates = decode_candidates(summarizer, sets, args.subsets)
        args.candidates.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.candidates, candidates)
    encoded = [summarizer.encode_reviews(s.reviews) for s in sets]
    refs = [s.summaries for s in sets]
    texts = [[" ".join(summarizer.vocab.decode(c["ids"])) for c in cands] for cands in candidates]
    results = {}
    for name, pick in choosers(summarizer).items():
        chosen = [t[pick(c, r)] for c, r, t in zip(candidates, encoded, texts, strict=True)]
        results[name] = rouge_f1_per_entity(chosen, refs)
    best = [
        max(rouge_f1_per_entity(t, [r] * len(t))["rouge1"])
        for t, r in zip(texts, refs, strict=True)
    ]
    command = (
        f"python -m lab.studies.rerank_study {args.model} {args.dev} --subsets {args.subsets} "
        f"--candidates {args.candidates}"
    )
    lines = [
        "# Choosing among candidate summaries (dev set)",
        "",
        f"```bash\n{command}\n```",
        "",
        f"Choosing among {np.mean([len(c) for c in candidates]):.1f} candidates per dev "
        f"entity (beam hypotheses of the full review set and of {args.subsets} subsets), "
        f"model `{args.model}`, rouge-score F1; ΔR1 and p against `model`.",
        "",
        "| chooser | R1 | R2 | RL | ΔR1 | p |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name, scores in results.items():
        test = paired_test(scores["rouge1"], results["model"]["rouge1"])
        lines.append(
            f"| {name} | {np.mean(scores['rouge1']):.2f} | "
            f"{np.mean(scores['rouge2']):.2f} | {np.mean(scores['rougeL']):.2f} | "
            f"{test.difference:+.2f} | {test.p_value:.3f} |"
        )
    lines.append(f"| oracle (reference-based ceiling) | {np.mean(best):.2f} | | | | |")
    text = "\n".join(lines) + "\n"
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
