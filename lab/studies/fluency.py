"""Does the noising LM's SLOR say how well a summary reads? Calibrated on blind-judged summaries.

    python -m lab.studies.fluency docs/results/judged/opinions/*/judged.jsonl \
        lab/results/opinions-rounds/*/judged.jsonl

For every judged summary with a readability score (VERIDICALITY.md, 1-5): the lowest and the
mean sentence log-probability and SLOR of its sentences (opinions/fluency.py), and their
Spearman correlation with readability, over all systems and within each; then the opinions
method's sentences with the lowest SLOR. Within one system, a sentence's fluency is what
separates summaries; across systems it is not (the DenoiseSum model writes likely words that
make little sense: high fluency, low readability).
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch
from scipy.stats import spearmanr

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.models.store import DEFAULT_MODEL_DIR
from denoisesum.opinions.fluency import Fluency

FEATURES = ("min log-p", "mean log-p", "min SLOR", "mean SLOR")


@torch.no_grad()
def log_p(fluency: Fluency, sentences: list[list[str]]) -> list[float]:
    """Mean word log-probability (SLOR without the unigram term)."""
    unigram = fluency.unigram
    fluency.unigram = torch.zeros_like(unigram)
    try:
        return fluency.slor(sentences)
    finally:
        fluency.unigram = unigram


def features(fluency: Fluency, sentences: list[str]) -> tuple[float, ...]:
    tokens = [Tokenizer()(s) for s in sentences]
    lp, slor = log_p(fluency, tokens), fluency.slor(tokens)
    return min(lp), statistics.mean(lp), min(slor), statistics.mean(slor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("judged", nargs="+")
    parser.add_argument("--lowest", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    fluency = Fluency.load(DEFAULT_MODEL_DIR)
    rows = []
    for path in args.judged:
        with open(path, encoding="utf-8") as f:
            judged = [json.loads(line) for line in f]
        for r in judged:
            if r.get("readability") is not None and r["sentences"]:
                rows.append((r["system"], r["readability"], features(fluency, r["sentences"]), r))
    print(f"{len(rows)} judged summaries")
    for system in [None, *sorted({r[0] for r in rows})]:
        chosen = [r for r in rows if system is None or r[0] == system]
        marks = [r[1] for r in chosen]
        cells = [
            f"{name} {spearmanr(marks, [r[2][k] for r in chosen])[0]:+.3f}"
            for k, name in enumerate(FEATURES)
        ]
        print(f"{system or 'all'} ({len(chosen)}, readability {statistics.mean(marks):.2f}):")
        print("  Spearman with readability: " + ", ".join(cells))
    quoted = [
        (score, text, r["readability"])
        for system, _, _, r in rows
        if system == "opinions"
        for text, score in zip(
            r["sentences"], fluency.slor([Tokenizer()(s) for s in r["sentences"]]), strict=True
        )
    ]
    print("opinions sentences, lowest SLOR first (SLOR, the summary's readability, sentence):")
    for score, text, mark in sorted(set(quoted))[: args.lowest]:
        print(f"  {score:5.2f}  {mark}  {text}")


if __name__ == "__main__":
    main()
