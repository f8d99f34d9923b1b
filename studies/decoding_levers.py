"""Decoding levers of issue 14 on the DEV set, each against the model's own decoding (paired).

    python scripts/decoding_levers.py denoisesum-yelp ../shared/data/yelp/meansum_dev.jsonl \
        [--variants "rerank:rerank=true;sentence:no_repeat_in_sentence=true"] \
        [--json runs/levers/dev.json] [--markdown docs/results/decoding-levers.md]

A variant is `name:key=value,key=value` over DecodeConfig fields, and `shortlist` and `bf16` of the
SummarizerConfig (values are TOML: true, 3, 0.5); `base` (no change) is always run first and is the
reference. For every variant: ROUGE-1/2/L by rouge-score and by the pooled py-rouge-style scorer,
the paired difference in R1 against `base` with its 95% interval and p-value (approximate
randomization), summary length, decoding seconds and their ratio to `base` (the same run, same
machine), and the style measures of `evaluation.style` (repeated words in a sentence, restated
sentences, first person). Results are kept in the JSON file as they come, so a cut-off run resumes
(`--force` recomputes). Dev only: this chooses settings, so never run it on test.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from denoisesum.data.reviewsets import read_review_sets
from denoisesum.data.tokenizer import detokenize
from denoisesum.evaluation.decoded import choose_variant, decode_and_score
from denoisesum.evaluation.rouge import ROUGE_TYPES
from denoisesum.evaluation.stats import paired_test
from denoisesum.evaluation.style import style_report
from denoisesum.inference.summarizer import Summarizer
from denoisesum.io import write_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from common import configured, emit, parse_variants

DEFAULT_VARIANTS = ";".join([
    "rerank-r1:rerank=true,rerank_ngrams=1",
    "rerank:rerank=true",
    "rerank-beam10:rerank=true,beam_size=10",
    "rerank-subsets3:rerank=true,subsets=3",
    "sentence-block:no_repeat_in_sentence=true",
    "word-limit-2:max_word_repeats=2",
    "word-limit-1:max_word_repeats=1",
    "third-person:block_first_person=true",
    "third-person+sentence:block_first_person=true,no_repeat_in_sentence=true",
    "sentence+rerank-subsets3:no_repeat_in_sentence=true,rerank=true,subsets=3",
    "third-person+sentence+rerank-subsets3:block_first_person=true,no_repeat_in_sentence=true,"
    "rerank=true,subsets=3",
])


def run_variant(summarizer: Summarizer, base, sets: list, changes: dict) -> dict:
    """base: the model's SummarizerConfig; changes: of its decode config, or shortlist/bf16."""
    summarizer.config = configured(base, changes)
    run = decode_and_score(summarizer, sets, "rouge,pooled")
    return {"changes": changes, "scores": run.means, "seconds": run.seconds, "words": run.words,
            "style": style_report([detokenize(t.split()) for t in run.summaries],
                                  [s.reviews for s in sets]).to_dict(),
            "summaries": run.summaries,
            "per_entity": run.report.scores}


def _delta(test: dict | None) -> str:
    return "–" if not test else f"{test['difference']:+.2f} (p {test['p_value']:.3f})"


