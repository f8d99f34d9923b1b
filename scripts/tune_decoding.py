"""Choose the beam-search length settings of a trained model on the DEV set (never test).

ROUGE is sensitive to summary length (Yelp references have about 58 words) and to repetition;
the decoder's length is set by min_length and the length penalty, its repetition by n-gram
blocking. This decodes the dev review sets with each combination, scores them with rouge-score,
prints a table, and with --write saves the best setting (mean of R1/R2/RL F1) into the model's
config.json ("summarize.decode"), where
`Summarizer.from_pretrained` and `denoisesum summarize` pick it up.

    python scripts/tune_decoding.py runs/yelp/model ../shared/data/yelp/meansum_dev.jsonl \
        --min-lengths 10,30,45 --penalties 1.0,1.5 --write --markdown docs/results/decoding-dev.md
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
from pathlib import Path

from denoisesum.data.reviewsets import read_review_sets
from denoisesum.evaluation.decoded import decode_and_score
from denoisesum.inference.summarizer import Summarizer
from denoisesum.io import atomic_write


def score(summarizer: Summarizer, sets: list) -> dict[str, float]:
    run = decode_and_score(summarizer, sets, "rouge")
    return {**run.means, "mean": run.rouge_mean, "words": run.words, "seconds": run.seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("dev", type=Path, help="review-set file with reference summaries")
    parser.add_argument("--min-lengths", default="10,30,45")
    parser.add_argument("--penalties", default="1.0")
    parser.add_argument("--no-repeat-ngrams", default="",
                        help="n-gram blocking sizes to try (default: the model's setting)")
    parser.add_argument("--limit", type=int, default=0, help="first N dev entities (0: all)")
    parser.add_argument("--write", action="store_true", help="save the best into config.json")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    args = parser.parse_args()
    sets = list(read_review_sets(args.dev))[: args.limit or None]
    summarizer = Summarizer.from_pretrained(args.model)
    base = summarizer.config.decode
    rows = []
    grid = itertools.product([int(x) for x in args.min_lengths.split(",")],
                             [float(x) for x in args.penalties.split(",")],
                             [int(x) for x in args.no_repeat_ngrams.split(",") if x]
                             or [base.no_repeat_ngram])
    for min_length, penalty, ngram in grid:
        summarizer.config.decode = dataclasses.replace(
            base, min_length=min_length, length_penalty=penalty, no_repeat_ngram=ngram)
        result = score(summarizer, sets)
        rows.append({"min_length": min_length, "length_penalty": penalty,
                     "no_repeat_ngram": ngram, **result})
        print(json.dumps(rows[-1]), flush=True)
    best = max(rows, key=lambda r: r["mean"])
    lines = [f"Dev-set decoding search for `{args.model}` on {len(sets)} entities of "
             f"`{args.dev.name}` (rouge-score F1, beam {base.beam_size}).", "",
             "| min_length | length penalty | n-gram blocking | R1 | R2 | RL | mean | words "
             "| seconds |",
             "|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    lines += [f"| {r['min_length']} | {r['length_penalty']} | {r['no_repeat_ngram']} | "
              f"{r['rouge1']:.2f} | "
              f"{r['rouge2']:.2f} | {r['rougeL']:.2f} | {r['mean']:.2f} | {r['words']:.1f} | "
              f"{r['seconds']:.0f} |" for r in rows]
    lines += ["", f"Chosen: min_length {best['min_length']}, length penalty "
                  f"{best['length_penalty']}, n-gram blocking {best['no_repeat_ngram']}."]
    table = "\n".join(lines) + "\n"
    print(table)
    if args.markdown:
        with atomic_write(args.markdown) as handle:
            handle.write(table)
    if args.write:
        config_path = summarizer.path / "config.json"  # a model name: where it is installed
        config = json.loads(config_path.read_text())
        decode = config.setdefault("summarize", {}).setdefault("decode", {})
        decode.update(min_length=best["min_length"], length_penalty=best["length_penalty"],
                      no_repeat_ngram=best["no_repeat_ngram"])
        with atomic_write(config_path) as handle:
            handle.write(json.dumps(config, indent=2) + "\n")
        print(f"saved into {config_path}")


if __name__ == "__main__":
    main()
