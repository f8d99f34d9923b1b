"""Issue 59 item 3: a sentence-level denoiser against quoting, for the opinions method.

The paper's idea one level down: the sentences of one opinion (an aspect and a polarity, from
the opinions method's own grouping) are noisy versions of it, so a DenoiseSum model trained to
write a review sentence from similar sentences of the same entity's other reviews (segment
noise) and from noised copies of it (document noise) writes an opinion's clean sentence from
its sentences. Three steps, each resumable by its output:

    python -m lab.studies.sentence_denoiser pairs ../shared/data/yelp/corpus/part-0[3456].jsonl.xz \
        -o runs/sentence-pairs --pairs 50000
    denoisesum topics runs/sentence-pairs -o runs/sentence-topics --sample 30000
    denoisesum train runs/sentence-pairs -o runs/sentence-run --topics runs/sentence-topics \
        --config lab/studies/sentence_denoiser.toml --max-minutes 55
    python -m lab.studies.sentence_denoiser summarize ../shared/data/yelp/meansum_dev.jsonl \
        --model runs/sentence-run -o runs/sentence-dev.jsonl

A pair's target is a readable third-person review sentence (writing.readable, no first person)
of an opinion held by at least three reviews; its inputs are up to 8 sentences of the same
opinion from other reviews, most similar first, and two noised copies of it (words dropped,
neighbours swapped, a content word replaced by one of the opinion's). A target is kept only
where the other sentences hold at least 60% of its content words: a target the inputs support.

`summarize` runs the opinions method's stages (sentences, grouping, choosing) through their
public functions, then writes each chosen opinion with the model from the chosen sentence and
the opinion's sentences most similar to it, in place of the quoted sentence; the summary's
framing (divided, the other side) is the method's. Judged blind against quoting:
lab/results/sentence-denoiser.md (not shipped).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path

from denoisesum.data.corpus import CorpusReader
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.data.synthetic import pair_record
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.inference.methods import Attribution
from denoisesum.inference.support import split_sentences
from denoisesum.io import atomic_write
from denoisesum.models.rating import find_rating_model
from denoisesum.opinions.aspects import Lexicon
from denoisesum.opinions.choosing import choose
from denoisesum.opinions.fluency import Scores
from denoisesum.opinions.grouping import group_opinions
from denoisesum.opinions.method import (
    DEFAULT_MAX_WORDS,
    SIDES,
    Casing,
    OpinionMethod,
    joined,
    review_polarity,
)
from denoisesum.opinions.sentences import distinct_reviews, read_sentences
from denoisesum.opinions.writing import (
    cosine,
    first_person,
    readable,
    third_person,
    unit_bag,
)
from denoisesum.summarizer import Summarizer
from denoisesum.text import content_words, fold

INPUTS = 8  # sentences of the opinion per input, the model's read_reviews
MIN_SUPPORT = 0.6  # share of a target's content words the other sentences must hold
SHARD = 5000  # pairs per shard file
_TOKENIZER = Tokenizer()


def entities(path: str):
    """(entity_id, texts, stars) of a corpus file grouped by entity."""
    current, texts, stars = None, [], []
    for review in CorpusReader(path):
        if review.entity_id != current and texts:
            yield current, texts, stars
            texts, stars = [], []
        current = review.entity_id
        texts.append(review.text)
        stars.append(review.rating)
    if texts:
        yield current, texts, stars


def noised(tokens: list[str], fill: list[str], rng: random.Random) -> list[str]:
    """A copy with about 15% of words dropped, one neighbour pair swapped and one content word
    replaced by a word of the same opinion's other sentences."""
    out = [t for t in tokens if rng.random() > 0.15] or list(tokens)
    if len(out) > 3:
        k = rng.randrange(len(out) - 1)
        out[k], out[k + 1] = out[k + 1], out[k]
    spots = [i for i, t in enumerate(out) if t in set(content_words(out))]
    if spots and fill:
        out[rng.choice(spots)] = rng.choice(fill)
    return out


def entity_pairs(texts, stars, lexicon, rating, rng) -> list[tuple[list[str], list, list, float]]:
    """(target tokens, segment-noise texts, document-noise texts, target's stars) of one entity."""
    distinct = distinct_reviews(texts)
    given = [stars[i] for i in distinct.first]
    sentences, review_stars = read_sentences(distinct.texts, lexicon, rating, given)
    out, used = [], set()
    for opinion in group_opinions(sentences):
        if len(opinion.reviews) < 3:
            continue
        group = [sentences[i] for i in opinion.sentences]
        bags = [unit_bag(s.tokens) for s in group]
        targets = [
            k
            for k, s in enumerate(group)
            if opinion.sentences[k] not in used and readable(s) and not first_person(s.tokens)
        ]
        for k in rng.sample(targets, min(2, len(targets))):
            target = group[k]
            others = sorted(
                (j for j, s in enumerate(group) if s.review != target.review),
                key=lambda j: -cosine(bags[k], bags[j]),
            )[:INPUTS]
            if len(others) < 2:
                continue
            held = {fold(w) for j in others for w in content_words(group[j].tokens)}
            words = {fold(w) for w in content_words(target.tokens)}
            if not words or len(words & held) < MIN_SUPPORT * len(words):
                continue
            fill = [w for j in others for w in content_words(group[j].tokens)]
            segment = [" ".join(group[j].tokens) for j in others]
            document = [" ".join(noised(target.tokens, fill, rng)) for _ in range(2)]
            used.add(opinion.sentences[k])
            out.append((target.tokens, segment, document, review_stars[target.review]))
    return out


