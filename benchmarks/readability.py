"""How much of a review set the model can read: the share of its words (tokens with a letter or
digit) in the model's vocabulary, for real English review sets and for other languages, which
sets the threshold `denoisesum.summarizer.MIN_KNOWN_SHARE` below which a summary is flagged.

    python -m benchmarks.readability --model denoisesum-yelp \
        --review-sets ../shared/data/yelp/meansum_dev.jsonl [--markdown docs/results/readability.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.common import emit, percentile
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.summarizer import MIN_KNOWN_SHARE, Summarizer

# two reviews per language, written for this check (restaurant reviews, as Yelp's)
OTHER_LANGUAGES = {
    "French": [
        "Le restaurant était excellent, le service rapide et les plats délicieux.",
        "Très bon rapport qualité-prix, je recommande vivement ce petit bistrot.",
    ],
    "German": [
        "Das Essen war sehr lecker und die Bedienung freundlich.",
        "Wir kommen gerne wieder, die Preise sind fair.",
    ],
    "Spanish": [
        "La comida estaba deliciosa y el servicio fue excelente.",
        "Muy buen ambiente, volveremos pronto.",
    ],
    "Chinese": ["这家餐厅的拉面非常好吃，服务也很周到。", "价格合理，环境干净，推荐！"],
    "emoji only": ["😀😀🍜🍜👍", "🔥🔥🔥 😋"],
    "punctuation only": ["!!! ??? ...", "--- ;;; ,,,"],
    "zero-width only": ["\u200b\u200b\u200b", "\u200c\u200d\ufeff"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--review-sets", type=Path, required=True)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    summarizer = Summarizer.from_pretrained(args.model)
    sets = list(read_review_sets(args.review_sets))
    shares = [summarizer.known_share(s.reviews) or 0.0 for s in sets]
    flagged = sum(bool(summarizer.input_warnings(s.reviews)) for s in sets)
    lines = [
        f"Known-word share of review sets for `{args.model or 'the default model'}` "
        f"(threshold MIN_KNOWN_SHARE = {MIN_KNOWN_SHARE:.0%}; below it, or with no word "
        "at all, a summary is flagged).",
        "",
        f"`python -m benchmarks.readability --model {args.model} --review-sets {args.review_sets}`",
        "",
        "| input | known share | flagged |",
        "|---|--:|--:|",
        f"| {args.review_sets.name}: {len(sets)} English review sets, min / 1st pct / "
        f"median | {min(shares):.1%} / {percentile(shares, 0.01):.1%} / "
        f"{percentile(shares, 0.5):.1%} | {flagged} of {len(sets)} |",
    ]
    for name, reviews in OTHER_LANGUAGES.items():
        share = summarizer.known_share(reviews)
        shown = "no words" if share is None else f"{share:.1%}"
        flag = "yes" if summarizer.input_warnings(reviews) else "no"
        lines.append(f"| {name} | {shown} | {flag} |")
    text = "\n".join(lines) + "\n"
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
