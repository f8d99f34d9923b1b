"""Adapting the shipped model to a domain it was not made for (issue 35): hotels of the Yelp corpus.

    python -m lab.studies.adaptation prepare [--out runs/adapt]
    denoisesum fit runs/adapt/hotels-train.jsonl --from denoisesum-yelp -o runs/adapt/model ...
    python -m lab.studies.adaptation decode default --model denoisesum-yelp [--option KEY=JSON ...]
    python -m lab.studies.adaptation decode adapted --model runs/adapt/model
    python -m lab.studies.adaptation page default adapted [--markdown lab/results/adaptation.md]
    python -m lab.studies.adaptation compare default adapted:FIT_DIR --markdown PAGE --title TITLE

The corpus has no category field, so a business is a hotel by what its reviews talk about: at
least half of them match HOTEL (hotel, front desk, check-in, housekeeping, stayed, the/our room)
and fewer than half match FOOD (food, menu, dish, ordered, waiter, ...), with at least
MIN_REVIEWS reviews. The default model was trained on all of Yelp (its pairs from shards
part-00..part-13), restaurants above all; hotels were in its data, never as a domain of their
own.

prepare writes hotels-train.jsonl (every review of the hotels of shards part-00..part-14: the
corpus `fit` adapts on) and hotels-eval.jsonl (review sets of EVAL_REVIEWS reviews, with their
stars, of the hotels of part-15: neither model trained on them), and domain.json (the counts).
decode summarizes the evaluation sets with a model (its own decoding, the reviews' stars given,
as a user with a rated corpus would; one torch thread) into NAME.jsonl; page scores both runs
with evaluation/heldout.py (the measures `fit` reports, the shipped rating model reading both)
and writes the results page from the runs' files. compare does the same for some runs alone, a
later fit beside the default decoded as it is then, on a page of its own: the results table, the
verdicts, the decoding and the fit's stages.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import random
import re
import shlex
import shutil
import time
from pathlib import Path

SHARDS = Path(os.environ.get("DENOISESUM_DATA", "../shared/data")) / "yelp" / "corpus"
HOTEL = re.compile(r"\b(hotel|front desk|check-?in|our room|the room|housekeeping|stayed)\b")
FOOD = re.compile(r"\b(food|menu|dish|delicious|restaurant|ordered|waiter|waitress|meal)\b")
MIN_REVIEWS = 8
EVAL_REVIEWS = 8
TRAIN_SHARDS = [f"part-{i:02d}" for i in range(15)]
EVAL_SHARD = "part-15"


def hotels(shard: str) -> dict[str, list[dict]]:
    """The reviews of the shard's hotels, by business."""
    by_entity: dict[str, list[dict]] = {}
    with lzma.open(SHARDS / f"{shard}.jsonl.xz", "rt", encoding="utf-8") as handle:
        for line in handle:
            review = json.loads(line)
            by_entity.setdefault(review["entity_id"], []).append(review)
    out = {}
    for entity, reviews in by_entity.items():
        texts = [r["text"].lower() for r in reviews]
        hotel = sum(bool(HOTEL.search(t)) for t in texts)
        food = sum(bool(FOOD.search(t)) for t in texts)
        if len(reviews) >= MIN_REVIEWS and hotel >= len(texts) / 2 > food:
            out[entity] = reviews
    return out


def prepare(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    with open(out / "hotels-train.jsonl", "w", encoding="utf-8") as handle:
        for shard in TRAIN_SHARDS:
            found = hotels(shard)
            counts[shard] = {"hotels": len(found), "reviews": sum(map(len, found.values()))}
            for reviews in found.values():
                handle.writelines(json.dumps(r) + "\n" for r in reviews)
            print(shard, counts[shard], flush=True)
    rng = random.Random(0)
    found = hotels(EVAL_SHARD)
    with open(out / "hotels-eval.jsonl", "w", encoding="utf-8") as handle:
        for entity in sorted(found):
            for draw, reviews in enumerate(_draws(rng, found[entity], args.draws)):
                record = {
                    "entity_id": entity,
                    "reviews": [r["text"] for r in reviews],
                    "ratings": [r["rating"] for r in reviews],
                }
                handle.write(json.dumps(record | ({"draw": draw} if args.draws > 1 else {})))
                handle.write("\n")
    counts[EVAL_SHARD] = {"hotels": len(found), "reviews": sum(map(len, found.values()))}
    (out / "domain.json").write_text(json.dumps(counts, indent=1))
    print(EVAL_SHARD, counts[EVAL_SHARD])


def _draws(rng: random.Random, reviews: list[dict], draws: int) -> list[list[dict]]:
    """A hotel's evaluation sets: one of EVAL_REVIEWS reviews drawn at random (fewer where it
    has fewer), or with draws > 1 up to that many disjoint ones of EVAL_REVIEWS each."""
    if draws == 1:
        return [rng.sample(reviews, min(EVAL_REVIEWS, len(reviews)))]
    shuffled = rng.sample(reviews, len(reviews))
    n = min(draws, len(reviews) // EVAL_REVIEWS)
    return [shuffled[i * EVAL_REVIEWS : (i + 1) * EVAL_REVIEWS] for i in range(n)]


def eval_sets(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "hotels-eval.jsonl").read_text().splitlines()]


def decode(args: argparse.Namespace) -> None:
    import torch

    from denoisesum.summarizer import Summarizer

    torch.set_num_threads(1)
    out, sets = Path(args.out), eval_sets(Path(args.out))
    model = raw_weights(Path(args.model), out) if args.raw else args.model
    summarizer = Summarizer.from_pretrained(model)
    start = time.perf_counter()
    options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.option)}
    results = summarizer.summarize_results(
        [s["reviews"] for s in sets], [s["ratings"] for s in sets], **options
    )
    summaries = [r.summary for r in results]
    seconds = time.perf_counter() - start
    with open(out / f"{args.name}.jsonl", "w", encoding="utf-8") as handle:
        for s, summary in zip(sets, summaries, strict=True):
            handle.write(json.dumps({"entity_id": s["entity_id"], "summary": summary}) + "\n")
    (out / f"{args.name}.json").write_text(
        json.dumps(
            {"model": str(args.model), "options": options, "seconds": seconds, "sets": len(sets)},
            indent=1,
        )
    )
    print(f"{args.name}: {len(sets)} summaries in {seconds:.0f} s")


