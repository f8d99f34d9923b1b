"""docs/results/fit.md: `denoisesum fit` on a slice of the Yelp corpus, with and without --dev.

    bash scripts/fit_yelp_slice.sh      # runs both fits, then this report

Reads each run's fit-report.json (stages, wall times, summaries) and scores each model on the
dev businesses the --dev run did NOT select on (its train.dev_entities are the first ones), so
the two rows compare fairly: what model selection and decoding choice on dev buy, against the
fully unsupervised route (selection on synthetic validation loss, min_length from the corpus).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common import emit, system
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.evaluation.decoded import decode_and_score
from denoisesum.evaluation.stats import paired_test
from denoisesum.summarizer import Summarizer


def stage_table(report: dict) -> list[str]:
    lines = ["| stage | status | wall time | what it did |", "|---|---|--:|---|"]
    for s in report["stages"]:
        seconds = s.get("seconds_when_done", s["seconds"])
        lines.append(f"| {s['stage']} | {s['status']} | {seconds / 60:.1f} min | {s['summary']} |")
    lines.append(f"| **total** | | **{report['seconds'] / 60:.1f} min** | |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs=2, help="the --dev run, then the run without")
    parser.add_argument("--dev", type=Path, required=True)
    parser.add_argument("--skip", type=int, default=50, help="dev entities used for selection")
    parser.add_argument("--command", default="bash scripts/fit_yelp_slice.sh")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    sets = list(read_review_sets(args.dev))[args.skip :]
    reports = [json.loads((run / "fit-report.json").read_text()) for run in args.runs]
    scored = [
        decode_and_score(Summarizer.from_pretrained(run), sets, "rouge,pooled") for run in args.runs
    ]
    names = ["with --dev", "without --dev"]
    lines = [
        "# `denoisesum fit` on a Yelp slice",
        "",
        f"```bash\n{args.command}\n```",
        "",
        f"Machine: {system()}; both runs shared the 2 cores with other work, so wall "
        "times are upper bounds. Scores: rouge-score F1 (pooled py-rouge style in "
        f"brackets) on the {len(sets)} dev businesses after the first {args.skip}, which "
        "the --dev run selected on.",
        "",
        "| run | R1 | R2 | RL | words | total wall time |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name, run, report in zip(names, scored, reports, strict=True):
        m = run.means
        lines.append(
            f"| {name} | {m['rouge1']:.2f} ({m['pooled_rouge1']:.2f}) | "
            f"{m['rouge2']:.2f} ({m['pooled_rouge2']:.2f}) | {m['rougeL']:.2f} "
            f"({m['pooled_rougeL']:.2f}) | {run.words:.1f} | "
            f"{report['seconds'] / 60:.1f} min |"
        )
    a, b = (run.report.scores for run in scored)
    tests = {t: paired_test(a[t], b[t]) for t in ("rouge1", "rouge2", "rougeL")}
    lines += [
        "",
        "With minus without --dev, paired over the businesses: "
        + "; ".join(f"{t} {x.difference:+.2f} (p {x.p_value:.3f})" for t, x in tests.items())
        + ".",
        "",
        "Both summarizers had the same training budget in minutes; on a shared "
        "machine that is not the same number of steps (the train rows below say how "
        "many), so the difference mixes what --dev buys (selection and a longer, "
        "dev-chosen min_length) with how much each run could train.",
    ]
    for name, report in zip(names, reports, strict=True):
        lines += ["", f"## Stages, {name}", "", *stage_table(report)]
    emit("\n".join(lines) + "\n", args.markdown)


if __name__ == "__main__":
    main()
