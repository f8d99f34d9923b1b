"""lab/results/archive/lm-init.md: what starting every LSTM from the LM does to the learning curve.

    python -m lab.studies.report_lm_init runs/lminit/lm256 runs/lminit/lm384-embeddings \
        --command "$(cat runs/lminit/COMMAND)" --markdown lab/results/archive/lm-init.md

Each run is a `denoisesum train` directory of the same summarizer (configs/denoisesum-yelp-lm256
.toml) on the same pairs, seed and steps, started from a different LM: its lm-init.json says what
was copied. The table is the held-out synthetic NLL at every evaluation (steps, not seconds, so
a busy machine does not change it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common import emit


def curve(run: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["val_nll"] for r in rows if "val_nll" in r}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--command", default="")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    curves = {run.name: curve(run) for run in args.runs}
    inits = {run.name: json.loads((run / "lm-init.json").read_text()) for run in args.runs}
    lines = [
        "# Starting the summarizer from a language model: the learning curve",
        "",
        f"```bash\n{args.command}\n```",
        "",
        "| run | LM | copied | skipped |",
        "|---|---|---|---|",
    ]
    for name, init in inits.items():
        lines.append(
            f"| {name} | `{init['lm']}` | {init['embedding_rows']:,} embedding rows; "
            f"{', '.join(init['copied']) or 'no LSTM'} | "
            f"{', '.join(init['skipped']) or 'nothing'} |"
        )
    steps = sorted(set().union(*(c.keys() for c in curves.values())))
    lines += [
        "",
        "Held-out NLL (nats per summary token) by training step (8 pairs a step):",
        "",
        "| step | " + " | ".join(curves) + " |",
        "|--:|" + "--:|" * len(curves),
    ]
    for step in steps:
        cells = [f"{c[step]:.3f}" if step in c else "–" for c in curves.values()]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    emit("\n".join(lines) + "\n", args.markdown)


if __name__ == "__main__":
    main()
