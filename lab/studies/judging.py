"""Blinded judging of summaries with the protocol of ../shared/docs/VERIDICALITY.md (issue 31).

    python -m lab.studies.judging prepare OUT_DIR --sets dev --systems NAME=PRED.jsonl ...
                              [--count 50] [--seed 0] [--parts 2] [--entities FILE]
    python -m lab.studies.judging collect OUT_DIR
    python -m lab.studies.judging paired SYSTEM_A SYSTEM_B JUDGED.jsonl ...

prepare picks `count` businesses of a set (runs/faith's names: dev, part15; or the businesses of
--entities, a JSONL file with entity_id), normalises each system's summary (lower case,
tokenizer spaces removed), splits it into sentences and shuffles the systems under anonymous
labels S1..Sk per business. It writes the judges' task files (task-N.json: reviews and the
labelled sentences, no system names) and key.json (label -> system), which the judges are not
given. A judge writes verdicts-N.json: per business and label, one verdict per sentence
("full", "partial", "none"), "self_contradiction" (bool) and, for opinion, "reviews_opinion" and
"summary_opinion" (negative / mixed / positive) and "misleading" (bool).

collect joins the verdicts with the key: per system, % of sentences full / partial / none, % of
summaries self-contradicting, and per stratum % agreeing and misleading; it writes judged.jsonl
(one row per business and system, as ../shared/data/yelp/judged has them) and summary.json.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

from denoisesum.data.reviewsets import read_predictions
from denoisesum.inference.support import split_sentences
from denoisesum.io import iter_jsonl, read_json, write_json
from lab.studies.faithfulness import load_sets


def normalise(summary: str) -> list[str]:
    text = " ".join(summary.lower().split())
    for a, b in (
        (" .", "."),
        (" ,", ","),
        (" !", "!"),
        (" ?", "?"),
        (" n't", "n't"),
        (" 's", "'s"),
        (" 're", "'re"),
        (" 'm", "'m"),
        (" 've", "'ve"),
        (" 'll", "'ll"),
        (" 'd", "'d"),
    ):
        text = text.replace(a, b)
    return [text[s:e].strip() for s, e in split_sentences(text) if text[s:e].strip()]


def prepare(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = {s["entity_id"]: s for s in load_sets(args.sets)}
    systems = dict(x.split("=", 1) for x in args.systems)
    preds = {
        name: {p.entity_id: p.summary for p in read_predictions(path)}
        for name, path in systems.items()
    }
    rng = random.Random(args.seed)
    if args.entities:
        chosen = [r["entity_id"] for _, r in iter_jsonl(args.entities)]
        chosen = list(dict.fromkeys(chosen))
    else:
        chosen = rng.sample(sorted(sets), args.count)
    tasks: list[list[dict]] = [[] for _ in range(args.parts)]
    key: dict[str, dict[str, str]] = {}
    for i, entity in enumerate(chosen):
        names = list(systems)
        rng.shuffle(names)
        labels = {f"S{j + 1}": name for j, name in enumerate(names)}
        key[entity] = labels
        tasks[i % args.parts].append(
            {
                "entity_id": entity,
                "reviews": sets[entity]["reviews"],
                "summaries": {
                    label: normalise(preds[name][entity]) for label, name in labels.items()
                },
            }
        )
    for n, task in enumerate(tasks):
        write_json(out / f"task-{n}.json", task)
    write_json(
        out / "key.json",
        {
            "systems": systems,
            "sets": args.sets,
            "key": key,
            "strata": {e: sets[e].get("stratum", "all") for e in chosen},
        },
    )
    print(f"{len(chosen)} businesses x {len(systems)} systems -> {out}/task-*.json")


def collect(args: argparse.Namespace) -> None:
    out = Path(args.out)
    key = read_json(out / "key.json")
    rows = []
    for path in sorted(out.glob("verdicts-[0-9].json")) + sorted(
        out.glob("verdicts-[0-9][0-9].json")
    ):
        task = {t["entity_id"]: t for t in read_json(out / path.name.replace("verdicts", "task"))}
        for entity, labelled in read_json(path).items():
            for label, v in labelled.items():
                sentences = task[entity]["summaries"][label]
                if len(v["verdicts"]) != len(sentences):
                    raise SystemExit(
                        f"{path}: {entity} {label}: {len(v['verdicts'])} verdicts "
                        f"for {len(sentences)} sentences"
                    )
                rows.append(
                    {
                        "entity_id": entity,
                        "system": key["key"][entity][label],
                        "stratum": key["strata"][entity],
                        "sentences": sentences,
                        **v,
                    }
                )
    summary: dict = {}
    by_system = defaultdict(list)
    for r in rows:
        by_system[r["system"]].append(r)
    for system, rs in by_system.items():
        verdicts = [v for r in rs for v in r["verdicts"]]
        entry = {
            "businesses": len(rs),
            "sentences": len(verdicts),
            **{k: verdicts.count(k) / len(verdicts) for k in ("full", "partial", "none")},
            "self_contradicting": sum(r["self_contradiction"] for r in rs) / len(rs),
        }
        for scale in ("readability", "specificity"):
            marks = [r[scale] for r in rs if scale in r]
            if marks:
                entry[scale] = sum(marks) / len(marks)
        strata = defaultdict(list)
        for r in rs:
            if "summary_opinion" in r:
                strata[r["stratum"]].append(r)
        entry["opinion"] = {
            s: {
                "n": len(x),
                **{
                    p: sum(r["summary_opinion"] == p for r in x) / len(x)
                    for p in ("positive", "mixed", "negative")
                },
                "agree": sum(r["summary_opinion"] == r["reviews_opinion"] for r in x) / len(x),
                "misleading": sum(r["misleading"] for r in x) / len(x),
            }
            for s, x in strata.items()
        }
        summary[system] = entry
    with open(out / "judged.jsonl", "w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)
    write_json(out / "summary.json", summary)
    print(json.dumps(summary, indent=2))


def paired(args: argparse.Namespace) -> None:
    """Two systems judged side by side on the same businesses (judged.jsonl files): per
    business, self-contradiction and misleading fixed or new (sign test) and the change in the
    shares of full and none sentences (Wilcoxon signed-rank over the businesses that differ)."""
    from scipy.stats import binomtest, wilcoxon

    by: dict[str, dict[str, dict]] = {}
    for path in args.judged:
        for _, r in iter_jsonl(path):
            by.setdefault(r["entity_id"], {})[r["system"]] = r
    pairs = [(d[args.a], d[args.b]) for d in by.values() if args.a in d and args.b in d]
    if not pairs:
        raise SystemExit(f"paired: no business judged for both {args.a} and {args.b}")
    if len(pairs) < len(by):
        print(f"{len(by) - len(pairs)} businesses not judged for both systems: left out")
    for key in ("self_contradiction", "misleading"):
        fixed = sum(a[key] and not b[key] for a, b in pairs)
        new = sum(b[key] and not a[key] for a, b in pairs)
        p = binomtest(fixed, fixed + new).pvalue if fixed + new else 1.0
        print(
            f"{key}: {sum(a[key] for a, _ in pairs)} -> {sum(b[key] for _, b in pairs)} of "
            f"{len(pairs)}; fixed {fixed}, new {new}, sign test p {p:.2f}"
        )
    for scale in ("readability", "specificity"):
        change = [b[scale] - a[scale] for a, b in pairs if scale in a and scale in b]
        differ = [c for c in change if c]
        if change:
            p = wilcoxon(differ).pvalue if differ else 1.0
            print(
                f"{scale}: mean change {sum(change) / len(change):+.2f} over {len(change)} "
                f"businesses ({len(differ)} differ), Wilcoxon p {p:.3g}"
            )
    for verdict in ("full", "none"):
        change = [_share(b, verdict) - _share(a, verdict) for a, b in pairs]
        differ = [c for c in change if c]
        p = wilcoxon(differ).pvalue if differ else 1.0
        print(
            f"{verdict} share: mean change {sum(change) / len(change):+.3f} over {len(change)} "
            f"businesses ({len(differ)} differ), Wilcoxon p {p:.2f}"
        )


def agreement(args: argparse.Namespace) -> None:
    """Two judges' verdicts on the same task file: the share of sentence verdicts and of
    self-contradiction calls they agree on, and how far apart their 1-5 marks are."""
    a, b = read_json(args.first), read_json(args.second)
    same = total = contra = both = 0
    gaps: dict[str, list[int]] = defaultdict(list)
    for entity, labelled in a.items():
        for label, v in labelled.items():
            w = b.get(entity, {}).get(label)
            if w is None:
                continue
            both += 1
            pairs = list(zip(v["verdicts"], w["verdicts"], strict=True))
            same += sum(x == y for x, y in pairs)
            total += len(pairs)
            contra += v["self_contradiction"] == w["self_contradiction"]
            for scale in ("readability", "specificity"):
                if scale in v and scale in w:
                    gaps[scale].append(abs(v[scale] - w[scale]))
    result = {
        "summaries": both,
        "sentences": total,
        "verdicts_agree": same / max(1, total),
        "self_contradiction_agree": contra / max(1, both),
        **{f"{k}_mean_gap": sum(g) / len(g) for k, g in gaps.items() if g},
        **{f"{k}_within_1": sum(x <= 1 for x in g) / len(g) for k, g in gaps.items() if g},
    }
    print(json.dumps(result, indent=2))
    if args.out:
        write_json(args.out, result)


def _share(row: dict, verdict: str) -> float:
    return row["verdicts"].count(verdict) / len(row["verdicts"]) if row["verdicts"] else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("out")
    p.add_argument("--sets", default="dev")
    p.add_argument("--systems", nargs="+", required=True, metavar="NAME=PRED.jsonl")
    p.add_argument("--count", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--entities", default=None)
    p.set_defaults(func=prepare)
    p = sub.add_parser("collect")
    p.add_argument("out")
    p.set_defaults(func=collect)
    p = sub.add_parser("paired")
    p.add_argument("a", help="the baseline system, e.g. tone35")
    p.add_argument("b", help="the system compared with it")
    p.add_argument("judged", nargs="+", metavar="JUDGED.jsonl")
    p.set_defaults(func=paired)
    p = sub.add_parser("agreement")
    p.add_argument("first", help="verdicts-N.json of one judge")
    p.add_argument("second", help="the other judge's verdicts on the same task")
    p.add_argument("--out", default=None)
    p.set_defaults(func=agreement)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
