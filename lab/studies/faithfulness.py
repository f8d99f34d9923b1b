"""Faithfulness runs of issue 31: decode, score and report a summarizer on the opinion sets and
MeanSum dev/test, from the run's own files.

    python -m lab.studies.faithfulness decode NAME --model DIR [--set search.KEY=VALUE ...]
                                   [--sets part14,part15,dev,test] [--no-stars]
    python -m lab.studies.faithfulness score NAME [NAME ...]
    python -m lab.studies.faithfulness calibrate --rating DIR --judged JUDGED.jsonl ...
    python -m lab.studies.faithfulness page BASE NEW [--markdown docs/results/faithfulness.md]
    python -m lab.studies.faithfulness evidence --judged JUDGED.jsonl ... [--markdown PAGE]

decode writes runs/faith/NAME/SET.jsonl (predictions) and settings.json; a set already decoded is
skipped, so a killed run resumes. The opinion sets (runs/opinion/set-part14.jsonl for tuning,
set-part15.jsonl for reporting) come from `denoisesum opinion-set` on the held-out shards
part-14 and part-15 of ../shared/data/yelp/corpus; their stars are given to the summarizer
(a user with a rated corpus has them) unless --no-stars. score writes runs/faith/NAME/
metrics.json: the opinion report per set, self-contradiction and clauses against the reviews
(inference/opinion.py), supported and contradicted sentences (--explain's check), words no review
says, mean length, and ROUGE (rouge-score, F1) on dev and test. calibrate measures the
self-contradiction detector against judged files (precision, recall, human summaries flagged).
page writes the results page from two runs' metrics. evidence measures --explain's check of
each sentence (supported, unsupported, contradicted) against the judges' verdicts.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from denoisesum.config import load_config
from denoisesum.data.reviewsets import read_predictions, read_review_sets
from denoisesum.evaluation.opinion import opinion_report
from denoisesum.evaluation.report import evaluate
from denoisesum.evaluation.style import unsupported_words
from denoisesum.inference.opinion import check_opinion, clauses, self_contradictions
from denoisesum.inference.support import explain
from denoisesum.io import atomic_write, iter_jsonl, read_json, write_json
from denoisesum.models.rating import RatingModel
from denoisesum.summarizer import Summarizer, SummarizerConfig

SHARED = Path(os.environ.get("DENOISESUM_DATA", "../shared/data")) / "yelp"
RUNS = Path("runs/faith")
SETS = {
    "part14": Path("runs/opinion/set-part14.jsonl"),
    "tune": Path("runs/opinion/set-tune.jsonl"),
    "part15": Path("runs/opinion/set-part15.jsonl"),
    "dev": SHARED / "meansum_dev.jsonl",
    "test": SHARED / "meansum_test.jsonl",
}


def load_sets(name: str) -> list[dict]:
    """The review sets of a set named in SETS, or of a review-set file given by its path."""
    path = SETS.get(name, Path(name))
    strata = [r.get("stratum", "all") for _, r in iter_jsonl(path)]
    return [
        {**rs.model_dump(), "stratum": s}
        for rs, s in zip(read_review_sets(path), strata, strict=True)
    ]


def decode(args: argparse.Namespace) -> None:
    summarizer = Summarizer.from_pretrained(args.model)
    config = load_config(SummarizerConfig, overrides=args.set, base=summarizer.config)
    summarizer.config = config
    out_dir = RUNS / args.name
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(
        out_dir / "settings.json",
        {
            "model": str(args.model),
            "overrides": args.set,
            "stars": not args.no_stars,
            "summarize": asdict(config),
        },
    )
    for name in args.sets.split(","):
        path = out_dir / f"{name}.jsonl"
        if path.exists():
            continue
        sets = load_sets(name)
        ratings = None if args.no_stars else [s["ratings"] or None for s in sets]
        start = time.perf_counter()
        results = summarizer.summarize_results([s["reviews"] for s in sets], ratings)
        summaries = [r.summary for r in results]
        seconds = time.perf_counter() - start
        with atomic_write(path) as handle:
            handle.writelines(
                json.dumps({"entity_id": s["entity_id"], "summary": x}) + "\n"
                for s, x in zip(sets, summaries, strict=True)
            )
        print(f"{args.name} {name}: {len(sets)} sets in {seconds:.0f} s", flush=True)


def _rating(args) -> RatingModel:
    return RatingModel.load(args.rating)


def _evidence(summaries: list[str], sets: list[dict], rating: RatingModel) -> dict:
    full = contradicted = n = 0
    contra = against = unsaid = words = 0
    for summary, s in zip(summaries, sets, strict=True):
        e = explain(s["reviews"], summary, rating=rating)
        n += len(e.sentences)
        full += sum(x.supported for x in e.sentences)
        contradicted += sum(x.contradicted for x in e.sentences)
        check = check_opinion(summary, s["reviews"], rating, s.get("ratings") or None)
        contra += check.self_contradicting
        against += bool(check.against_reviews)
        unsaid += unsupported_words(summary, s["reviews"])
        words += len(summary.split())
    m = len(summaries)
    return {
        "summaries": m,
        "sentences": n,
        "supported": full / n,
        "contradicted": contradicted / n,
        "self_contradicting": contra / m,
        "against_reviews": against / m,
        "unsaid_words": unsaid / m,
        "words": words / m,
    }


def score(args: argparse.Namespace) -> None:
    rating = _rating(args)
    for name in args.names:
        out: dict = {}
        for path in sorted((RUNS / name).glob("*.jsonl")):
            set_name = path.stem
            sets = load_sets(set_name)
            preds = {p.entity_id: p.summary for p in read_predictions(path)}
            summaries = [preds[s["entity_id"]] for s in sets]
            entry = {"evidence": _evidence(summaries, sets, rating)}
            if set_name.startswith("part") or set_name == "tune":
                report, _ = opinion_report(summaries, sets, rating)
                entry["opinion"] = report.to_dict()
            else:
                refs = {s["entity_id"]: s["summaries"] for s in sets}
                rouge = evaluate(preds, refs, "rouge,pooled", resamples=200).to_dict()
                entry["rouge"] = rouge
            out[set_name] = entry
            print(name, set_name, json.dumps(entry["evidence"]), flush=True)
        write_json(RUNS / name / "metrics.json", out)


def calibrate(args: argparse.Namespace) -> None:
    """Precision and recall of the self-contradiction detector against judged summaries (each
    file's rows as lab.studies.judging collect writes them), per file and pooled; and how often it
    flags a human summary (none of which the judges found self-contradicting)."""
    rating = _rating(args)
    names = [Path(p).name for p in args.judged]
    if len(set(names)) < len(names):  # `judging collect` names every study judged.jsonl
        raise SystemExit("calibrate: two judged files of one name; copy them under their own")
    table = {}
    for path in args.judged:
        counts = dict.fromkeys(("tp", "fp", "fn", "tn", "human", "human_flagged"), 0)
        for _, r in iter_jsonl(path):
            flagged = bool(self_contradictions(clauses(" ".join(r["sentences"]), rating)))
            if "human" in r["system"]:
                counts["human"] += 1
                counts["human_flagged"] += flagged
                continue
            truth = bool(r["self_contradiction"])
            key = ("t" if flagged == truth else "f") + ("p" if flagged else "n")
            counts[key] += 1
        table[Path(path).name] = counts
    table["all"] = {k: sum(c[k] for c in table.values()) for k in table[next(iter(table))]}
    for c in table.values():
        c["precision"] = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
        c["recall"] = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
    print(json.dumps(table["all"], indent=2))
    write_json(Path(args.out), table)


def _calibration_lines(path: Path) -> list[str]:
    """The detector's precision and recall per judged file (calibrate's output)."""
    table = read_json(path)
    lines = [
        "| judged file | model summaries | judged contradicting | flagged | precision | recall "
        "| human summaries flagged |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for name, c in table.items():
        n = c["tp"] + c["fp"] + c["fn"] + c["tn"]
        human = f"{c['human_flagged']} of {c['human']}" if c["human"] else "-"
        p, r = (f"{x:.2f}" if x is not None else "-" for x in (c["precision"], c["recall"]))
        lines.append(
            f"| {name} | {n} | {c['tp'] + c['fn']} | {c['tp'] + c['fp']} | {p} | {r} | {human} |"
        )
    return [*lines, ""]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


@functools.cache
def _predictions(name: str, set_name: str) -> dict[str, str]:
    return {p.entity_id: p.summary for p in read_predictions(RUNS / name / f"{set_name}.jsonl")}


def _example(name: str, set_name: str, entity: str) -> str:
    return _predictions(name, set_name)[entity]


def page(args: argparse.Namespace) -> None:
    """The results page from the runs' metrics.json (and the judged study, if collected)."""
    systems = dict(x.rsplit("=", 1) for x in args.systems)
    metrics = {label: read_json(RUNS / name / "metrics.json") for label, name in systems.items()}
    rating = read_json(Path(args.rating) / "rating-report.json")
    intro = Path(args.intro).read_text() if Path(args.intro).is_file() else args.intro
    lines = [f"# {args.title}", "", intro.strip(), ""]
    lines += [
        "## Opinion on businesses stratified by stars (held-out shard part-15)",
        "",
        "| system | stratum | n | reviews ★ | summary ★ | positive | mixed | negative | "
        "agrees | misleading | self-contradicting |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for label, m in metrics.items():
        strata = m["part15"]["opinion"]["strata"]
        for stratum in ("negative", "mixed", "positive"):
            x = strata[stratum]
            lines.append(
                f"| {label} | {stratum} | {x['n']} | {x['review_stars']:.2f} | "
                f"{x['summary_stars']:.2f} | {_pct(x['positive'])} | "
                f"{_pct(x['mixed'])} | {_pct(x['negative'])} | {_pct(x['agree'])} | "
                f"{_pct(x['misleading'])} | {_pct(x['self_contradicting'])} |"
            )
    lines += [
        "",
        "Pearson r between summary and review stars: "
        + ", ".join(
            f"{label} {m['part15']['opinion']['pearson_r']:.2f}" for label, m in metrics.items()
        ),
        "",
    ]
    lines += [
        "## Evidence and contradiction (automatic)",
        "",
        "| system | set | summaries | words | supported sentences | contradicted | "
        "self-contradicting | against the reviews | words no review says |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for label, m in metrics.items():
        for set_name in ("part15", "dev", "test"):
            if set_name in m:
                e = m[set_name]["evidence"]
                lines.append(
                    f"| {label} | {set_name} | {e['summaries']} | {e['words']:.1f} | "
                    f"{_pct(e['supported'])} | {_pct(e['contradicted'])} | "
                    f"{_pct(e['self_contradicting'])} | {_pct(e['against_reviews'])} | "
                    f"{e['unsaid_words']:.2f} |"
                )
    lines += [
        "",
        "## ROUGE (MeanSum, F1; pooled = py-rouge style, the leaderboard's)",
        "",
        "| system | set | R1 | R2 | RL | pooled R1 | pooled R2 | pooled RL |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for label, m in metrics.items():
        for set_name in ("dev", "test"):
            if set_name in m:
                r = {k: v["mean"] for k, v in m[set_name]["rouge"]["scores"].items()}
                lines.append(
                    f"| {label} | {set_name} | {r['rouge1']:.2f} | {r['rouge2']:.2f} | "
                    f"{r['rougeL']:.2f} | {r['pooled_rouge1']:.2f} | "
                    f"{r['pooled_rouge2']:.2f} | {r['pooled_rougeL']:.2f} |"
                )
    for study in args.judged:
        title, path = study.rsplit("=", 1)
        summary = read_json(Path(path))
        lines += [
            "",
            f"## Blinded judging: {title}",
            "",
            "| system | businesses | sentences | full | partial | none | "
            "self-contradicting | misleading |",
            "|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for system, x in summary.items():
            mis = sum(o["misleading"] * o["n"] for o in x["opinion"].values()) / x["businesses"]
            lines.append(
                f"| {system} | {x['businesses']} | {x['sentences']} | "
                f"{_pct(x['full'])} | {_pct(x['partial'])} | {_pct(x['none'])} | "
                f"{_pct(x['self_contradicting'])} | {_pct(mis)} |"
            )
        strata = sorted({s for x in summary.values() for s in x["opinion"]})
        if strata != ["all"]:
            lines += [
                "",
                "| system | stratum | n | positive | mixed | negative | agrees | misleading |",
                "|---|---|--:|--:|--:|--:|--:|--:|",
            ]
            for system, x in summary.items():
                for stratum in ("negative", "mixed", "positive"):
                    o = x["opinion"].get(stratum)
                    if o:
                        lines.append(
                            f"| {system} | {stratum} | {o['n']} | "
                            f"{_pct(o['positive'])} | {_pct(o['mixed'])} | "
                            f"{_pct(o['negative'])} | {_pct(o['agree'])} | "
                            f"{_pct(o['misleading'])} |"
                        )
    lines += [
        "",
        "## Examples (part-15: per stratum, the first business the systems differ on)",
        "",
    ]
    first = {}
    for s in load_sets("part15"):
        if len({_example(name, "part15", s["entity_id"]) for name in systems.values()}) > 1:
            first.setdefault(s["stratum"], s)
    for stratum, s in first.items():
        stars = ", ".join(f"{r:g}" for r in s["ratings"])
        lines += [
            f'**{stratum}** ({s["entity_id"]}, stars {stars}): "{s["reviews"][0][:160]}..."',
            "",
        ]
        for label, name in systems.items():
            lines += [f"- {label}: {_example(name, 'part15', s['entity_id'])}"]
        lines.append("")
    lines += [
        "## The rating model",
        "",
        f"Trained on {rating['train_reviews']:,} reviews of shards 00-13, reported on "
        f"{rating['heldout_reviews']:,} of shard 14: exact star {_pct(rating['accuracy'])},"
        f" within one star {_pct(rating['within_one'])}, polarity (negative ≤ 2, mixed 3, "
        f"positive ≥ 4) {_pct(rating['polarity_accuracy'])}, MAE {rating['mae']:.2f}, "
        f"Pearson r {rating['pearson_r']:.3f}.",
        "",
    ]
    if args.calibration and Path(args.calibration).exists():
        lines += [
            "## The self-contradiction detector against the judges",
            "",
            f"`inference/opinion.py`'s detector on every judged file ({args.calibration}).",
            "",
            *_calibration_lines(Path(args.calibration)),
        ]
    lines += ["## Reproduce", "", "```bash", *args.commands, "```", ""]
    with atomic_write(args.markdown) as handle:
        handle.write("\n".join(lines))
    print(f"-> {args.markdown}")


VERDICTS = ("full", "partial", "none")
CHECKS = ("supported", "unsupported", "contradicted")


def evidence(args: argparse.Namespace) -> None:
    """Per author (model or human) and per verdict of --explain's check, the share of the
    sentences the judges found fully, partly or not supported (each judged sentence once)."""
    rating = _rating(args)
    sets = {s["entity_id"]: s for name in ("dev", "part15") for s in load_sets(name)}
    counts: dict[tuple[str, str], dict[str, int]] = {}
    seen, files = set(), []
    for path in args.judged:
        rows = [r for _, r in iter_jsonl(path) if "verdicts" in r and r["entity_id"] in sets]
        files.append(f"{Path(path).name} ({len(rows)} summaries)")
        for r in rows:
            reviews = sets[r["entity_id"]]["reviews"]
            found = explain(reviews, " ".join(r["sentences"]), rating=rating).sentences
            checked = {x.text.strip().lower(): x for x in found}
            author = "human" if r["system"] in ("human", "reference") else "model"
            for sentence, verdict in zip(r["sentences"], r["verdicts"], strict=True):
                x = checked.get(sentence.strip().lower())
                if x is None or (r["entity_id"], sentence) in seen:
                    continue  # split otherwise by the check, or judged in an earlier file
                seen.add((r["entity_id"], sentence))
                check = "contradicted" if x.contradicted else CHECKS[0 if x.supported else 1]
                cell = counts.setdefault((author, check), dict.fromkeys(VERDICTS, 0))
                cell[verdict] += 1
    lines = [
        "# The evidence check against the judges",
        "",
        "What `--explain` says of a summary sentence (supported, unsupported, or contradicted: "
        "its words match a review whose opinion is the opposite) against what blinded judges "
        "found (fully, partly or not supported by the reviews; ../shared/docs/VERIDICALITY.md). "
        "Every judged sentence of the judged files below whose business is in MeanSum dev or "
        "the part-15 opinion set, once (the first file that judged it), checked with the "
        "shipped rating model. Generated by `lab/studies/faithfulness.py evidence`.",
        "",
        "| author | the check says | sentences | judged fully | partly | not supported |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for (author, check), cell in sorted(counts.items()):
        n = sum(cell.values())
        shares = " | ".join(f"{cell[v] / n:.0%}" for v in VERDICTS)
        lines.append(f"| {author} | {check} | {n} | {shares} |")
    lines += ["", *_evidence_reading(counts), "", "Judged files: " + ", ".join(files) + "."]
    lines += ["", "```bash", *args.commands, "```", ""]
    with atomic_write(args.markdown) as handle:
        handle.write("\n".join(lines))
    print(f"-> {args.markdown}")


def _evidence_reading(counts: dict[tuple[str, str], dict[str, int]]) -> list[str]:
    """The table's reading, from its counts."""

    def rate(author: str, check: str, verdict: str) -> float | None:
        cell = counts.get((author, check), {})
        n = sum(cell.values())
        return cell.get(verdict, 0) / n if n else None

    def shown(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.0%}"

    full = [rate("model", c, "full") for c in CHECKS]
    ordered = None not in full and full[0] > full[1] > full[2]
    return [
        f"Of the model's sentences, those the check calls supported are judged fully supported "
        f"{shown(full[0])} of the time, those it calls unsupported {shown(full[1])}, those it "
        f"calls contradicted {shown(full[2])}"
        + (" (the check orders them as the judges do)" if ordered else "")
        + f". Human summaries' sentences that it calls unsupported are judged fully supported "
        f"{shown(rate('human', 'unsupported', 'full'))} of the time: the check matches words, "
        "and a paraphrase shares few of them."
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("decode")
    p.add_argument("name")
    p.add_argument("--model", default=None)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="summarize settings, e.g. search.opinion_weight=0.5, policy.opinion_tone=3.25",
    )
    p.add_argument("--sets", default="part15,dev,test")
    p.add_argument("--no-stars", action="store_true")
    p.set_defaults(func=decode)
    p = sub.add_parser("score")
    p.add_argument("names", nargs="+")
    p.add_argument("--rating", default="runs/rating-yelp")
    p.set_defaults(func=score)
    p = sub.add_parser("calibrate")
    p.add_argument("--rating", default="runs/rating-yelp")
    p.add_argument("--judged", nargs="+", required=True, metavar="JUDGED.jsonl")
    p.add_argument("--out", default="runs/faith/calibration.json")
    p.set_defaults(func=calibrate)
    p = sub.add_parser("page")
    p.add_argument("--systems", nargs="+", required=True, metavar="LABEL=RUN")
    p.add_argument("--rating", default="src/denoisesum/pretrained/denoisesum-yelp")
    p.add_argument("--judged", nargs="*", default=[], metavar="TITLE=SUMMARY.json")
    p.add_argument("--calibration", default=None, help="calibrate's output, shown as a table")
    p.add_argument("--title", default="Faithfulness")
    p.add_argument("--intro", default="")
    p.add_argument("--commands", nargs="*", default=[])
    p.add_argument("--markdown", default="docs/results/faithfulness.md")
    p.set_defaults(func=page)
    p = sub.add_parser("evidence")
    p.add_argument("--rating", default="src/denoisesum/pretrained/denoisesum-yelp")
    p.add_argument("--judged", nargs="+", required=True, metavar="JUDGED.jsonl")
    p.add_argument("--commands", nargs="*", default=[])
    p.add_argument("--markdown", default="docs/results/evidence-check.md")
    p.set_defaults(func=evidence)
    args = parser.parse_args()
    np.seterr(all="ignore")
    args.func(args)


if __name__ == "__main__":
    main()