def raw_weights(fit_dir: Path, out: Path) -> Path:
    """The fit's summarizer as trained, before weight averaging (train.ema_decay): its last
    checkpoint's weights with the exported model's config.json and rating model."""
    checkpoints = fit_dir / "work" / "train" / "checkpoints"
    step = checkpoints / (checkpoints / "LATEST").read_text().strip()
    target = out / f"{fit_dir.name}-raw"
    target.mkdir(exist_ok=True)
    for name, source in (
        ("model.safetensors", step),
        ("vocab.json", step),
        ("config.json", fit_dir),
        ("rating.npz", fit_dir),
    ):
        shutil.copyfile(source / name, target / name)
    return target


def _scores(out: Path, name: str, sets: list[dict], rating, terms: list[str]) -> dict:
    """The pooled measures and, per business, the same measures (for the paired tests)."""
    from denoisesum.data.tokenizer import Tokenizer
    from denoisesum.evaluation.heldout import score

    tokenize = Tokenizer().tokenize
    rows = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]
    summaries = [r["summary"] for r in rows]
    assert [r["entity_id"] for r in rows] == [s["entity_id"] for s in sets]
    per = [
        score([summary], [s], rating, terms, tokenize)
        for summary, s in zip(summaries, sets, strict=True)
    ]
    return {
        "pooled": score(summaries, sets, rating, terms, tokenize),
        "per": per,
        "summaries": summaries,
        "entities": [s["entity_id"] for s in sets],
    }


MEASURES = [
    ("opinion_agrees", "opinion agrees with the reviews", "pct", 1),
    ("misleading", "misleading opinion", "pct", -1),
    ("supported", "supported sentences", "pct", 1),
    ("unsaid_words", "words no review says (per summary)", "num", -1),
    ("terms_covered", "hotel terms covered", "pct", 1),
    ("words", "words per summary", "num", 0),
]
# the measures the issue asks the adapted model to beat the default on; misleading opinion (0% for
# the default on these hotels, so it cannot fall) must only not be worse
ASKED = ("opinion_agrees", "supported", "unsaid_words", "terms_covered")


def _shown(value, kind: str) -> str:
    return "n/a" if value is None else f"{value:.1%}" if kind == "pct" else f"{value:.2f}"


def _fit_facts(model: Path) -> dict:
    """The fit's report and the whole command's wall time (for the fit into runs/adapt/model:
    fit.start / fit.end beside the model, epoch seconds written around it, and fit.sh;
    model-X: fit-X.*), and the machine's load average over the run where it was sampled
    (fit-X.load: one line every 30 s, epoch seconds then the 1-, 5- and 15-minute load
    averages)."""
    stem, out = _stem(model), model.parent
    start, end = (int((out / f"{stem}.{x}").read_text()) for x in ("start", "end"))
    load_file = out / f"{stem}.load"
    loads = (
        [float(line.split()[1]) for line in load_file.read_text().splitlines()]
        if load_file.is_file()
        else []
    )
    sizes = {
        part: sum(f.stat().st_size for f in (model / part).rglob("*") if f.is_file())
        for part in (".", "work/train/checkpoints")
    }
    return {
        "report": json.loads((model / "fit-report.json").read_text()),
        "wall": end - start,
        "script": (out / f"{stem}.sh").read_text(),
        "disk": sizes,
        "load": max(loads) if loads else None,
    }


