"""How the rating model should read a summary's opinion: checked against the judges (issue 31).

    python -m lab.studies.opinion_reading [--judged docs/results/judged]
        [--rating src/denoisesum/pretrained/denoisesum-yelp] [--markdown FILE]

The faithfulness measures (evaluation/opinion.py) call a summary's opinion positive, mixed or
negative from the rating model's stars. The judged files (docs/results/judged/*.jsonl, every
blinded study so far) say what opinion the judges took from each summary. This compares, over
every distinct judged summary (its judges' majority label), three readings of its stars:

- whole: the whole text at once (the measures' reading before 2026-11-27);
- sentences: the mean of its sentences, each read alone (the side openings left out);
- sentences by side: as sentences, within each side of a two-sided summary, then the sides'
  mean (evaluation.opinion.summary_stars, the reading now).

For each, the share of summaries whose polarity (models.rating.polarity) is the judges', over
all of them, the one-sided and two-sided ones, and two halves of the businesses drawn at random
(seed 0) to show the ranking does not rest on a few of them; and the confusion with the judges'
labels.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from denoisesum.evaluation.opinion import summary_stars
from denoisesum.inference.support import split_sentences
from denoisesum.io import iter_jsonl
from denoisesum.models.rating import POLARITIES, RatingModel, polarity
from denoisesum.text import SIDE_OPENING, without_openings
from lab.studies._harness import publish


def judged_summaries(directory: Path) -> list[dict]:
    """Each distinct judged summary (business, text) once, with its judges' majority opinion
    (the first label seen on a tie) and its systems."""
    labels: dict[tuple[str, str], list[str]] = {}
    systems: dict[tuple[str, str], set[str]] = {}
    for path in sorted(directory.glob("*.jsonl")):
        if path.name.endswith(".entities.jsonl"):
            continue
        for _, row in iter_jsonl(path):
            if "summary_opinion" not in row:
                continue
            key = (row["entity_id"], " ".join(row["sentences"]))
            labels.setdefault(key, []).append(row["summary_opinion"])
            systems.setdefault(key, set()).add(row["system"])
    return [
        {
            "entity_id": entity,
            "text": text,
            "judged": Counter(found).most_common(1)[0][0],
            "two_sided": len([s for s in SIDE_OPENING.split(text) if s.strip()]) > 1,
            "human": "human" in systems[(entity, text)],
        }
        for (entity, text), found in labels.items()
    ]


def readers(model: RatingModel) -> dict[str, Callable[[str], float]]:
    def sentences(text: str) -> float:
        text = without_openings(text)
        parts = [text[a:b] for a, b in split_sentences(text) if text[a:b].strip()]
        return float(np.mean(model.stars(parts))) if parts else model.star(text)

    return {
        "whole": model.star,
        "sentences": sentences,
        "sentences by side": lambda text: summary_stars(text, model),
    }


def agreement(rows: list[dict], reading: str) -> float:
    return float(np.mean([polarity(r[reading]) == r["judged"] for r in rows])) if rows else 0.0


def report(rows: list[dict], names: list[str]) -> str:
    entities = sorted({r["entity_id"] for r in rows})
    random.Random(0).shuffle(entities)
    half = set(entities[: len(entities) // 2])
    groups = {
        "all": rows,
        "one-sided": [r for r in rows if not r["two_sided"]],
        "two-sided": [r for r in rows if r["two_sided"]],
        "model summaries": [r for r in rows if not r["human"]],
        "human summaries": [r for r in rows if r["human"]],
        "businesses, half A": [r for r in rows if r["entity_id"] in half],
        "businesses, half B": [r for r in rows if r["entity_id"] not in half],
    }
    lines = [
        "| summaries | n | " + " | ".join(names) + " |",
        "|---|--:|" + "--:|" * len(names),
    ]
    for group, members in groups.items():
        cells = " | ".join(f"{100 * agreement(members, n):.1f}%" for n in names)
        lines.append(f"| {group} | {len(members)} | {cells} |")
    for name in names:
        confusion = Counter((r["judged"], polarity(r[name])) for r in rows)
        lines += [
            "",
            f"Judges' label (rows) against the reading **{name}** (columns):",
            "",
            "| judged | " + " | ".join(POLARITIES) + " |",
            "|---|" + "--:|" * len(POLARITIES),
        ]
        for judged in POLARITIES:
            counts = " | ".join(str(confusion[(judged, read)]) for read in POLARITIES)
            lines.append(f"| {judged} | {counts} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judged", type=Path, default=Path("docs/results/judged"))
    parser.add_argument(
        "--rating",
        default="src/denoisesum/pretrained/denoisesum-yelp",
        help="the rating model's directory (or rating.npz)",
    )
    parser.add_argument("--markdown", type=Path, help="write the tables to this file")
    args = parser.parse_args()
    model = RatingModel.load(args.rating)
    rows = judged_summaries(args.judged)
    read = readers(model)
    for row in rows:
        row.update({name: fn(row["text"]) for name, fn in read.items()})
    text = report(rows, list(read))
    publish(text, args.markdown)


if __name__ == "__main__":
    main()
