"""Decoding speed of the summarizer: a trained model on real review sets, or random weights.

    python benchmarks/summarize_speed.py --model denoisesum-yelp \
        --review-sets ../shared/data/yelp/meansum_dev.jsonl [--shortlist N] [--bf16]
    nice -n 15 python benchmarks/summarize_speed.py [--entities 20] [--threads 2]

With --model and --review-sets, the model summarizes the first --entities review sets with its
own settings (min/max length as tuned, shortlist unless --shortlist is given: 0 is the whole
vocabulary), through the whole `Summarizer` path. Without them:

a randomly initialised DenoiseSum with DenoiseSumConfig's defaults (embeddings 300, hidden 256)
and a 30,000-word vocabulary summarizes synthetic entities of 8 reviews of about 100 words each,
through the whole `Summarizer` path (tokenize, encode, beam search, detokenize), beam 5:
latency per entity one at a time (p50/p95) and throughput in batches of 8.

A random model almost never produces </s> (its probability is about 1/30,000), so every summary
runs to max_length (100 words): an upper bound on decoding time. A trained Yelp model stops
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
from common import percentile, system

from denoisesum.data.reviewsets import read_review_sets
from denoisesum.data.vocab import SPECIALS, Vocab
from denoisesum.inference.beam import DecodeConfig
from denoisesum.inference.summarizer import Summarizer, SummarizerConfig
from denoisesum.models.denoisesum import DenoiseSum, DenoiseSumConfig

VOCAB_SIZE = 30_000


def make_entities(vocab: Vocab, n: int, reviews: int, words: int,
                  seed: int) -> list[list[str]]:
    """n entities of `reviews` texts of words±20% random vocabulary words."""
    rng = random.Random(seed)
    pool = vocab.tokens[len(SPECIALS):]
    return [[" ".join(rng.choices(pool, k=rng.randint(int(words * 0.8), int(words * 1.2))))
             for _ in range(reviews)] for _ in range(n)]


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
    parser.add_argument("--shortlist", type=int, default=None,
                        help="SummarizerConfig.shortlist (default: the model's setting)")
    parser.add_argument("--model", help="a model directory or an installed model's name "
                                        "(default: random weights)")
    parser.add_argument("--review-sets", help="review-set file to summarize (with --model)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.model:
        summarizer = Summarizer.from_pretrained(args.model)
        summarizer.config.decode.beam_size = args.beam
        sets = list(read_review_sets(args.review_sets))[: args.entities + 2]
        entities = [s.reviews for s in sets]
    else:
        torch.manual_seed(0)
        vocab = Vocab([*SPECIALS, *(f"w{i}" for i in range(VOCAB_SIZE - len(SPECIALS)))])
        model = DenoiseSum(DenoiseSumConfig(vocab_size=VOCAB_SIZE))
        summarizer = Summarizer(model, vocab, SummarizerConfig(
            decode=DecodeConfig(beam_size=args.beam, max_length=args.max_length)))
        entities = make_entities(vocab, args.entities + 2, args.reviews, args.words, seed=1)
    summarizer.config.bf16 = args.bf16
    if args.shortlist is not None:
        summarizer.config.shortlist = args.shortlist
    model = summarizer.model
    warmup, entities = entities[:2], entities[2:]
    summarizer.summarize_batch(warmup, batch_size=2)

    latencies, lengths = [], []
    for reviews in entities:
        start = time.perf_counter()
        tokens = summarizer.summarize_tokens(reviews)
        latencies.append(time.perf_counter() - start)
        lengths.append(len(tokens))
    start = time.perf_counter()
    summarizer.summarize_batch(entities, batch_size=args.batch_size)
    batched = time.perf_counter() - start

    print(json.dumps({
        "model": {"path": args.model or "random weights",
                  "vocab_size": model.config.vocab_size, "embed_dim": model.config.embed_dim,
                  "hidden_dim": model.config.hidden_dim,
                  "parameters": sum(p.numel() for p in model.parameters())},
        "input": {"entities": len(entities), "source": args.review_sets or "random words",
                  "mean_reviews_per_entity": statistics.mean(len(e) for e in entities),
                  "mean_words_per_review": statistics.mean(
                      len(r.split()) for e in entities for r in e)},
        "decode": {**dataclasses.asdict(summarizer.config.decode), "bf16": args.bf16,
                   "shortlist": summarizer.config.shortlist,
                   "mean_summary_words": statistics.mean(lengths)},
        "latency_ms_batch_1": {"p50": 1000 * statistics.median(latencies),
                               "p95": 1000 * percentile(latencies, 0.95),
                               "mean": 1000 * statistics.mean(latencies)},
        "throughput_entities_per_s": {f"batch_{args.batch_size}": len(entities) / batched,
                                      "batch_1": len(latencies) / sum(latencies)},
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "machine": system(),
    }, indent=2))


if __name__ == "__main__":
    main()
