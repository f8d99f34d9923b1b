"""Decoding levers of issue 14 on the DEV set, each against the model's own decoding (paired).

    python -m lab.studies.decoding_levers denoisesum-yelp ../shared/data/yelp/meansum_dev.jsonl \
        [--variants "beam10:beam=10;sentence:no_repeat_in_sentence=true"] \
        [--json runs/levers/dev.json] [--markdown lab/results/archive/decoding-levers.md]

A variant is `name:key=value,key=value` over the search and policy settings by name
(`policy.option_names()`), and `shortlist` and `bf16` of the SummarizerConfig (values are TOML:
true, 3, 0.5); `base` (no change) is always run first and is the reference. For every variant:
ROUGE-1/2/L by rouge-score and by the pooled py-rouge-style scorer,
the paired difference in R1 against `base` with its 95% interval and p-value (approximate
randomization), summary length, decoding seconds and their ratio to `base` (the same run, same
machine), and the style measures of `evaluation.style` (repeated words in a sentence, restated
sentences, first person). Results are kept in the JSON file as they come, so a cut-off run resumes
(`--force` recomputes). Dev only: this chooses settings, so never run it on test. It writes no
model: `denoisesum fit`'s decode stage chooses and saves a model's decoding.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.common import configured, emit, parse_variants
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.errors import DenoiseSumError
from denoisesum.inference.policy import option_names
from denoisesum.io import write_json
from denoisesum.summarizer import Summarizer
from lab.studies._harness import dev_parser, measure_rows, paired_tests, run_variant, table

DEFAULT_VARIANTS = ";".join(
    [
        "beam10:beam=10",
        "sentence-block:no_repeat_in_sentence=true",
        "word-limit-2:max_word_repeats=2",
        "word-limit-1:max_word_repeats=1",
        "third-person:first_person=false",
        "third-person+sentence:first_person=false,no_repeat_in_sentence=true",
    ]
)


def main() -> None:
    parser = dev_parser(__doc__.splitlines()[0])
    parser.add_argument("--variants", default=DEFAULT_VARIANTS)
    parser.add_argument("--limit", type=int, default=0, help="first N dev entities (0: all)")
    parser.add_argument("--json", type=Path, default=Path("runs/levers/dev.json"))
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--force", action="store_true", help="recompute stored variants")
    args = parser.parse_args()
    sets = list(read_review_sets(args.dev))[: args.limit or None]
    summarizer = Summarizer.from_pretrained(args.model)
    base = summarizer.config
    variants = parse_variants(args.variants)
    known = {*option_names(), "shortlist", "bf16"}
    for name, changes in variants.items():  # every variant refused before any is decoded
        unknown = sorted(set(changes) - known)
        if unknown:
            raise SystemExit(
                f"--variants: {name}: unknown setting(s) {', '.join(unknown)} "
                "(the search and policy settings, shortlist, bf16)"
            )
        try:
            configured(base, changes)
        except DenoiseSumError as err:
            raise SystemExit(f"--variants: {name}: {err}") from None
    rows = {} if args.force or not args.json.exists() else json.loads(args.json.read_text())
    args.json.parent.mkdir(parents=True, exist_ok=True)
    measure_rows(
        rows, variants, args.json, lambda changes: run_variant(summarizer, base, sets, changes)
    )
    paired_tests(rows)
    write_json(args.json, rows)
    command = "python -m lab.studies.decoding_levers " + " ".join(
        [
            str(args.model),
            str(args.dev),
            "--variants",
            f"'{args.variants}'",
            "--json",
            str(args.json),
        ]
        + (["--limit", str(args.limit)] if args.limit else [])
    )
    text = f"# Decoding levers (dev set)\n\n```bash\n{command}\n```\n\n" + table(
        rows, args.model, args.dev, len(sets)
    )
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