def scored(args: argparse.Namespace) -> tuple:
    """(sets, runs, tests, facts, terms) of the runs named in args: each run's scores, each
    adapted run's tests against args.base, each fit's facts (its own held-out summaries scored
    as the runs), the hotel terms of the first fit's corpus."""
    from denoisesum.data.encoded import EncodedCorpus
    from denoisesum.evaluation.heldout import domain_terms
    from denoisesum.models.rating import RatingModel
    from denoisesum.summarizer import DEFAULT_MODEL_DIR

    out, fits = Path(args.out), fits_of(args)
    sets = eval_sets(out)
    rating = RatingModel.load(DEFAULT_MODEL_DIR / "rating.npz")
    corpus = EncodedCorpus(Path(next(iter(fits.values()))) / "work" / "encoded")
    base_tokens = json.loads((DEFAULT_MODEL_DIR / "vocab.json").read_text())["tokens"]
    terms = domain_terms(corpus.types, corpus.counts, base_tokens)
    runs = {name: _scores(out, name, sets, rating, terms) for name in (args.base, *fits)}
    facts = {model: _fit_facts(Path(model)) for model in dict.fromkeys(fits.values())}
    for model, fact in facts.items():
        fact["heldout"] = _own_heldout(Path(model), rating, terms)
    tests = {name: _compare(runs[name], runs[args.base]) for name in fits}
    return sets, runs, tests, facts, terms


def page(args: argparse.Namespace) -> None:
    out = Path(args.out)
    sets, runs, tests, facts, terms = scored(args)
    text = _page_text(args, sets, runs, tests, facts, terms)
    Path(args.markdown).write_text(text)
    (out / "scores.json").write_text(
        json.dumps({name: run["pooled"] for name, run in runs.items()}, indent=1)
    )
    print(text)


def compare(args: argparse.Namespace) -> None:
    out, fits = Path(args.out), fits_of(args)
    sets, runs, tests, facts, _ = scored(args)
    lines = [
        f"# {args.title}",
        "",
        "Generated by `python -m lab.studies.adaptation compare` from the runs' files, with the "
        f"hotels, measures and tests of [adaptation.md](adaptation.md): {_held_out(sets)}, "
        "the shipped rating model reading every summary, each difference "
        "the adapted run minus the default with a 95% bootstrap interval and the p of a paired "
        "randomization test over businesses. The runs' files (summaries, `fit`'s report, log "
        "and load) are in [adaptation/](adaptation/).",
        "",
        *_results_table(args, runs, tests),
        "",
        *[_verdict(name, t) for name, t in tests.items()],
        "",
        _conclusion(args, runs, tests),
        "",
        *_opinion_by_side(args, sets, runs),
        "",
        _decoding_note(fits, out),
        "",
    ]
    for model, fact in facts.items():
        used = ", ".join(f"**{n}**" for n, m in fits.items() if m == model)
        lines += _run_lines(f"{used} ({model})", fact)
        lines += ["```", "python -m lab.studies.adaptation prepare --out runs/adapt"]
        lines += [*_timed_fit(model, fact), "```", ""]
    lines += [
        "```",
        *_eval_prepare(args, sets),
        *_decode_commands(args),
        f"python -m lab.studies.adaptation compare {args.base} "
        + " ".join(args.adapted)
        + _out_flag(args)
        + f" --markdown {args.markdown} --title {shlex.quote(args.title)}",
        "```",
        "",
    ]
    Path(args.markdown).write_text("\n".join(lines))
    print("\n".join(lines))


def _opinion_by_side(args, sets: list[dict], runs: dict) -> list[str]:
    """Opinion agreement per side the reviews take (the polarity of their mean stars): where
    a run's agreement is lost."""
    from denoisesum.models.rating import polarity

    sides = [polarity(sum(s["ratings"]) / len(s["ratings"])) for s in sets]
    names = [args.base, *fits_of(args)]
    lines = [
        "Opinion agreement by the side the reviews take (their mean stars: negative below "
        "2.5, mixed 2.5-3.5, positive above 3.5), over the review sets:",
        "",
        f"| the reviews | sets | {' | '.join(names)} |",
        "|---|--:|" + "--:|" * len(names),
    ]
    for side in ("negative", "mixed", "positive"):
        rows = [i for i, x in enumerate(sides) if x == side]
        agree = [
            sum(runs[n]["per"][i]["opinion_agrees"] for i in rows) / len(rows) if rows else 0
            for n in names
        ]
        lines.append(f"| {side} | {len(rows)} | " + " | ".join(f"{a:.0%}" for a in agree) + " |")
    return lines


