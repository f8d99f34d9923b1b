"""Can the shipped model's unsupported sentences be repaired after decoding? (issue 31, probe)

    python -m lab.studies.support_repair report --run runs/faith/MS \
        --markdown lab/results/support-repair.md --intro lab/results/support-repair-notes.md

Issue 31 asks for at least 80% of a summary's sentences fully supported by the reviews and at
most 5% unsupported (judged on dev; the shipped decoding: 65-74% and 5-8%), while MeanSum test
ROUGE stays at R1 >= 33.0, R2 >= 7.4. This probe measures two repairs that leave the model as
it is, each with a sentence-support predictor learned from the project's judged sentences
(a fourth, choosing among the beam's finished summaries by the predictor, read them by patching
the summarizer's private methods; it was removed with issue 60's restructuring and is in git
history, as are its numbers in lab/results/support-repair.md):

1. **The predictor.** A logistic regression from features of a sentence and its reviews (the
   evidence check's support score, the content words in no review, the shares of its bigrams and
   trigrams found in a review, its position, absolute and relative, and its length) to the
   judges' verdict "full". Trained on every judged machine sentence of the non-dev studies
   (part-15 and the tuning set of docs/results/judged/), tested on dev's: the ranking quality
   (AUC) against the support score alone, and what the shipped summaries' judged dev sentences
   would be if those it scores below a threshold were gone.
2. **Prune**: drop the sentences predicted below the threshold (the best one stays).
3. **Replace**: put in their place the most central review sentence (LexRank over the reviews'
   sentences of 5-25 words with no first person) that adds words the summary lacks.

Each is scored by MeanSum dev and test ROUGE (pooled, the leaderboard's) on the run's summaries.
Nothing is shipped from here: the package is unchanged.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from denoisesum.baselines.lexrank import lexrank_scores, tfidf_cosine
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.evaluation.pooled import PooledRouge
from denoisesum.evaluation.style import FIRST_PERSON_SINGULAR
from denoisesum.inference.support import explain, split_sentences
from denoisesum.io import iter_jsonl
from denoisesum.text import SIDE_OPENING, content_words, idf_table
from lab.studies._harness import publish
from lab.studies.faithfulness import SETS

JUDGED = Path("docs/results/judged")
FEATURES = ("support", "missing", "bigrams", "trigrams", "position", "relative", "tokens")
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5)
_TOK = Tokenizer()


def _grams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def _words(text: str) -> list[str]:
    return [t.lower() for t in _TOK.tokenize(text)]


def sentence_features(reviews: Sequence[str], summary: str) -> tuple[list[str], np.ndarray]:
    """The sentences of `summary` and their FEATURES rows [sentences, 7]."""
    seen = [set().union(*(_grams(_words(r), n) for r in reviews)) for n in (2, 3)]
    sentences = explain(reviews, summary, _TOK).sentences
    rows = []
    for i, s in enumerate(sentences):
        words = _words(s.text)
        shares = [
            len(_grams(words, n) & seen[n - 2]) / max(1, len(_grams(words, n))) for n in (2, 3)
        ]
        rows.append([s.score, len(s.missing), *shares, i, i / len(sentences), len(words)])
    return [s.text for s in sentences], np.array(rows, dtype=float).reshape(-1, len(FEATURES))


def predicted(
    model: LogisticRegression, reviews: Sequence[str], summary: str
) -> tuple[list[str], np.ndarray]:
    """The sentences of `summary` and the predictor's probability that each is fully supported."""
    texts, rows = sentence_features(reviews, summary)
    return texts, model.predict_proba(rows)[:, 1]


def review_sets() -> dict[str, list[str]]:
    """Every judged study's reviews by entity (the opinion sets and MeanSum dev/test)."""
    found: dict[str, list[str]] = {}
    for name in ("dev", "test", "part15", "tune", "part14"):
        if SETS[name].exists():
            for _, record in iter_jsonl(SETS[name]):
                found.setdefault(record["entity_id"], record["reviews"])
    return found


def judged_sentences(reviews: dict[str, list[str]]) -> list[dict]:
    """Each judged machine sentence once per study (a sentence two studies' judges saw counts in
    each): its study, system, features and verdict."""
    out = []
    for path in sorted(JUDGED.glob("*.jsonl")):
        if path.name.endswith(".entities.jsonl"):
            continue
        seen = set()
        for _, r in iter_jsonl(path):
            if r["system"].startswith("human") or r["entity_id"] not in reviews:
                continue
            texts, rows = sentence_features(reviews[r["entity_id"]], " ".join(r["sentences"]))
            if len(texts) != len(r["verdicts"]):  # judged with another sentence split
                continue
            for text, row, verdict in zip(texts, rows, r["verdicts"], strict=True):
                if (r["entity_id"], text) not in seen:
                    seen.add((r["entity_id"], text))
                    out.append({"study": path.name, "system": r["system"], "x": row, "v": verdict})
    return out


def lexrank_sentences(reviews: Sequence[str]) -> list[tuple[str, set[str]]]:
    """The reviews' sentences fit for a summary (5-25 words, no first person, a statement),
    most central first, with their content words."""
    pool = []
    for review in reviews:
        for start, end in split_sentences(review):
            text = review[start:end].strip()
            words = _words(text)
            if (
                5 <= len(words) <= 25
                and not FIRST_PERSON_SINGULAR & set(words)
                and text[-1] in ".!"
            ):
                pool.append((text, content_words(words)))
    if not pool:
        return []
    table, unseen = idf_table([set(w) for _, w in pool])
    similarity = tfidf_cosine(
        [w for _, w in pool], {k: v + 1 for k, v in table.items()}, unseen + 1
    )
    order = np.argsort(-lexrank_scores(similarity), kind="stable")
    return [(pool[i][0], set(pool[i][1])) for i in order]