def _mean(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"  # "–": a row stored before the measure


def table(rows: dict[str, dict], model: Path, dev: Path, n: int) -> str:
    lines = [f"Decoding levers for `{model}` on {n} businesses of `{dev.name}` (dev). "
             "R1/R2/RL: rouge-score F1; pooled: py-rouge style. Δ: paired difference against "
             "`base` (the model's own decoding) with the approximate-randomization p-value. "
             "Repeat: share of summaries with a content word repeated in a sentence; restate: "
             "share with a sentence restating an earlier one; 1st person: share in the first "
             "person singular; unsaid: mean content words per summary that none of its "
             "reviews uses (`evaluation.style.unsupported_words`). "
             "Speed is measured apart, side by side "
             "(`benchmarks/summarize_speed.py --variants`): the seconds here were taken while "
             "the machine was shared and do not compare across rows.", "",
             "| variant | settings | R1 | R2 | RL | pooled R1/R2/RL | ΔR1 | ΔR2 | ΔRL | words "
             "| repeat | restate | 1st person | unsaid |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for name, r in rows.items():
        s, st, test = r["scores"], r["style"], r.get("vs_base", {})
        settings = (", ".join(f"{k}={v}" for k, v in r["changes"].items())
                    or "model's own").replace("|", "\\|")  # a | would end the table cell
        lines.append(
            f"| {name} | {settings} | {s['rouge1']:.2f} | {s['rouge2']:.2f} | {s['rougeL']:.2f} "
            f"| {s['pooled_rouge1']:.2f}/{s['pooled_rouge2']:.2f}/{s['pooled_rougeL']:.2f} "
            f"| {_delta(test.get('rouge1'))} | {_delta(test.get('rouge2'))} "
            f"| {_delta(test.get('rougeL'))} | {r['words']:.1f} "
            f"| {st['with_repeated_words']:.0%} | {st['with_restated_sentence']:.0%} "
            f"| {st['first_person']:.0%} | {_mean(st.get('unsupported_words'))} |")
    return "\n".join(lines) + "\n"


def dev_parser(description: str) -> argparse.ArgumentParser:
    """A lever script's parser: the model and the dev review-set file it is measured on."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("model", type=Path)
    parser.add_argument("dev", type=Path, help="review-set file with reference summaries")
    return parser


def check_keys(probe: dict, known: Sequence[str]) -> None:
    """A probe script's `--probes` keys: a clear refusal of any it does not know."""
    unknown = sorted(set(probe) - set(known))
    if unknown:
        raise SystemExit(f"--probes: unknown key(s) {', '.join(unknown)} (known: "
                         f"{', '.join(known)})")


def measure_rows(rows: dict[str, dict], variants: dict[str, dict], path: Path,
                 measure: Callable[[dict], dict], stamp: dict | None = None) -> None:
    """Measure `base` (no changes) and then each variant into `rows`, saving `path` after each
    so a cut-off run resumes: a stored row is kept when its changes, and the `stamp` fields
    (what else it was measured with), are those asked for. measure(changes) -> the row."""
    stamp = stamp or {}
    for name, changes in {"base": {}, **variants}.items():
        row = rows.get(name)
        if row and row["changes"] == changes and all(row.get(k) == v for k, v in stamp.items()):
            continue
        rows[name] = {**measure(changes), "changes": changes, **stamp}
        write_json(path, rows)
        print(name, json.dumps(rows[name]["scores"]), f"{rows[name]['seconds']:.0f} s",
              flush=True)


def main() -> None:
    parser = dev_parser(__doc__.splitlines()[0])
    parser.add_argument("--variants", default=DEFAULT_VARIANTS)
    parser.add_argument("--limit", type=int, default=0, help="first N dev entities (0: all)")
    parser.add_argument("--json", type=Path, default=Path("runs/levers/dev.json"))
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--force", action="store_true", help="recompute stored variants")
    parser.add_argument("--write", metavar="VARIANT",
                        help="save this variant's settings into the model's config.json "
                             "(summarize.decode); 'best': the variant with the best mean of "
                             "R1/R2/RL (rouge-score), base included (then nothing changes), "
                             "reranking left out (it costs 4x)")
    args = parser.parse_args()
    sets = list(read_review_sets(args.dev))[: args.limit or None]
    summarizer = Summarizer.from_pretrained(args.model)
    base = summarizer.config
    rows = {} if args.force or not args.json.exists() else json.loads(args.json.read_text())
    args.json.parent.mkdir(parents=True, exist_ok=True)
    measure_rows(rows, parse_variants(args.variants), args.json,
                 lambda changes: run_variant(summarizer, base, sets, changes))
    paired_tests(rows)
    write_json(args.json, rows)
    command = ("python scripts/decoding_levers.py " + " ".join(
        [str(args.model), str(args.dev), "--variants", f"'{args.variants}'", "--json",
         str(args.json)] + (["--limit", str(args.limit)] if args.limit else [])))
    text = f"# Decoding levers (dev set)\n\n```bash\n{command}\n```\n\n" + table(
        rows, args.model, args.dev, len(sets))
    emit(text, args.markdown)
    if args.write:
        name = best_variant(rows) if args.write == "best" else args.write
        if name not in rows:
            raise SystemExit(f"--write: no variant named {name!r} (measured: {', '.join(rows)})")
        write_variant(summarizer.path, rows[name]["changes"])  # a name: where it is


def best_variant(rows: dict[str, dict]) -> str:
    """The variant to ship (evaluation.decoded.choose_variant: best mean of R1/R2/RL, no
    reranking)."""
    return choose_variant({name: sum(row["scores"][t] for t in ROUGE_TYPES) / len(ROUGE_TYPES)
                           for name, row in rows.items()},
                          {name: row["changes"] for name, row in rows.items()})


def write_variant(model: Path, changes: dict) -> None:
    """Merge a variant's changes into the model's config.json (summarize.shortlist and bf16,
    the rest summarize.decode)."""
    path = model / "config.json"
    config = json.loads(path.read_text())
    summarize = config.setdefault("summarize", {})
    for key, value in changes.items():
        (summarize if key in ("shortlist", "bf16") else
         summarize.setdefault("decode", {}))[key] = value
    write_json(path, config)
    print(f"saved {changes} into {path}")


def paired_tests(rows: dict[str, dict]) -> None:
    """vs_base: the paired test of every variant against base, per metric (both scorers)."""
    base = rows["base"]["per_entity"]
    for name, row in rows.items():
        if name != "base":
            row["vs_base"] = {m: paired_test(row["per_entity"][m], base[m]).to_dict()
                              for m in base}


if __name__ == "__main__":
    main()