def _held_out(sets: list[dict]) -> str:
    """The evaluation sets in words: "41 held-out hotels of part-15", and with several sets
    per hotel how many and how their measures are tested."""
    hotels = len({s["entity_id"] for s in sets})
    said = f"{hotels} held-out hotels of part-15"
    if len(sets) == hotels:
        return said
    return (
        f"{said} in {len(sets)} review sets (up to {_draw_count(sets)} disjoint sets of "
        f"{EVAL_REVIEWS} reviews per hotel, as many as its reviews allow; the runs' columns "
        "pool the sets, while each difference and test is over the hotels, each hotel's "
        "measures averaged over its sets so that it counts once)"
    )


def _eval_prepare(args, sets: list[dict]) -> list[str]:
    """The prepare command of evaluation sets kept apart from the fit's (--out other than
    runs/adapt), with the draws they were made with; none for runs/adapt's own."""
    if args.out == "runs/adapt":
        return []
    draws = _draw_count(sets)
    return [
        f"python -m lab.studies.adaptation prepare{_out_flag(args)}"
        + (f" --draws {draws}" if draws > 1 else "")
    ]


def _draw_count(sets: list[dict]) -> int:
    """The most evaluation sets of one hotel (prepare --draws)."""
    return max(s.get("draw", 0) for s in sets) + 1


def fits_of(args) -> dict[str, str]:
    """Each adapted run's name -> its fit's output."""
    return {item.split(":")[0]: item.split(":")[1] for item in args.adapted}


def _own_heldout(model: Path, rating, terms: list[str]) -> dict | None:
    """The summaries the fit's evaluate stage wrote (work/heldout) scored with this page's
    measures and hotel terms."""
    from denoisesum.data.tokenizer import Tokenizer
    from denoisesum.evaluation.heldout import score

    path = model / "work" / "heldout" / "summaries.json"
    if not path.is_file():
        return None
    rows = json.loads(path.read_text())
    return score([r["summary"] for r in rows], rows, rating, terms, Tokenizer().tokenize)


def _compare(new: dict, base: dict) -> dict:
    """Per measure: the paired test of new against base over businesses (a business with
    several sets counts once, with its sets' mean), and whether new is better (p < 0.05, the
    right direction; None for a measure with no better side)."""
    from denoisesum.evaluation.stats import paired_test

    assert new["entities"] == base["entities"]
    out = {}
    for key, _, _, sign in MEASURES:
        pairs: dict[str, list[tuple[float, float]]] = {}
        for x, y, entity in zip(new["per"], base["per"], new["entities"], strict=True):
            if x[key] is not None and y[key] is not None:
                pairs.setdefault(entity, []).append((float(x[key]), float(y[key])))
        both = [tuple(sum(v) / len(v) for v in zip(*p, strict=True)) for p in pairs.values()]
        test = paired_test([x for x, _ in both], [y for _, y in both])
        significant = test.p_value < 0.05
        out[key] = {
            "test": test,
            "better": None if sign == 0 else significant and test.difference * sign > 0,
            "worse": sign != 0 and significant and test.difference * sign < 0,
        }
    return out