def repaired(sentences: list[str], p: np.ndarray, q: float, reviews: Sequence[str] | None) -> str:
    """The summary without the sentences predicted below q (reviews: each replaced by the most
    central review sentence that brings at least half new words); openings of sides stay."""
    pool = lexrank_sentences(reviews) if reviews is not None else []
    kept: list[str] = []
    for text, score in zip(sentences, p, strict=True):
        if score >= q or SIDE_OPENING.search(text):
            kept.append(text)
            continue
        have = {w for k in kept for w in content_words(_words(k))}
        pick = next(
            (c for c in pool if c[0] not in kept and len(c[1] - have) * 2 >= len(c[1])), None
        )
        if pick:
            kept.append(pick[0])
    return " ".join(kept) or sentences[int(np.argmax(p))]


def rouge(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> tuple[float, float, float, float]:
    scorer = PooledRouge()
    scores = [scorer.score(h, r) for h, r in zip(hyps, refs, strict=True)]
    mean = [100 * float(np.mean([s[k] for s in scores])) for k in ("rouge1", "rouge2", "rougeL")]
    return (*mean, float(np.mean([len(h.split()) for h in hyps])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report")
    r.add_argument("--run", type=Path, default=Path("runs/faith/MS"))
    r.add_argument("--markdown", type=Path)
    r.add_argument("--intro", type=Path, help="text put above the generated tables")
    r.set_defaults(func=report)
    args = parser.parse_args()
    args.func(args)


def report(args: argparse.Namespace) -> None:
    reviews = review_sets()
    rows = judged_sentences(reviews)
    dev = np.array([r["study"].startswith("dev") for r in rows])
    x = np.array([r["x"] for r in rows])
    full = np.array([r["v"] == "full" for r in rows])
    none = np.array([r["v"] == "none" for r in rows])
    model = LogisticRegression(max_iter=2000).fit(x[~dev], full[~dev])
    p = model.predict_proba(x)[:, 1]
    lines = [
        f"Judged machine sentences: {int((~dev).sum())} for training (part-15, tuning set), "
        f"{int(dev.sum())} of dev for testing.",
        "",
        f"AUC for 'full' on dev: the predictor {roc_auc_score(full[dev], p[dev]):.3f}, the "
        f"evidence check's support score alone {roc_auc_score(full[dev], x[dev, 0]):.3f}.",
        "",
        "Coefficients, on the raw features: "
        + ", ".join(f"{n} {c:+.3f}" for n, c in zip(FEATURES, model.coef_[0], strict=True))
        + f", intercept {model.intercept_[0]:+.3f}.",
        "",
    ]
    shipped = np.array(
        [r["study"] == "dev-rest.judged.jsonl" and r["system"] == "shipped" for r in rows]
    )
    lines += [
        "The judged dev sentences of the shipped decoding before two-sided summaries (dev-rest: "
        f"49 businesses, {int(shipped.sum())} sentences) if those predicted below the threshold "
        "were gone:",
        "",
        "| threshold | sentences kept | full | none |",
        "|---|--:|--:|--:|",
        f"| (all) | {int(shipped.sum())} | {full[shipped].mean():.1%} "
        f"| {none[shipped].mean():.1%} |",
    ]
    for q in THRESHOLDS:
        k = shipped & (p >= q)
        lines.append(
            f"| {q} | {k.sum() / shipped.sum():.0%} | {full[k].mean():.1%} | {none[k].mean():.1%} |"
        )
    lines += ["", "ROUGE (pooled) of the run's summaries, repaired:", ""]
    lines += [
        "| set | repair | threshold | R1 | R2 | RL | words |",
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    for name in ("dev", "test"):
        sets = {r["entity_id"]: r for _, r in iter_jsonl(SETS[name])}
        preds = [r for _, r in iter_jsonl(args.run / f"{name}.jsonl")]
        refs = [sets[r["entity_id"]]["summaries"] for r in preds]
        scored = []
        for r in preds:
            reviews = sets[r["entity_id"]]["reviews"]
            scored.append((*predicted(model, reviews, r["summary"]), reviews))
        r1, r2, rl, words = rouge([r["summary"] for r in preds], refs)
        lines.append(f"| {name} | none | | {r1:.2f} | {r2:.2f} | {rl:.2f} | {words:.1f} |")
        for how in ("prune", "replace"):
            for q in THRESHOLDS[:3]:
                hyps = [
                    repaired(t, pp, q, rv if how == "replace" else None) for t, pp, rv in scored
                ]
                r1, r2, rl, words = rouge(hyps, refs)
                lines.append(
                    f"| {name} | {how} | {q} | {r1:.2f} | {r2:.2f} | {rl:.2f} | {words:.1f} |"
                )
    text = "\n".join(lines) + "\n"
    if args.intro:
        text = args.intro.read_text() + "\n## Generated by the probe\n\n" + text
    publish(text, args.markdown)


if __name__ == "__main__":
    main()