def make_pairs(args) -> None:
    root = Path(args.output)
    (root / "shards").mkdir(parents=True, exist_ok=True)
    model = Path(args.model)
    lexicon, rating = Lexicon.load(model), find_rating_model(model)
    rng = random.Random(args.seed)
    records, shard, n_entities, t0 = [], 0, 0, time.time()

    def flush() -> None:
        nonlocal records, shard
        path = root / "shards" / f"shard-{shard:05d}.jsonl.gz"
        with atomic_write(path, "wb", encoding=None) as f, gzip.open(f, "wt") as g:
            g.writelines(json.dumps(r) + "\n" for r in records)
        records, shard = [], shard + 1

    made = 0
    for entity_id, texts, stars in (e for path in args.corpus for e in entities(path)):
        n_entities += 1
        for target, segment, document, stars_of in entity_pairs(texts, stars, lexicon, rating, rng):
            records.append(pair_record(made, entity_id, target, segment, document, rating=stars_of))
            made += 1
            if len(records) == SHARD:
                flush()
        if n_entities % 100 == 0:
            rate = made / (time.time() - t0)
            print(f"{n_entities} entities, {made} pairs, {rate:.0f} pairs/s", file=sys.stderr)
        if made >= args.pairs:
            break
    if records:
        flush()
    summary = {
        "pairs": made,
        "entities": n_entities,
        "corpus": args.corpus,
        "seconds": time.time() - t0,
    }
    (root / "manifest.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))


def opinion_inputs(texts, stars, method: OpinionMethod, max_words: int):
    """The opinions method's choice for one review set: per chosen opinion, the chosen
    sentence and the sentences of its opinion most similar to it (tokens joined), the
    opinion, the quoted sentence and its aspects; the share of unhappy reviews, the
    sentences and the number of distinct reviews."""
    distinct = distinct_reviews(texts)
    given = [stars[i] for i in distinct.first] if stars else None
    sentences, review_stars = read_sentences(distinct.texts, method.lexicon, method.rating, given)
    unhappy = sum(map(review_polarity, review_stars)) / len(review_stars)
    opinions = group_opinions(sentences)
    ask = (sentences, unhappy, len(distinct.texts), method.lexicon, max_words, SIDES["all"])
    fluency = Scores(method.fluency) if method.fluency else None
    chosen = choose(opinions, *ask, fluency=fluency) or choose(
        opinions, *ask, strict=False, fluency=fluency
    )
    out = []
    for c in chosen:
        best = sentences[c.sentence]
        bag = unit_bag(best.tokens)
        rest = sorted(
            (i for i in c.opinion.sentences if i != c.sentence),
            key=lambda i: -cosine(bag, unit_bag(sentences[i].tokens)),
        )[: INPUTS - 1]
        inputs = [" ".join(best.tokens)] + [" ".join(sentences[i].tokens) for i in rest]
        out.append((inputs, c.opinion, best.text, best.aspects))
    return out, unhappy, sentences, len(distinct.texts)


def summarize(args) -> None:
    summarizer = Summarizer.from_pretrained(args.model, device="cpu")
    method = OpinionMethod.from_directory(args.opinions)
    sets = list(read_review_sets(args.sets))[: args.limit or None]
    records = []
    for n, review_set in enumerate(sets):
        chosen, unhappy, sentences, total = opinion_inputs(
            review_set.reviews, None, method, DEFAULT_MAX_WORDS
        )
        written = (
            summarizer.summarize_results(
                [inputs for inputs, *_ in chosen],
                method="denoisesum",
                max_words=args.max_words,
                min_words=args.min_words,
            )
            if chosen
            else []
        )
        attributions = []
        for (_, opinion, quoted, aspects), result in zip(chosen, written, strict=True):
            spans = split_sentences(result.summary)[:1]  # one sentence per opinion
            first = result.summary[slice(*spans[0])].strip() if spans else quoted
            who = "another" if any("reviewer" in a.text for a in attributions) else "one"
            text, _ = third_person(first, aspects, who)
            holders = sorted(opinion.reviews)
            attributions.append(
                Attribution(text, opinion.label, opinion.polarity, holders, len(holders), total)
            )
        casing = Casing(sentences, method.lexicon)
        summary = joined(attributions, unhappy, "all", casing) if attributions else ""
        records.append(
            {
                "entity_id": review_set.entity_id,
                "summary": summary,
                "quoted": [q for _, _, q, _ in chosen],
            }
        )
        print(f"{n + 1}/{len(sets)}", file=sys.stderr)
    with atomic_write(Path(args.output), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("pairs")
    p.add_argument("corpus", nargs="+")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--pairs", type=int, default=60000)
    p.add_argument("--model", default="src/denoisesum/pretrained/denoisesum-yelp")
    p.add_argument("--seed", type=int, default=1)
    s = sub.add_parser("summarize")
    s.add_argument("sets")
    s.add_argument("--model", required=True, help="the sentence denoiser's run directory")
    s.add_argument("--opinions", default="src/denoisesum/pretrained/denoisesum-yelp")
    s.add_argument("-o", "--output", required=True)
    s.add_argument("--limit", type=int, default=0)
    s.add_argument("--min-words", type=int, default=6)
    s.add_argument("--max-words", type=int, default=25)
    args = parser.parse_args(argv)
    make_pairs(args) if args.step == "pairs" else summarize(args)


if __name__ == "__main__":
    main()
