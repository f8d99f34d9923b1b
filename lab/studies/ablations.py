"""The paper's ablation table (Table 4) at one reduced scale: every row trains on the same pairs
for the same budget, then is scored on the same dev entities with the same decoding.

    python -m lab.studies.ablations runs/synth-yelp-20k --topics runs/topics-yelp \
        --config configs/denoisesum-yelp-cpu.toml --steps 1000 --jobs 2 \
        --out runs/ablations --markdown lab/results/archive/ablations.md

Rows: full; no segment noise; no document noise; no explicit denoising; no partial copy; no
discriminator; 10% and 50% of the synthetic data. Each row is a `denoisesum train` run in
OUT/ROW (model selection on synthetic validation loss, so the dev set is only used for the
final scores), then `denoisesum summarize` of the dev review sets with the same decoding for
every row (--min-words), scored with rouge-score F1. The budget is a number of training steps
(--steps), so every row sees the same number of pairs whatever else runs on the machine;
--jobs runs rows side by side, each with cores/jobs torch threads. A row whose training
finished (OUT/ROW/results.json) is not trained again and its dev predictions are reused, and an
interrupted row resumes from its checkpoint: run the command again after a crash.
--extra LABEL=RUN scores another finished run the same way, e.g. the full row trained in fp32
when the others used bf16:

    python -m lab.studies.ablations ... --set 'train.precision="bf16"' \
        --extra "full, fp32=runs/ablations-fp32/full"

Every row is compared with the full one entity by entity (paired bootstrap interval of the R1
difference and an approximate randomization p-value), because on 100 dev entities a difference
under about one R1 point is within noise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROWS = {
    "full": [],
    "no segment noise": ["model.segment_noise=false"],
    "no document noise": ["model.document_noise=false"],
    "no explicit denoising": ["model.explicit_denoising=false"],
    "no partial copy": ["model.copy=false"],
    "no discriminator": ["model.discriminator=false"],
    "10% of the data": ["data.fraction=0.1"],
    "50% of the data": ["data.fraction=0.5"],
}


def slug(name: str) -> str:
    return name.replace("%", "pct").replace(" ", "-")


def threads(args: argparse.Namespace) -> int:
    return max(1, (os.cpu_count() or 1) // args.jobs)


def train(row: str, args: argparse.Namespace) -> Path:
    run = args.out / slug(row)
    command = [
        sys.executable,
        "-m",
        "denoisesum.cli",
        "train",
        str(args.pairs),
        "-o",
        str(run),
        "--config",
        str(args.config),
        "--topics",
        str(args.topics),
        "--set",
        f"train.max_steps={args.steps}",
        "--set",
        "train.max_minutes=0",
        "--set",
        f"train.threads={threads(args)}",
        "--set",
        'train.select_on="synthetic-loss"',
        "--set",
        "train.patience=0",
    ]
    if args.vocab:
        command += ["--vocab", str(args.vocab)]
    for override in [*ROWS[row], *args.set]:
        command += ["--set", override]
    if (run / "checkpoints" / "LATEST").exists():
        command.append("--resume")
    log = run.with_suffix(".log")
    run.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as handle:  # rows run side by side: one log each, not interleaved
        subprocess.run(command, check=True, stdout=handle, stderr=subprocess.STDOUT)
    return run


def decode(run: Path, args: argparse.Namespace) -> Path:
    predictions = run / "dev-predictions.jsonl"
    if not predictions.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "denoisesum.cli",
                "summarize",
                str(args.dev),
                "--model",
                str(run),
                "-o",
                str(predictions),
                "--raw",
                "--min-words",
                str(args.min_words),
                "--shortlist",
                str(args.shortlist),
            ],
            check=True,
            env={**os.environ, "OMP_NUM_THREADS": str(threads(args))},
        )
    return predictions


def score(run: Path, args: argparse.Namespace) -> dict:
    """Mean and per-entity rouge-score F1 of a run's dev predictions (entities in gold order,
    so that rows can be compared entity by entity)."""
    from denoisesum.data.reviewsets import read_review_sets
    from denoisesum.evaluation.rouge import rouge_f1_per_entity

    gold = {s.entity_id: s.summaries for s in read_review_sets(args.dev)}
    records = [json.loads(line) for line in decode(run, args).read_text().splitlines()]
    summaries = {r["entity_id"]: r["summary"] for r in records}
    ids = [i for i in gold if i in summaries]
    per_entity = rouge_f1_per_entity([summaries[i] for i in ids], [gold[i] for i in ids])
    results = json.loads((run / "results.json").read_text())
    n = len(ids)
    return {
        **{t: sum(values) / n for t, values in per_entity.items()},
        "per_entity": per_entity,
        "entities": n,
        "words": sum(len(summaries[i].split()) for i in ids) / n,
        "steps": results["steps"],
        "epochs": results["epochs"],
        "train_pairs": results["train_pairs"],
        "best_val_loss": results["best_val_loss"],
        "pairs_per_second": results["pairs_per_second"],
    }


def versus(row: dict, base: dict) -> str:
    """R1 difference to the base row with its paired 95% bootstrap interval and p-value."""
    from denoisesum.evaluation.stats import paired_test

    if row is base:
        return "– | –"
    test = paired_test(row["per_entity"]["rouge1"], base["per_entity"]["rouge1"])
    return (
        f"{test.difference:+.2f} ({test.ci_low:+.2f} to {test.ci_high:+.2f}) | {test.p_value:.2f}"
    )


def table(scores: dict[str, dict], args: argparse.Namespace) -> str:
    first = next(iter(scores.values()))
    base = scores.get("full", first)
    lines = [
        f"Ablations on {first['entities']} entities of `{args.dev.name}` (rouge-score F1), "
        f"each row trained for {args.steps:,} steps on `{args.pairs}` with `{args.config}` "
        f"and decoded with min_words {args.min_words} and shortlist {args.shortlist}; "
        "ΔR1 is the row minus the full model, entity by entity, with a paired bootstrap "
        "95% interval and an approximate randomization p-value; "
        "command: `python -m lab.studies.ablations` (see its docstring).",
        "",
        "| model | R1 | R2 | RL | ΔR1 vs full (95% CI) | p | words | steps | epochs | "
        "training pairs | best val loss | pairs/s |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    lines += [
        f"| {row} | {s['rouge1']:.2f} | {s['rouge2']:.2f} | {s['rougeL']:.2f} | "
        f"{versus(s, base)} | {s['words']:.1f} | "
        f"{s['steps']:,} | {s['epochs']:.2f} | {s['train_pairs']:,} | "
        f"{s['best_val_loss']:.3f} | {s['pairs_per_second']:.1f} |"
        for row, s in scores.items()
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--topics", type=Path, required=True)
    parser.add_argument("--config", type=Path, default=Path("configs/denoisesum-yelp-cpu.toml"))
    parser.add_argument("--vocab", type=Path)
    parser.add_argument("--steps", type=int, default=1000, help="training steps per row")
    parser.add_argument("--jobs", type=int, default=1, help="rows trained side by side")
    parser.add_argument("--min-words", type=int, default=75, help="decoding min_words")
    parser.add_argument(
        "--shortlist",
        type=int,
        default=5000,
        help="decoding shortlist (5000: same dev ROUGE as the full vocabulary)",
    )
    parser.add_argument("--dev", type=Path, default=Path("../shared/data/yelp/meansum_dev.jsonl"))
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated row names")
    parser.add_argument("--set", action="append", default=[], help="override for every row")
    parser.add_argument("--out", type=Path, default=Path("runs/ablations"))
    parser.add_argument("--markdown", type=Path)
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="LABEL=RUN",
        help="an already trained run to score and compare with the rest "
        "(for example a full row trained in fp32)",
    )
    args = parser.parse_args()
    from benchmarks.common import emit
    from denoisesum.io import write_json

    rows = args.rows.split(",")
    for row in rows:
        if row not in ROWS:
            parser.error(f"unknown row {row!r}; rows: {', '.join(ROWS)}")

    def run_row(row: str) -> dict:
        run = args.out / slug(row)
        done = run / "dev-scores.json"
        if not (run / "results.json").exists():  # results.json: training finished
            train(row, args)
        if not done.exists() or "per_entity" not in json.loads(done.read_text()):
            write_json(done, score(run, args))
        return json.loads(done.read_text())

    with ThreadPoolExecutor(args.jobs) as pool:
        scores = dict(zip(rows, pool.map(run_row, rows), strict=True))
    for extra in args.extra:
        label, _, run = extra.partition("=")
        scores[label] = score(Path(run), args)
    text = table(scores, args)
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
