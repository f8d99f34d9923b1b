"""The paper's ablation table (Table 4) at one reduced scale: every row trains on the same pairs
for the same budget, then is scored on the same dev entities with the same decoding.

    python scripts/ablations.py runs/synth-yelp-20k --topics runs/topics-yelp \
        --config configs/denoisesum-yelp-cpu.toml --minutes 20 --dev-entities 100 \
        --out runs/ablations --markdown docs/results/ablations.md

Rows: full; no segment noise; no document noise; no explicit denoising; no partial copy; no
discriminator; 10% and 50% of the synthetic data. Each row is a `denoisesum train` run in
OUT/ROW (model selection on synthetic validation loss, so the dev set is only used for the
final scores). A row whose OUT/ROW/dev-scores.json exists is not run again, and an interrupted
row resumes from its checkpoint: run the command again after a crash.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
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


def train(row: str, args: argparse.Namespace) -> Path:
    run = args.out / slug(row)
    command = [sys.executable, "-m", "denoisesum.cli", "train", str(args.pairs), "-o", str(run),
               "--config", str(args.config), "--topics", str(args.topics),
               "--max-minutes", str(args.minutes), "--cache", str(args.out / "data"),
               "--set", 'train.select_on="synthetic-loss"', "--set", "train.patience=0"]
    if args.vocab:
        command += ["--vocab", str(args.vocab)]
    for override in [*ROWS[row], *args.set]:
        command += ["--set", override]
    if (run / "checkpoints" / "LATEST").exists():
        command.append("--resume")
    subprocess.run(command, check=True)
    return run


def score(run: Path, args: argparse.Namespace) -> dict:
    from denoisesum.data.reviewsets import read_review_sets
    from denoisesum.evaluation.rouge import ROUGE_TYPES, rouge_f1
    from denoisesum.inference.summarizer import Summarizer

    sets = list(read_review_sets(args.dev))[: args.dev_entities or None]
    summaries = Summarizer.from_pretrained(run).summarize_tokens_batch([s.reviews for s in sets])
    per_entity = [rouge_f1(" ".join(t), s.summaries) for t, s in zip(summaries, sets, strict=True)]
    results = json.loads((run / "results.json").read_text())
    return {**{t: 100 * sum(x[t] for x in per_entity) / len(sets) for t in ROUGE_TYPES},
            "entities": len(sets), "steps": results["steps"], "epochs": results["epochs"],
            "train_pairs": results["train_pairs"], "best_val_loss": results["best_val_loss"]}


def table(scores: dict[str, dict], args: argparse.Namespace) -> str:
    first = next(iter(scores.values()))
    lines = [f"Ablations on {first['entities']} entities of `{args.dev.name}` (rouge-score F1), "
             f"each row trained for {args.minutes:g} minutes of steps on `{args.pairs}` with "
             f"`{args.config}`; command: `python scripts/ablations.py` (see its docstring).", "",
             "| model | R1 | R2 | RL | steps | epochs | training pairs | best val loss |",
             "|---|--:|--:|--:|--:|--:|--:|--:|"]
    lines += [f"| {row} | {s['rouge1']:.2f} | {s['rouge2']:.2f} | {s['rougeL']:.2f} | "
              f"{s['steps']:,} | {s['epochs']:.2f} | {s['train_pairs']:,} | "
              f"{s['best_val_loss']:.3f} |" for row, s in scores.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--topics", type=Path, required=True)
    parser.add_argument("--config", type=Path, default=Path("configs/denoisesum-yelp-cpu.toml"))
    parser.add_argument("--vocab", type=Path)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--dev", type=Path,
                        default=Path("../shared/data/yelp/meansum_dev.jsonl"))
    parser.add_argument("--dev-entities", type=int, default=0)
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated row names")
    parser.add_argument("--set", action="append", default=[], help="override for every row")
    parser.add_argument("--out", type=Path, default=Path("runs/ablations"))
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    from denoisesum.io import atomic_write, write_json

    scores = {}
    for row in args.rows.split(","):
        if row not in ROWS:
            parser.error(f"unknown row {row!r}; rows: {', '.join(ROWS)}")
        done = args.out / slug(row) / "dev-scores.json"
        if not done.exists():
            write_json(done, score(train(row, args), args))
        scores[row] = json.loads(done.read_text())
        print(f"{row}: {scores[row]}", flush=True)
    text = table(scores, args)
    print(text)
    if args.markdown:
        with atomic_write(args.markdown) as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
