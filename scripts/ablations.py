"""The paper's ablation table (Table 4) at one reduced scale: every row trains on the same pairs
for the same budget, then is scored on the same dev entities with the same decoding.

    python scripts/ablations.py runs/synth-yelp-20k --topics runs/topics-yelp \
        --config configs/denoisesum-yelp-cpu.toml --steps 1000 --jobs 2 \
        --out runs/ablations --markdown docs/results/ablations.md

Rows: full; no segment noise; no document noise; no explicit denoising; no partial copy; no
discriminator; 10% and 50% of the synthetic data. Each row is a `denoisesum train` run in
OUT/ROW (model selection on synthetic validation loss, so the dev set is only used for the
final scores), then `denoisesum summarize` of the dev review sets with the same decoding for
every row (--min-length), scored with rouge-score F1. The budget is a number of training steps
(--steps), so every row sees the same number of pairs whatever else runs on the machine;
--jobs runs rows side by side, each with cores/jobs torch threads. A row whose
OUT/ROW/dev-scores.json exists is not run again, and an interrupted row resumes from its
checkpoint: run the command again after a crash.
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
    command = [sys.executable, "-m", "denoisesum.cli", "train", str(args.pairs), "-o", str(run),
               "--config", str(args.config), "--topics", str(args.topics),
               "--set", f"train.max_steps={args.steps}",
               "--set", "train.max_minutes=0", "--set", f"train.threads={threads(args)}",
               "--set", 'train.select_on="synthetic-loss"', "--set", "train.patience=0"]
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


def score(run: Path, args: argparse.Namespace) -> dict:
    from denoisesum.data.reviewsets import read_review_sets
    from denoisesum.evaluation.rouge import ROUGE_TYPES, rouge_f1

    predictions = run / "dev-predictions.jsonl"
    subprocess.run([sys.executable, "-m", "denoisesum.cli", "summarize", str(args.dev),
                    "--model", str(run), "-o", str(predictions), "--raw",
                    "--min-length", str(args.min_length), "--shortlist", str(args.shortlist)],
                   check=True,
                   env={**os.environ, "OMP_NUM_THREADS": str(threads(args))})
    gold = {s.entity_id: s.summaries for s in read_review_sets(args.dev)}
    records = [json.loads(line) for line in predictions.read_text().splitlines()]
    per_entity = [rouge_f1(r["summary"], gold[r["entity_id"]]) for r in records]
    results = json.loads((run / "results.json").read_text())
    n = len(records)
    return {**{t: 100 * sum(x[t] for x in per_entity) / n for t in ROUGE_TYPES},
            "entities": n, "words": sum(len(r["summary"].split()) for r in records) / n,
            "steps": results["steps"], "epochs": results["epochs"],
            "train_pairs": results["train_pairs"], "best_val_loss": results["best_val_loss"]}


def table(scores: dict[str, dict], args: argparse.Namespace) -> str:
    first = next(iter(scores.values()))
    lines = [f"Ablations on {first['entities']} entities of `{args.dev.name}` (rouge-score F1), "
             f"each row trained for {args.steps:,} steps on `{args.pairs}` with `{args.config}` "
             f"and decoded with min_length {args.min_length} and shortlist {args.shortlist}; "
             "command: `python scripts/ablations.py` (see its docstring).", "",
             "| model | R1 | R2 | RL | words | steps | epochs | training pairs | best val loss |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    lines += [f"| {row} | {s['rouge1']:.2f} | {s['rouge2']:.2f} | {s['rougeL']:.2f} | "
              f"{s['words']:.1f} | "
              f"{s['steps']:,} | {s['epochs']:.2f} | {s['train_pairs']:,} | "
              f"{s['best_val_loss']:.3f} |" for row, s in scores.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--topics", type=Path, required=True)
    parser.add_argument("--config", type=Path, default=Path("configs/denoisesum-yelp-cpu.toml"))
    parser.add_argument("--vocab", type=Path)
    parser.add_argument("--steps", type=int, default=1000, help="training steps per row")
    parser.add_argument("--jobs", type=int, default=1, help="rows trained side by side")
    parser.add_argument("--min-length", type=int, default=75, help="decoding min_length")
    parser.add_argument("--shortlist", type=int, default=5000,
                        help="decoding shortlist (5000: same dev ROUGE as the full vocabulary)")
    parser.add_argument("--dev", type=Path,
                        default=Path("../shared/data/yelp/meansum_dev.jsonl"))
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated row names")
    parser.add_argument("--set", action="append", default=[], help="override for every row")
    parser.add_argument("--out", type=Path, default=Path("runs/ablations"))
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    from denoisesum.io import atomic_write, write_json

    rows = args.rows.split(",")
    for row in rows:
        if row not in ROWS:
            parser.error(f"unknown row {row!r}; rows: {', '.join(ROWS)}")

    def run_row(row: str) -> dict:
        done = args.out / slug(row) / "dev-scores.json"
        if not done.exists():
            write_json(done, score(train(row, args), args))
        print(f"{row}: {done.read_text()}", flush=True)
        return json.loads(done.read_text())

    with ThreadPoolExecutor(args.jobs) as pool:
        scores = dict(zip(rows, pool.map(run_row, rows), strict=True))
    text = table(scores, args)
    print(text)
    if args.markdown:
        with atomic_write(args.markdown) as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
