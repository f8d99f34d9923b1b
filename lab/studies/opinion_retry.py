"""A second search for summaries whose opinion is not their reviews' (issue 31; measured, not
shipped: docs/results/contradiction.md).

    python -m lab.studies.opinion_retry NAME [--sets part15,tune,dev,test]

Summarizes each set with the shipped model and settings (the reviews' stars given, as
lab.studies.faithfulness decode does), reads each summary's opinion with the model's rating model
and summarizes again the sets whose summary's polarity is not their target's: steered half a
star further down where it reads too positive (opinion_tone and a set opinion_reach + 0.5), half as
hard where it reads too negative (opinion_weight / 2). The second summary replaces the first
when its polarity is the target's and it keeps at least KEEPS of the first one's words (agreement
by cutting a summary down to one sentence is no gain). Writes runs/faith/NAME/SET.jsonl, to score
with `python -m lab.studies.faithfulness score NAME`.
"""

from __future__ import annotations

import argparse
import json

from denoisesum.io import atomic_write
from denoisesum.models.rating import polarity
from denoisesum.summarizer import Summarizer
from lab.studies.faithfulness import RUNS, load_sets

KEEPS = 0.6


def retried(sets: list[dict], summarizer: Summarizer) -> tuple[list[str], int]:
    """The summaries, with the second search's where it agrees; and how many were replaced."""
    reviews = [s["reviews"] for s in sets]
    ratings = [s["ratings"] or None for s in sets]
    first = [r.summary for r in summarizer.summarize_results(reviews, ratings)]
    targets = [summarizer.target_stars(s["reviews"], s["ratings"] or []) for s in sets]
    read = summarizer.rating.stars(first)
    d = summarizer.denoisesum.decoding()
    ways = {
        "down": {
            "opinion_tone": min(5.0, d.policy.opinion_tone + 0.5),
            "opinion_reach": d.policy.opinion_reach and min(4.0, d.policy.opinion_reach + 0.5),
        },  # opinion_reach 0: none
        "up": {"opinion_weight": d.search.opinion_weight / 2},
    }
    out, replaced = list(first), 0
    for way, options in ways.items():
        these = [
            i
            for i, (t, r) in enumerate(zip(targets, read, strict=True))
            if polarity(r) != polarity(t) and (r > t) == (way == "down")
        ]
        if not these:
            continue
        second = [
            r.summary
            for r in summarizer.summarize_results(
                [reviews[i] for i in these], [ratings[i] for i in these], **options
            )
        ]
        for i, text in zip(these, second, strict=True):
            agrees = polarity(summarizer.rating.star(text)) == polarity(targets[i])
            if agrees and len(text.split()) >= KEEPS * len(first[i].split()):
                out[i], replaced = text, replaced + 1
    return out, replaced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name")
    parser.add_argument("--sets", default="part15,tune,dev,test")
    args = parser.parse_args()
    summarizer = Summarizer.from_pretrained()
    (RUNS / args.name).mkdir(parents=True, exist_ok=True)
    for name in args.sets.split(","):
        sets = load_sets(name)
        summaries, replaced = retried(sets, summarizer)
        with atomic_write(RUNS / args.name / f"{name}.jsonl") as handle:
            handle.writelines(
                json.dumps({"entity_id": s["entity_id"], "summary": x}) + "\n"
                for s, x in zip(sets, summaries, strict=True)
            )
        print(f"{args.name} {name}: {len(sets)} sets, {replaced} summaries replaced", flush=True)


if __name__ == "__main__":
    main()