def _results_table(args, runs, tests) -> list[str]:
    names = list(tests)
    head = (
        f"| measure | {args.base} | "
        + " | ".join(f"{n} | difference [95% CI], p" for n in names)
        + " |"
    )
    rows = [head, "|---|--:|" + "--:|--:|" * len(names)]
    for key, label, kind, _ in MEASURES:
        cells = [label, _shown(runs[args.base]["pooled"][key], kind)]
        for name in names:
            t = tests[name][key]["test"]
            cells += [
                _shown(runs[name]["pooled"][key], kind),
                f"{t.difference:+.3f} [{t.ci_low:+.3f}, {t.ci_high:+.3f}], p {t.p_value:.3f}",
            ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _run_lines(name: str, fact: dict) -> list[str]:
    report = fact["report"]
    lines = [
        f"{name}: `fit --from denoisesum-yelp`, `--budget {report.get('budget_hours')}` "
        f"hours of training; the whole command took {fact['wall'] / 60:.1f} min of wall "
        f"time {_machine(fact)}. On disk: "
        f"{fact['disk']['.'] / 2**20:,.0f} MiB, of which the one checkpoint kept for "
        f"resuming is {fact['disk']['work/train/checkpoints'] / 2**20:,.0f} MiB.",
        "",
        "| stage | status | time | what it did |",
        "|---|---|--:|---|",
    ]
    notes = [line[2:] for line in fact["script"].splitlines() if line.startswith("# ")]
    if notes:
        lines[1:1] = ["", f"From the run's script: {' '.join(notes)}"]
    lines += [
        f"| {s['stage']} | {s['status']} | {_stage_minutes(s)} | {s['summary']} |"
        for s in report["stages"]
    ]
    quality = report.get("quality") or {}
    if quality.get("scores") and fact["heldout"] is not None:
        from denoisesum.evaluation.heldout import scores_line

        lines += [
            "",
            f"`fit`'s own evaluation, {len(quality['held_out'])} hotels of the "
            "training shards that it left out of its pairs, rescored with this page's "
            f"measures: {scores_line(fact['heldout'])}. `fit` judged the model "
            f"{'usable' if quality.get('usable') else 'not usable yet'}.",
        ]
    return [*lines, ""]


def _stage_minutes(stage: dict) -> str:
    """A stage's time in this command, or where it was skipped, what it took when made."""
    if stage["status"] == "skipped" and stage.get("seconds_when_done") is not None:
        return f"{stage['seconds_when_done'] / 60:.1f} min earlier"
    return f"{stage['seconds'] / 60:.1f} min"


def _setting(script: str, key: str, default: str) -> str:
    found = re.search(rf"{re.escape(key)}=(\S+)", script)
    return found.group(1) if found else default


def _machine(fact: dict) -> str:
    """Where the fit ran: the shared, loaded CPU of the first runs (no load sampled), or the
    idle one (its highest 1-minute load average, sampled every 30 s)."""
    script = fact["script"]
    threads = _setting(script, "OMP_NUM_THREADS", "1")
    if fact["load"] is None and threads != "1":
        return (
            f"on the 2-core CPU with {threads} torch threads and "
            f"`workers={_setting(script, 'workers', '0')}` synthesis processes (its load was "
            "not sampled)"
        )
    if fact["load"] is None:
        return (
            "on the shared 2-core CPU (one torch thread; other sessions' jobs ran beside it, so "
            "each step took several times what it takes on an idle machine)"
        )
    return (
        f"on the 2-core CPU (the 1-minute load average, sampled every 30 s, at most "
        f"{fact['load']:.1f}; the fit alone keeps it near 3), with {threads} "
        f"torch threads (`train.train.threads={_setting(script, 'train.train.threads', '1')}`) "
        f"and `workers={_setting(script, 'workers', '0')}` synthesis processes"
    )


def _page_text(args, sets, runs, tests, facts, terms) -> str:
    domain = json.loads((Path(args.out) / "domain.json").read_text())
    train_hotels = sum(v["hotels"] for k, v in domain.items() if k != EVAL_SHARD)
    train_reviews = sum(v["reviews"] for k, v in domain.items() if k != EVAL_SHARD)
    lines = [
        "# Adapting the shipped model to hotels (`fit --from denoisesum-yelp`)",
        "",
        "Issue 35: adapt the default model to a domain it was not made for, in one command, "
        "within 30 minutes on this project's 2-core CPU, and measure it on that domain's "
        "held-out businesses. Generated by `python -m lab.studies.adaptation page` from the runs' "
        "files; nothing is typed in by hand. A later fit, beside the default with the decoding "
        "of `mixed_band`: [adaptation-band.md](adaptation-band.md).",
        "",
        "**The domain.** The Yelp corpus has no category field. A business counts as a hotel "
        "when at least half of its reviews talk like hotel reviews (hotel, front desk, "
        "check-in, housekeeping, stayed, the room) and fewer than half like restaurant reviews "
        f"(lab/studies/adaptation.py). Training corpus: {train_hotels} hotels with "
        f"{train_reviews:,} reviews from shards part-00..part-14. Evaluation: "
        f"{len(sets)} hotels of part-15, a shard neither model trained on, "
        f"{EVAL_REVIEWS} reviews each with their stars. The default model's pairs came from "
        "all of Yelp, restaurants above all. Hotels were in its data, but it was never made "
        "for them.",
        "",
        "**Results** on the held-out hotels of part-15. The same rating model, the shipped "
        "one, reads every summary. Each difference is the adapted run minus the default, with "
        "a 95% bootstrap interval and the p of a paired randomization test over businesses:",
        "",
        *_results_table(args, runs, tests),
        "",
        *[_verdict(name, t) for name, t in tests.items()],
        "",
        _conclusion(args, runs, tests),
        "",
        _decoding_note(fits_of(args), Path(args.out)),
        "",
        _timing(facts),
        "",
        *variants(Path(next(iter(fits_of(args).values()))), fits_of(args), facts),
        "",
        "## The runs",
        "",
        "Their files (the summaries of each model, the scores, `fit`'s reports and logs) are in "
        "[adaptation/](adaptation/).",
        "",
    ]
    for model, fact in facts.items():
        used = ", ".join(f"**{n}**" for n, m in fits_of(args).items() if m == model)
        lines += _run_lines(f"{used} ({model})", fact)
    lines += [
        f"The hotel terms are the training corpus's frequent content words that rank at "
        f"least twice as high there as in the default model's vocabulary. The first 40 of "
        f"{len(terms)}: {', '.join(terms[:40])}.",
        "",
        "## Examples (the first three evaluation hotels)",
        "",
    ]
    for i in range(min(3, len(sets))):
        s = sets[i]
        stars = [r for r in s["ratings"] if r is not None]
        lines += [
            f"**{s['entity_id']}** ({len(s['reviews'])} reviews, mean "
            f"{sum(stars) / max(1, len(stars)):.2f} stars)",
            "",
        ]
        lines += [f"- {name}: {run['summaries'][i]}" for name, run in runs.items()]
        lines.append("")
    lines += [
        "## Reproduce",
        "",
        "From the repository root, with the Yelp corpus in "
        "`../shared/data/yelp/corpus` (or where `DENOISESUM_DATA` points). The first fit "
        "ran when `--from` kept the shipped model's weight averaging: add `--set "
        "train.train.ema_decay=0.999` to it to make that model again. The second reused "
        "the first one's tokenize, synthesize and topics stages, copied before it ran"
        + ("; the later ones made every stage anew:" if len(facts) > 2 else ":"),
        "",
        "```",
        "mkdir -p runs/adapt/model-noema/work && cp -a runs/adapt/model/work/"
        "{encoded,pairs,topics,tokenize.stage.json,synthesize.stage.json,"
        "topics.stage.json} runs/adapt/model-noema/work/",
        "```",
        "",
        "```",
        "python -m lab.studies.adaptation prepare --out runs/adapt",
    ]
    for model, fact in facts.items():
        lines += _timed_fit(model, fact)
    lines += [
        *_decode_commands(args),
        f"python -m lab.studies.adaptation page {args.base} " + " ".join(args.adapted),
        "```",
        "",
    ]
    return "\n".join(lines)


def _stem(model: str | Path) -> str:
    """The name of a fit's files in runs/adapt: fit for runs/adapt/model, fit-X for model-X."""
    return "fit" + Path(model).name.removeprefix("model")


def _timed_fit(model: str, fact: dict) -> list[str]:
    """The fit's command between the two lines that time it (_fit_facts reads them)."""
    stem = Path(model).parent / _stem(model)
    return [
        f"date -u +%s > {stem}.start",
        *_fit_command(fact["script"]),
        f"date -u +%s > {stem}.end",
    ]


def _decode_commands(args) -> list[str]:
    """The decode command of the default run and of each adapted run (--raw where its
    NAME:FIT_DIR ends in :raw), with the options it was decoded with."""
    out = Path(args.out)
    return [
        f"python -m lab.studies.adaptation decode {args.base} --model denoisesum-yelp"
        + _option_flags(out, args.base)
        + _out_flag(args),
        *[
            f"python -m lab.studies.adaptation decode {a.split(':')[0]} --model "
            f"{a.split(':')[1]}"
            + (" --raw" if a.endswith(":raw") else "")
            + _option_flags(out, a.split(":")[0])
            + _out_flag(args)
            for a in args.adapted
        ],
    ]


def _out_flag(args) -> str:
    """--out as a command needs it: nothing for the default folder."""
    return "" if args.out == "runs/adapt" else f" --out {args.out}"


def _fit_command(script: str) -> list[str]:
    """The fit.sh script as one would type it from the repository root."""
    command = f"OMP_NUM_THREADS={_setting(script, 'OMP_NUM_THREADS', '1')} denoisesum"
    return [
        line.replace("exec /work/main/.venv/bin/python -m denoisesum.cli", command).replace(
            "exec .venv/bin/denoisesum", command
        )
        for line in script.splitlines()
        if not line.startswith(("#", "cd ", "export "))
    ]


def weight_shift(fit_dir: Path) -> tuple[float, float]:
    """How far the fit's exported weights and its last checkpoint's (before averaging) are from
    the shipped model's: the norm of the difference over the norm of the shipped weights."""
    from safetensors.torch import load_file

    from denoisesum.summarizer import DEFAULT_MODEL_DIR

    base = load_file(str(DEFAULT_MODEL_DIR / "model.safetensors"))
    checkpoints = fit_dir / "work" / "train" / "checkpoints"
    step = checkpoints / (checkpoints / "LATEST").read_text().strip()
    norm = sum(float((w.float() ** 2).sum()) for w in base.values()) ** 0.5
    out = []
    for path in (fit_dir / "model.safetensors", step / "model.safetensors"):
        other = load_file(str(path))
        out.append(
            sum(float(((other[k].float() - w.float()) ** 2).sum()) for k, w in base.items()) ** 0.5
            / norm
        )
    return out[0], out[1]


FIRST_RUNS = ("adapted", "adapted-raw", "adapted-noema")


def variants(first_fit: Path, fits: dict[str, str], facts: dict) -> list[str]:
    exported, raw = weight_shift(first_fit)
    report = json.loads((first_fit / "fit-report.json").read_text())
    steps = next(s["summary"].split(" steps")[0] for s in report["stages"] if s["stage"] == "train")
    return [
        "What the runs are:",
        "",
        "- **adapted**: the first `fit --from` run. `--from` then kept the shipped model's weight "
        "averaging (`train.ema_decay` 0.999, an average over about 1,000 steps). After "
        f"{steps} steps the exported average was {exported:.1%} away from the shipped weights "
        f"(the norm of the difference over theirs), while the weights it averaged were {raw:.1%} "
        "away.",
        "- **adapted-raw**: the same run's weights at its last step, before averaging "
        "(`decode --raw`). Averaging does not change the training trajectory, so this is what that "
        "run gives without it.",
        "- **adapted-noema**: `fit --from` without weight averaging (as now), on the first "
        "run's synthetic pairs and topic model (stages copied, see Reproduce).",
        *[_later_run(name, facts[model]) for name, model in fits.items() if name not in FIRST_RUNS],
    ]


def _run_options(out: Path, name: str) -> dict:
    """The decoding options a run was decoded with (decode --option; none before they were
    recorded)."""
    return json.loads((out / f"{name}.json").read_text()).get("options", {})


def _option_flags(out: Path, name: str) -> str:
    options = _run_options(out, name).items()
    return "".join(f" --option {shlex.quote(f'{k}={json.dumps(v)}')}" for k, v in options)


def _decoding_note(fits: dict[str, str], out: Path) -> str:
    """Which runs decode with settings other than the shipped model's (each fit copies the
    shipped decoding of its day, the shipped one may have changed since, and a run may be
    decoded with options); a setting a model's config.json lacks has its default."""
    from dataclasses import asdict

    from denoisesum.inference.beam import SearchConfig
    from denoisesum.inference.policy import SummaryPolicy, migrate_summarize
    from denoisesum.summarizer import DEFAULT_MODEL_DIR

    defaults = {**asdict(SearchConfig()), **asdict(SummaryPolicy())}

    def decoding(model: Path, name: str | None = None) -> dict:
        saved = json.loads((model / "config.json").read_text())["summarize"]
        section = migrate_summarize(saved)  # a config.json of before issue 60: today's names
        config = {**section.get("search", {}), **section.get("policy", {})}
        return {**defaults, **config, **(_run_options(out, name) if name else {})}

    def why(key: str, name: str, model: Path) -> str:
        if key in _run_options(out, name):
            return "decoded with that option"
        record = model / "work" / "decode.stage.json"
        chosen = json.loads(record.read_text())["result"] if record.is_file() else {}
        if key == "mixed_band" and "bands" in chosen:
            return "chosen by fit on its held-out businesses"
        return "the shipped decoding of its fit's day"

    shipped = decoding(DEFAULT_MODEL_DIR)
    notes, keys = [], set()
    for name, model in fits.items():  # a -raw run decodes with its fit's exported config.json
        own = decoding(Path(model), name)
        diff = [k for k in sorted(own) if k in shipped and own[k] != shipped[k]]
        keys.update(diff)
        if diff:
            said = ", ".join(f"{k} {own[k]}: {why(k, name, Path(model))}" for k in diff)
            notes.append(f"**{name}** ({said})")
    if not notes:
        return "**Decoding**: every run decodes with the shipped model's decoding settings."
    return (
        "**Decoding**: the default decodes with the shipped model's settings as they are now "
        f"({', '.join(f'{k} {shipped[k]}' for k in sorted(keys))}"
        f"); these runs decode otherwise: {'; '.join(notes)}; the others decode as the default."
    )


def _later_run(name: str, fact: dict) -> str:
    """A later fit, described from its report and script."""
    stages = {s["stage"]: s for s in fact["report"]["stages"]}
    fresh = all(s["status"] != "skipped" for s in stages.values())
    balanced = "synthesize.balance_ratings=true" in fact["script"]
    seeds = re.findall(r"--set (\S+\.seed=\d+)", fact["script"])
    return (
        f"- **{name}**: `fit --from` as it is now"
        + (
            " with rating-balanced pairs (`--set synthesize.balance_ratings=true`)"
            if balanced
            else ""
        )
        + (f" with other seeds (`{' '.join(seeds)}`)" if seeds else "")
        + f", {'every stage made from scratch' if fresh else 'reusing earlier stages'}, "
        f"{_machine(fact)}; `--budget {fact['report'].get('budget_hours')}`: "
        f"{stages['synthesize']['summary'].split(';')[0]}, then "
        f"{stages['train']['summary'].split(', kept')[0]} in "
        f"{stages['train']['seconds'] / 60:.1f} min."
    )


def _timing(facts: dict) -> str:
    """Each fit's wall time from start to end. For one that reused the first fit's tokenize,
    synthesize and topics stages, the minutes those took there are added: about what it would
    have taken made from scratch on the same machine."""
    (_, first), *_ = facts.items()
    earlier = sum(
        s["seconds"]
        for s in first["report"]["stages"]
        if s["stage"] in ("tokenize", "synthesize", "topics")
    )
    parts = []
    for model, fact in facts.items():
        threads = _setting(fact["script"], "OMP_NUM_THREADS", "1")
        where = (
            "the idle 2-core CPU"
            if fact["load"] is not None
            else "the loaded 2-core CPU"
            if threads == "1"
            else "the 2-core CPU (its load not sampled)"
        )
        reused = sum(s["seconds"] for s in fact["report"]["stages"] if s["status"] == "skipped")
        text = f"{model} took {fact['wall'] / 60:.1f} min on {where}"
        if any(s["status"] == "skipped" for s in fact["report"]["stages"]):
            text += (
                f", reusing the first one's tokenize, synthesize and topics stages, which had "
                f"taken {earlier / 60:.1f} min there: made from scratch about "
                f"{(fact['wall'] + earlier - reused) / 60:.0f} min"
            )
        else:
            text += ", every stage made from scratch"
        parts.append(text)
    return (
        "**Time** (the whole `fit` command from start to end; the issue's limit is 30 min): "
        + "; ".join(parts)
        + "."
    )


def _conclusion(args, runs, tests) -> str:
    """What the last run (the current `fit --from`) gives, measure by measure."""
    name = list(tests)[-1]
    parts = []
    for key, label, kind, sign in MEASURES:
        if sign == 0:
            continue
        t = tests[name][key]["test"]
        parts.append(
            f"{label} {_shown(runs[args.base]['pooled'][key], kind)} -> "
            f"{_shown(runs[name]['pooled'][key], kind)} (p {t.p_value:.3f})"
        )
    met = [k for k in _beaten(tests[name]) if k in ASKED]
    worse = [k for k, _, _, sign in MEASURES if sign and tests[name][k]["worse"]]
    again = [  # the same fit with other seeds: how much of the result is the draw
        f"**{other}** beats the default on {len(_beaten(tests[other]))}"
        for other in tests
        if other.startswith(name + "-seed")
    ]
    return (
        f"**In short**: `fit --from` as it is now (**{name}**) against the default on "
        f"{len(set(runs[name]['entities']))} held-out hotels: {'; '.join(parts)}. It beats the "
        f"default at p < 0.05 on {len(met)} of the issue's {len(ASKED)} measures (opinion "
        f"agreement, supported sentences, words no review says, the domain's terms), is worse "
        f"on {len(worse)} of all {sum(1 for *_, sign in MEASURES if sign)}, and the others are "
        "within chance on this many hotels"
        + (f" (the same fit with other seeds: {'; '.join(again)})" if again else "")
        + ". The issue asked for a gain on each of those four and no loss on any, and that is "
        + ("met." if len(met) == len(ASKED) and not worse else "not met.")
    )


def _beaten(tests: dict) -> list[str]:
    """The measures a run beats the default on (p < 0.05)."""
    return [k for k, _, _, sign in MEASURES if sign and tests[k]["better"]]


def _verdict(name: str, tests: dict) -> str:
    labels = {key: label for key, label, _, _ in MEASURES}
    wins = [labels[k] for k, t in tests.items() if t["better"]]
    losses = [labels[k] for k, t in tests.items() if t["worse"]]
    if wins and not losses:
        head = f"**{name}** is better than the default on {', '.join(wins)}"
    elif not wins and not losses:
        head = f"**{name}** does not beat the default on any measure"
    elif not wins:
        head = f"**{name}** is worse than the default on {', '.join(losses)}"
    else:
        head = f"**{name}** is mixed: better on {', '.join(wins)}; worse on {', '.join(losses)}"
    return head + " (p < 0.05); its other differences are within chance."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default="runs/adapt")
    p.add_argument(
        "--draws",
        type=int,
        default=1,
        help="evaluation sets per hotel: up to this many disjoint sets of 8 reviews (default 1)",
    )
    p.set_defaults(run=prepare)
    p = sub.add_parser("decode")
    p.add_argument("name")
    p.add_argument("--model", required=True)
    p.add_argument(
        "--raw",
        action="store_true",
        help="--model is a fit's output: decode its weights before averaging",
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a decoding option for this run (Summarizer.summarize's options), e.g. beam=3",
    )
    p.add_argument("--out", default="runs/adapt")
    p.set_defaults(run=decode)
    p = sub.add_parser("page")
    p.add_argument("base")
    p.add_argument(
        "adapted",
        nargs="+",
        metavar="NAME:FIT_DIR",
        help="each adapted run: its name (as decoded), its fit's output, and "
        "':raw' when it was decoded with --raw",
    )
    p.add_argument("--out", default="runs/adapt")
    p.add_argument("--markdown", default="lab/results/adaptation.md")
    p.set_defaults(run=page)
    p = sub.add_parser("compare")
    p.add_argument("base")
    p.add_argument("adapted", nargs="+", metavar="NAME:FIT_DIR")
    p.add_argument("--out", default="runs/adapt")
    p.add_argument("--markdown", required=True)
    p.add_argument("--title", required=True)
    p.set_defaults(run=compare)
    args = parser.parse_args()
    start = time.perf_counter()
    args.run(args)
    print(f"{args.command}: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
