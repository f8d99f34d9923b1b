"""Entities with many reviews: which 8 the model should read, and what reading them costs.

The shipped model was trained on sets of about 8 reviews; SummarizerConfig.select and
read_reviews choose which of an entity's reviews it reads (inference/selection.py). This compares,
on Yelp businesses with exactly 100 reviews (the corpus keeps at most 100 per business), the
summaries from the 8 most central reviews ("central", the default), the first 8, 8 at random,
and optionally all 100, by how well each summary covers the whole set:

- coverage@k: the share of the entity's k most frequent content words (document frequency over
  its 100 reviews; alphabetic tokens not in inference.support.STOPWORDS) found in the summary;
  "input" is the same share for the 8 reviews read together, what the model could have used.
- sentiment r: Pearson's r, across entities, between the entity's mean star rating (over its
  100 reviews) and the summary's lexicon score. The lexicon is learned from the ratings of the
  same shard's other businesses (at least 50 reviews each word): a word's score is the mean
  rating of the reviews containing it, a text's score the mean over its content words found in
  the lexicon. A summary that says what most reviews say should track the entity's rating;
  no hand-made opinion lexicon (and no download) is needed, and its words are Yelp's.
  "agree" is the share of entities on the same side of the median for both.

A second table, on more businesses (--selection-entities, no decoding, so cheap), shows what
each choice hands the model: the input's coverage@k and lexicon sentiment r, and how far the
stars of the reviews read are from the business's mean rating.

Timing: with the default settings, a 200-review entity (two 100-review businesses together)
against an 8-review one (the first 8 reviews of the first), timed alternately in one process
with one thread (OMP_NUM_THREADS=1, torch.set_num_threads(1)), the median of --repeats runs; also
the previous default (the first 50 reviews: max_reviews 50 without selection) and reading all 200
for comparison.

    OMP_NUM_THREADS=1 python -m benchmarks.many_reviews --entities 30 --all --repeats 3 \
        --markdown docs/results/many-reviews.md
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import lzma
import math
import shlex
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import cpu_name
from denoisesum.io import atomic_write
from denoisesum.summarizer import Summarizer
from denoisesum.text import is_content_word

CORPUS = Path("../shared/data/yelp/corpus")
PER_ENTITY = 100
LEXICON_MIN_DF = 50


def read_shards(paths: list[Path]) -> tuple[dict[str, list[str]], dict[str, list[float]]]:
    """entity -> review texts, entity -> ratings, in file order."""
    texts: dict[str, list[str]] = defaultdict(list)
    ratings: dict[str, list[float]] = defaultdict(list)
    for path in paths:
        with lzma.open(path, "rb") as handle:
            for line in handle:
                record = json.loads(line)
                texts[record["entity_id"]].append(record["text"])
                ratings[record["entity_id"]].append(float(record["rating"]))
    return texts, ratings


def content_words(tokens: list[str]) -> list[str]:
    return [t for t in tokens if is_content_word(t)]


def lexicon(tokenized: list[list[str]], ratings: list[float]) -> dict[str, float]:
    """word -> mean rating of the reviews containing it (words in LEXICON_MIN_DF reviews+)."""
    total: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for tokens, rating in zip(tokenized, ratings, strict=True):
        for word in set(content_words(tokens)):
            total[word] += rating
            count[word] += 1
    return {w: total[w] / n for w, n in count.items() if n >= LEXICON_MIN_DF}


def sentiment(tokens: list[str], scores: dict[str, float]) -> float:
    found = [scores[w] for w in content_words(tokens) if w in scores]
    return sum(found) / len(found) if found else math.nan


def top_words(tokenized: list[list[str]], k: int) -> list[str]:
    df = Counter(w for tokens in tokenized for w in set(content_words(tokens)))
    return [w for w, _ in sorted(df.items(), key=lambda item: (-item[1], item[0]))[:k]]


def pearson(x: list[float], y: list[float]) -> float:
    keep = [(a, b) for a, b in zip(x, y, strict=True) if not math.isnan(a)]
    a, b = np.array(keep).T
    return float(np.corrcoef(a, b)[0, 1])


def median_agreement(x: list[float], y: list[float]) -> float:
    mx, my = statistics.median(x), statistics.median(y)
    return sum((a > mx) == (b > my) for a, b in zip(x, y, strict=True)) / len(x)


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default=None,
        help="Model directory or name (default: the installed default model).",
    )
    parser.add_argument("--shards", nargs="+", type=Path, default=[CORPUS / "part-00.jsonl.xz"])
    parser.add_argument("--entities", type=int, default=30)
    parser.add_argument(
        "--selection-entities",
        type=int,
        default=160,
        help="Businesses for the input-only table (no decoding: cheap).",
    )
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument(
        "--all",
        action="store_true",
        help="Also summarize from all 100 reviews (about 4x the time).",
    )
    parser.add_argument("--repeats", type=int, default=5, help="Timing runs of each input.")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    command = "OMP_NUM_THREADS=1 python -m benchmarks.many_reviews " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )

    summarizer = Summarizer.from_pretrained(args.model)
    defaults = summarizer.config
    tokenize = summarizer.vocab.tokenizer.tokenize
    texts, ratings = read_shards(args.shards)
    pool = [e for e, reviews in texts.items() if len(reviews) == PER_ENTITY][
        : max(args.entities, args.selection_entities)
    ]
    chosen = pool[: args.entities]
    if len(chosen) < 2:
        raise SystemExit(f"fewer than 2 businesses with {PER_ENTITY} reviews in {args.shards}")
    others = [e for e in texts if e not in set(pool)]
    lexicon_texts = [tokenize(t) for e in others for t in texts[e]]
    scores = lexicon(lexicon_texts, [r for e in others for r in ratings[e]])
    tokenized = {e: [tokenize(t) for t in texts[e]] for e in pool}
    top = {e: top_words(tokenized[e], args.top_k) for e in pool}
    print(
        f"{len(pool)} entities of {PER_ENTITY} reviews; lexicon of {len(scores)} words from "
        f"{len(lexicon_texts)} reviews of {len(others)} other businesses",
        file=sys.stderr,
    )

    def inputs(entities: list[str]) -> dict[str, float]:
        """What the selection (summarizer.config) hands the model, over `entities`."""
        reads = {e: summarizer.reviews_read(texts[e]) for e in entities}
        cut = summarizer.config.max_review_tokens
        read_words = {e: [w for i in reads[e] for w in tokenized[e][i][:cut]] for e in entities}
        gaps = [
            statistics.mean(ratings[e][i] for i in reads[e]) - statistics.mean(ratings[e])
            for e in entities
        ]
        return {
            "input": statistics.mean(
                sum(w in set(read_words[e]) for w in top[e]) / len(top[e]) for e in entities
            ),
            "input_r": pearson(
                [sentiment(read_words[e], scores) for e in entities],
                [statistics.mean(ratings[e]) for e in entities],
            ),
            "gap": statistics.mean(gaps),
            "abs_gap": statistics.mean(abs(g) for g in gaps),
            "review_words": statistics.mean(
                len(tokenized[e][i]) for e in entities for i in reads[e]
            ),
        }

    modes = [
        ("central 8", replace(defaults, select="central")),
        ("first 8", replace(defaults, select="first")),
        ("random 8", replace(defaults, select="random")),
    ]
    if args.all:
        modes.append((f"all {PER_ENTITY}", replace(defaults, read_reviews=PER_ENTITY)))
    rows, selection_rows = [], []
    mean_rating = [statistics.mean(ratings[e]) for e in chosen]
    for name, config in modes:
        summarizer.config = config
        selection_rows.append({"mode": name} | inputs(pool))
        start = time.perf_counter()
        summaries = [
            r.tokens
            for r in summarizer.summarize_results(
                [texts[e] for e in chosen], batch_size=args.batch_size
            )
        ]
        seconds = time.perf_counter() - start
        summary_sentiment = [sentiment(s, scores) for s in summaries]
        rows.append(
            {
                "mode": name,
                "coverage": statistics.mean(
                    sum(w in set(s) for w in top[e]) / len(top[e])
                    for e, s in zip(chosen, summaries, strict=True)
                ),
                "r": pearson(summary_sentiment, mean_rating),
                "agree": median_agreement(
                    [x if not math.isnan(x) else 0.0 for x in summary_sentiment], mean_rating
                ),
                "summary_words": statistics.mean(len(s) for s in summaries),
                "seconds": seconds / len(chosen),
            }
            | inputs(chosen)
        )
        print(rows[-1], selection_rows[-1], file=sys.stderr)

    # timing: the default settings, 8 against 200 reviews, alternately
    summarizer.config = defaults
    small = texts[chosen[0]][:8]
    large = texts[chosen[0]] + texts[chosen[1]]
    old = replace(defaults, max_reviews=50, select="first", read_reviews=50)
    whole = replace(defaults, read_reviews=len(large))
    times: dict[str, list[float]] = defaultdict(list)
    summarizer.summarize(small)  # warm up
    for _ in range(args.repeats):
        summarizer.config = defaults
        times["8"].append(timed(lambda: summarizer.summarize(small)))
        times["200"].append(timed(lambda: summarizer.summarize(large)))
        times["select"].append(timed(lambda: summarizer.reviews_read(large)))
        summarizer.config = old
        times["old"].append(timed(lambda: summarizer.summarize(large)))
        summarizer.config = whole
        times["all"].append(timed(lambda: summarizer.summarize(large)))
    med = {k: statistics.median(v) for k, v in times.items()}

    k = args.top_k
    lines = [
        f"# Many reviews per entity: which {defaults.read_reviews} the model reads",
        "",
        f"Yelp businesses with exactly {PER_ENTITY} reviews (the first of "
        f"{', '.join(p.name for p in args.shards)}), model "
        f"`{args.model or summarizer.path.name}` with its settings; only the choice of the "
        f"{defaults.read_reviews} reviews read changes (`SummarizerConfig.select`, "
        "`read_reviews`).",
        "",
        f"    {command}",
        "",
        f"## The summaries ({len(chosen)} businesses)",
        "",
        f"| reviews read | coverage@{k} | sentiment r | sentiment agree | "
        f"coverage@{k} of the input | summary words | s per entity |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    lines += [
        f"| {r['mode']} | {r['coverage']:.1%} | {r['r']:.2f} | {r['agree']:.0%} | "
        f"{r['input']:.1%} | {r['summary_words']:.0f} | {r['seconds']:.2f} |"
        for r in rows
    ]
    lines += [
        "",
        f"- coverage@{k}: the share of the business's {k} most frequent content words "
        f"(document frequency over its {PER_ENTITY} reviews, stopwords out) in the summary; "
        "of the input: in the reviews read.",
        "- sentiment r: Pearson's r across businesses between the mean rating of the "
        "business and the summary's lexicon score (a word's mean rating over the "
        f"{len(lexicon_texts)} reviews of the shard's {len(others)} other businesses, words "
        f"in {LEXICON_MIN_DF}+ reviews; a text's score: the mean over its words found); "
        "agree: the share of businesses on the same side of the median for both.",
        f"- s per entity: decoding in batches of {args.batch_size}, with the machine's other "
        "load (see the timing below for a fair comparison).",
        "",
        f"## What the selection hands the model ({len(pool)} businesses, no decoding)",
        "",
        f"| reviews read | coverage@{k} of the input | sentiment r of the input | rating of the "
        "reviews read minus the business's: mean / mean abs. | words per review read |",
        "|---|--:|--:|--:|--:|",
    ]
    lines += [
        f"| {r['mode']} | {r['input']:.1%} | {r['input_r']:.2f} | {r['gap']:+.2f} / "
        f"{r['abs_gap']:.2f} | {r['review_words']:.0f} |"
        for r in selection_rows
    ]
    lines += [
        "",
        "The input's sentiment r scores the words the model reads (the reviews read, each cut "
        "to max_review_tokens); the rating columns use the reviews' own stars, averaged over "
        "businesses (signed: a lean; absolute: how far off). Central reads the reviews that "
        "share the most with the others: they hold the business's frequent words best, but "
        "typical reviews are the mainstream ones, so their rating can lean to one side; random "
        "is an unbiased sample; first depends on the order the reviews come in.",
        "",
        "## Timing (default settings, one thread)",
        "",
        f"One process, OMP_NUM_THREADS=1 and torch.set_num_threads(1), {cpu_name()}; the "
        f"inputs alternate, median of {args.repeats} runs of `Summarizer.summarize` (reading, "
        "selecting, decoding, the readability check).",
        "",
        "| input | seconds | ratio to 8 reviews |",
        "|---|--:|--:|",
        f"| 8 reviews | {med['8']:.2f} | 1.00 |",
        f"| 200 reviews (central {defaults.read_reviews}) | {med['200']:.2f} | "
        f"{med['200'] / med['8']:.2f} |",
        f"| 200 reviews, previous default (first 50) | {med['old']:.2f} | "
        f"{med['old'] / med['8']:.2f} |",
        f"| 200 reviews, all read | {med['all']:.2f} | {med['all'] / med['8']:.2f} |",
        f"| choosing the {defaults.read_reviews} of 200 alone (`reviews_read`: tokenizing, "
        f"similarities) | {med['select']:.3f} | {med['select'] / med['8']:.2f} |",
    ]
    text = "\n".join(lines) + "\n"
    if args.markdown:
        with atomic_write(args.markdown) as handle:
            handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
