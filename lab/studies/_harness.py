"""What the dev-set studies share: a parser, variant rows measured and kept as they come (so a
cut-off run resumes), paired tests against the model's own decoding, and the table of rows.

    summarizer = Summarizer.from_pretrained("denoisesum-yelp")
    rows = {}
    measure_rows(rows, {"s5": {...}}, Path("runs/x.json"), lambda probe: run_variant(...))
    paired_tests(rows)
    print(table(rows, model, dev, len(sets)))

A row is a dict: changes (the variant's settings), scores (rouge-score and pooled F1 means),
per_entity (the scores per review set), summaries, words, seconds, style, and vs_base (the
paired test of each score against the `base` row) once paired_tests has run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import configured
from denoisesum.data.tokenizer import detokenize
from denoisesum.evaluation.decoded import decode_and_score
from denoisesum.evaluation.stats import paired_test
from denoisesum.evaluation.style import style_report
from denoisesum.io import atomic_write, write_json
from denoisesum.summarizer import Summarizer


def run_variant(summarizer: Summarizer, base, sets: list, changes: dict) -> dict:
    """base: the model's SummarizerConfig; changes: search or policy settings by name, or
    shortlist/bf16 (benchmarks.common.configured)."""
    summarizer.config = configured(base, changes)
    run = decode_and_score(summarizer, sets, "rouge,pooled")
    return {
        "changes": changes,
        "scores": run.means,
        "seconds": run.seconds,
        "words": run.words,
        "style": style_report(
            [detokenize(t.split()) for t in run.summaries], [s.reviews for s in sets]
        ).to_dict(),
        "summaries": run.summaries,
        "per_entity": run.report.scores,
    }


def _delta(test: dict | None) -> str:
    return "–" if not test else f"{test['difference']:+.2f} (p {test['p_value']:.3f})"


def _mean(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"  # "–": a row stored before the measure


def table(rows: dict[str, dict], model: Path, dev: Path, n: int) -> str:
    lines = [
        f"Decoding levers for `{model}` on {n} businesses of `{dev.name}` (dev). "
        "R1/R2/RL: rouge-score F1; pooled: py-rouge style. Δ: paired difference against "
        "`base` (the model's own decoding) with the approximate-randomization p-value. "
        "Repeat: share of summaries with a content word repeated in a sentence; restate: "
        "share with a sentence restating an earlier one; 1st person: share in the first "
        "person singular; unsaid: mean content words per summary that none of its "
        "reviews uses (`evaluation.style.unsupported_words`). "
        "Speed is measured apart, side by side "
        "(`benchmarks/summarize_speed.py --variants`): the seconds here were taken while "
        "the machine was shared and do not compare across rows.",
        "",
        "| variant | settings | R1 | R2 | RL | pooled R1/R2/RL | ΔR1 | ΔR2 | ΔRL | words "
        "| repeat | restate | 1st person | unsaid |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, r in rows.items():
        s, st, test = r["scores"], r["style"], r.get("vs_base", {})
        settings = (
            ", ".join(f"{k}={v}" for k, v in r["changes"].items()) or "model's own"
        ).replace("|", "\\|")  # a | would end the table cell
        lines.append(
            f"| {name} | {settings} | {s['rouge1']:.2f} | {s['rouge2']:.2f} | {s['rougeL']:.2f} "
            f"| {s['pooled_rouge1']:.2f}/{s['pooled_rouge2']:.2f}/{s['pooled_rougeL']:.2f} "
            f"| {_delta(test.get('rouge1'))} | {_delta(test.get('rouge2'))} "
            f"| {_delta(test.get('rougeL'))} | {r['words']:.1f} "
            f"| {st['with_repeated_words']:.0%} | {st['with_restated_sentence']:.0%} "
            f"| {st['first_person']:.0%} | {_mean(st.get('unsupported_words'))} |"
        )
    return "\n".join(lines) + "\n"


def dev_parser(description: str) -> argparse.ArgumentParser:
    """A study's parser: the model and the dev review-set file it is measured on."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("model", type=Path)
    parser.add_argument("dev", type=Path, help="review-set file with reference summaries")
    return parser


def measure_rows(
    rows: dict[str, dict],
    variants: dict[str, dict],
    path: Path,
    measure: Callable[[dict], dict],
    stamp: dict | None = None,
) -> None:
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
        print(name, json.dumps(rows[name]["scores"]), f"{rows[name]['seconds']:.0f} s", flush=True)


def paired_tests(rows: dict[str, dict]) -> None:
    """vs_base: the paired test of every variant against base, per metric (both scorers)."""
    base = rows["base"]["per_entity"]
    for name, row in rows.items():
        if name != "base":
            row["vs_base"] = {m: paired_test(row["per_entity"][m], base[m]).to_dict() for m in base}


def publish(text: str, markdown: Path | None) -> None:
    """Print a study's tables and, given a --markdown path, write them there too."""
    print(text)
    if markdown:
        with atomic_write(markdown) as handle:
            handle.write(text)
