"""Decoding speed of the summarizer: a trained model on real review sets, or random weights.

    python -m benchmarks.summarize_speed --model denoisesum-yelp \
        --review-sets ../shared/data/yelp/meansum_dev.jsonl [--shortlist N] [--bf16]
    python -m benchmarks.summarize_speed --model denoisesum-yelp \
        --review-sets ../shared/data/yelp/meansum_dev.jsonl \
        --variants "default:;whole-vocabulary:shortlist=0;rerank:rerank=true,subsets=3"
    nice -n 15 python -m benchmarks.summarize_speed [--entities 20] [--threads 2]

With --model and --review-sets, the model summarizes the first --entities review sets with its
own settings (min/max length as tuned, shortlist unless --shortlist is given: 0 is the whole
vocabulary), through the whole `Summarizer` path. Without them:

a randomly initialised DenoiseSum with DenoiseSumConfig's defaults (embeddings 300, hidden 256)
and a 30,000-word vocabulary summarizes synthetic entities of 8 reviews of about 100 words each,
through the whole `Summarizer` path (tokenize, encode, beam search, detokenize), beam 5:
latency per entity one at a time (p50/p95) and throughput in batches of 8.

With --variants (`name:key=value,...;...`, decoding settings by name or `shortlist`/`bf16`), every
variant decodes the same entities in the same run, interleaved entity by entity so that a busy
machine slows all of them alike, and each is reported as a ratio to the first variant, with the
absolute times beside it (absolute CPU times differ up to 3x between machines here).

A random model almost never produces </s> (its probability is about 1/30,000), so every summary
runs to max_words (100 words): an upper bound on decoding time. A trained Yelp model stops
after about 60-70 words; `--max-length 70` approximates it. Prints JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import time

import torch

from benchmarks.common import configured, emit, parse_variants, percentile, system
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.data.vocab import SPECIALS, Vocab
from denoisesum.inference.beam import SearchConfig
from denoisesum.models.denoisesum import DenoiseSum, DenoiseSumConfig
from denoisesum.summarizer import Summarizer, SummarizerConfig

VOCAB_SIZE = 30_000


def make_entities(vocab: Vocab, n: int, reviews: int, words: int, seed: int) -> list[list[str]]:
    """n entities of `reviews` texts of words±20% random vocabulary words."""
    rng = random.Random(seed)
    pool = vocab.tokens[len(SPECIALS) :]
    return [
        [
            " ".join(rng.choices(pool, k=rng.randint(int(words * 0.8), int(words * 1.2))))
            for _ in range(reviews)
        ]
        for _ in range(n)
    ]


def compare_variants(
    summarizer: Summarizer, entities: list, variants: dict[str, dict], batch_size: int
) -> dict:
    """Latency one entity at a time (interleaved across variants) and batched throughput of
    each variant, with ratios to the first."""
    base = summarizer.config
    configs = {name: configured(base, changes) for name, changes in variants.items()}
    latencies: dict[str, list[float]] = {name: [] for name in configs}
    for reviews in entities:
        for name, config in configs.items():
            summarizer.config = config
            start = time.perf_counter()
            summarizer.summarize_results([reviews], batch_size=1)
            latencies[name].append(time.perf_counter() - start)
    throughput = {}
    for name, config in configs.items():
        summarizer.config = config
        start = time.perf_counter()
        summarizer.summarize_results(entities, batch_size=batch_size)
        throughput[name] = len(entities) / (time.perf_counter() - start)
    summarizer.config = base
    first = next(iter(configs))
    p50 = {name: statistics.median(values) for name, values in latencies.items()}
    return {
        "entities": len(entities),
        "reference": first,
        "torch_threads": torch.get_num_threads(),
        "machine": system(),
        "variants": {
            name: {
                "changes": variants[name],
                "p50_ms": 1000 * p50[name],
                "p95_ms": 1000 * percentile(latencies[name], 0.95),
                "p50_ratio_to_reference": p50[name] / p50[first],
                "batched_entities_per_s": throughput[name],
                "throughput_ratio_to_reference": throughput[name] / throughput[first],
            }
            for name in configs
        },
    }


def emit_markdown(result: dict, args) -> None:
    """The side-by-side table, with the command that made it."""
    command = (
        f"python -m benchmarks.summarize_speed --model {args.model} --review-sets "
        f"{args.review_sets} --entities {args.entities} --threads {args.threads} "
        f"--variants '{args.variants}'"
    )
    lines = [
        "# Decoding speed, side by side",
        "",
        f"```bash\n{command}\n```",
        "",
        f"{result['entities']} businesses of 8 reviews, one at a time (p50, p95) and in "
        f"batches of {args.batch_size}; {result['torch_threads']} torch threads; "
        f"{result['machine']}. Ratios are to `{result['reference']}`, measured in the same "
        "run, entity by entity in turn, so that a busy machine slows every variant alike.",
        "",
        "| decoding | settings | p50 ms | p95 ms | time vs reference | businesses/s "
        "batched | throughput vs reference |",
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    for name, v in result["variants"].items():
        settings = ", ".join(f"{k}={x}" for k, x in v["changes"].items()) or "the model's own"
        lines.append(
            f"| {name} | {settings} | {v['p50_ms']:.0f} | {v['p95_ms']:.0f} | "
            f"{v['p50_ratio_to_reference']:.2f}x | {v['batched_entities_per_s']:.2f} | "
            f"{v['throughput_ratio_to_reference']:.2f}x |"
        )
    emit("\n".join(lines) + "\n", args.markdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=20, help="timed entities per test")
    parser.add_argument("--reviews", type=int, default=8)
    parser.add_argument("--words", type=int, default=100, help="mean words per review")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all)")
    parser.add_argument("--bf16", action="store_true", help="SummarizerConfig.bf16")
    parser.add_argument(
        "--shortlist",
        type=int,
        default=None,
        help="SummarizerConfig.shortlist (default: the model's setting)",
    )
    parser.add_argument(
        "--model", help="a model directory or an installed model's name (default: random weights)"
    )
    parser.add_argument("--review-sets", help="review-set file to summarize (with --model)")
    parser.add_argument("--variants", help="decodings to compare side by side (see above)")
    parser.add_argument("--markdown", help="with --variants: also write the table here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.model:
        summarizer = Summarizer.from_pretrained(args.model)
        summarizer.config = summarizer.config.with_settings(beam=args.beam)
        sets = list(read_review_sets(args.review_sets))[: args.entities + 2]
        entities = [s.reviews for s in sets]
    else:
        torch.manual_seed(0)
        vocab = Vocab([*SPECIALS, *(f"w{i}" for i in range(VOCAB_SIZE - len(SPECIALS)))])
        model = DenoiseSum(DenoiseSumConfig(vocab_size=VOCAB_SIZE))
        summarizer = Summarizer(
            model,
            vocab,
            SummarizerConfig(search=SearchConfig(beam=args.beam, max_words=args.max_length)),
        )
        entities = make_entities(vocab, args.entities + 2, args.reviews, args.words, seed=1)
    summarizer.config.bf16 = args.bf16
    if args.shortlist is not None:
        summarizer.config.shortlist = args.shortlist
    model = summarizer.model
    warmup, entities = entities[:2], entities[2:]
    summarizer.summarize_results(warmup, batch_size=2)
    if args.variants:
        result = compare_variants(
            summarizer, entities, parse_variants(args.variants), args.batch_size
        )
        print(json.dumps(result, indent=2))
        if args.markdown:
            emit_markdown(result, args)
        return

    latencies, lengths = [], []
    for reviews in entities:
        start = time.perf_counter()
        tokens = summarizer.summarize_results([reviews], batch_size=1)[0].tokens
        latencies.append(time.perf_counter() - start)
        lengths.append(len(tokens))
    start = time.perf_counter()
    summarizer.summarize_results(entities, batch_size=args.batch_size)
    batched = time.perf_counter() - start

    print(
        json.dumps(
            {
                "model": {
                    "path": args.model or "random weights",
                    "vocab_size": model.config.vocab_size,
                    "embed_dim": model.config.embed_dim,
                    "hidden_dim": model.config.hidden_dim,
                    "parameters": sum(p.numel() for p in model.parameters()),
                },
                "input": {
                    "entities": len(entities),
                    "source": args.review_sets or "random words",
                    "mean_reviews_per_entity": statistics.mean(len(e) for e in entities),
                    "mean_words_per_review": statistics.mean(
                        len(r.split()) for e in entities for r in e
                    ),
                },
                "decode": {
                    **dataclasses.asdict(summarizer.config.search),
                    **dataclasses.asdict(summarizer.config.policy),
                    "bf16": args.bf16,
                    "shortlist": summarizer.config.shortlist,
                    "mean_summary_words": statistics.mean(lengths),
                },
                "latency_ms_batch_1": {
                    "p50": 1000 * statistics.median(latencies),
                    "p95": 1000 * percentile(latencies, 0.95),
                    "mean": 1000 * statistics.mean(latencies),
                },
                "throughput_entities_per_s": {
                    f"batch_{args.batch_size}": len(entities) / batched,
                    "batch_1": len(latencies) / sum(latencies),
                },
                "torch_threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "machine": system(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
