"""What the decoding shortcuts cost in quality: dev ROUGE of a trained model with and without the
vocabulary shortlist and bf16, next to full-precision decoding over the whole vocabulary.

    python -m benchmarks.decoding_quality denoisesum-yelp \
        ../shared/data/yelp/meansum_dev.jsonl --variants full,shortlist=5000,shortlist=5000+bf16 \
        [--limit 0] [--json-out runs/decoding-quality.json]

Each variant decodes the same dev review sets in batches with the model's own decoding settings
(SummarizerConfig from its config.json), and is scored with rouge-score F1 against the dev
references. The first variant is the reference: the table says how many summaries each other
variant changed (any token differs). Dev set only: this chooses a default, so never on test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from denoisesum.data.reviewsets import read_review_sets
from denoisesum.evaluation.decoded import decode_and_score
from denoisesum.summarizer import Summarizer


def apply_variant(summarizer: Summarizer, variant: str) -> None:
    """'full', 'shortlist=K', 'bf16' or a '+'-joined mix, e.g. 'shortlist=5000+bf16'."""
    summarizer.config.shortlist, summarizer.config.bf16 = 0, False
    for part in variant.split("+"):
        name, _, value = part.partition("=")
        if name == "shortlist":
            summarizer.config.shortlist = int(value)
        elif name == "bf16":
            summarizer.config.bf16 = True
        elif name != "full":
            raise SystemExit(f"unknown variant part {part!r} (full, shortlist=K, bf16)")


def run_variant(summarizer: Summarizer, sets: list, variant: str) -> dict:
    apply_variant(summarizer, variant)
    run = decode_and_score(summarizer, sets, "rouge")
    return {
        "variant": variant,
        **run.means,
        "words": run.words,
        "seconds": run.seconds,
        "summaries": run.summaries,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("dev", type=Path, help="review-set file with reference summaries")
    parser.add_argument("--variants", default="full,shortlist=5000,shortlist=5000+bf16")
    parser.add_argument("--limit", type=int, default=0, help="first N dev entities (0: all)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    sets = list(read_review_sets(args.dev))[: args.limit or None]
    summarizer = Summarizer.from_pretrained(args.model)
    results = [run_variant(summarizer, sets, v) for v in args.variants.split(",")]
    reference = results[0]["summaries"]
    print(f"{len(sets)} review sets of {args.dev.name}, model {args.model}\n")
    print("| decoding | R1 | R2 | RL | words | summaries changed | seconds |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for r in results:
        changed = sum(a != b for a, b in zip(r["summaries"], reference, strict=True))
        print(
            f"| {r['variant']} | {r['rouge1']:.2f} | {r['rouge2']:.2f} | {r['rougeL']:.2f} | "
            f"{r['words']:.1f} | {changed}/{len(sets)} | {r['seconds']:.0f} |"
        )
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
