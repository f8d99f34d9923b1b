"""Training throughput of the DenoiseSum summarizer: pairs/s and peak memory for a config.

    python -m benchmarks.train_throughput --config configs/denoisesum-yelp-cpu.toml \
        --vocab-size 30000 [--pairs runs/yelp/pairs] [--seconds 120] [--device cpu]
    python -m benchmarks.train_throughput --config configs/denoisesum-yelp.toml --vocab-size 50000

Times whole training steps (forward, backward, gradient clipping, Adam) of a freshly initialised
model with the config's sizes, on batches shaped like Yelp pairs: `train.batch_size` pairs of N
segment-noise and N document-noise reviews, each cut to `data.max_review_tokens`. Review and
summary lengths are those of a real pair directory (`--pairs`, its first shard), else drawn
from the Yelp preset (candidates of 50-90 tokens; document-noise reviews of the corpus' length
distribution, median ~100 tokens). Random word ids: speed does not depend on which words.
Data loading is left out (it is a small share: the trainer reads memory-mapped token ids).
Run it on an idle machine. Prints JSON (`--json-out FILE` also writes it).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import resource
import time
from pathlib import Path

import torch

from benchmarks.common import processor
from denoisesum.config import load_config
from denoisesum.data.batch import make_batch
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.training.denoiser_config import (
    SummarizerRunConfig,
    autocast_dtype,
    pick_device,
)


def real_lengths(pairs_dir: Path, limit: int = 400) -> list[tuple[int, list[int], list[int]]]:
    """(summary, segment-noise, document-noise) token counts of the first pairs of a shard."""
    shard = sorted((pairs_dir / "shards").glob("shard-*.jsonl.gz"))[0]
    out = []
    with gzip.open(shard, "rt", encoding="utf-8") as handle:
        for line, _ in zip(handle, range(limit), strict=False):
            pair = json.loads(line)
            out.append(
                (
                    len(pair["summary"].split()),
                    [len(r.split()) for r in pair["segment_noise"]],
                    [len(r.split()) for r in pair["document_noise"]],
                )
            )
    return out


def yelp_lengths(rng: random.Random, n: int = 8) -> tuple[int, list[int], list[int]]:
    """Lengths like the Yelp preset's pairs: summaries of 50-90 tokens, segment noise about as
    long (chunks dropped, templates refilled), document noise from a long-tailed review length."""
    summary = rng.randint(50, 90)
    segment = [max(5, round(summary * rng.uniform(0.6, 1.3))) for _ in range(n)]
    document = [min(300, round(rng.lognormvariate(4.6, 0.6))) for _ in range(n)]
    return summary, segment, document


def make_batches(cfg: SummarizerRunConfig, vocab_size: int, lengths, n: int, seed: int):
    rng = random.Random(seed)
    cut = cfg.data.max_review_tokens

    def ids(length: int) -> list[int]:
        return [rng.randrange(4, vocab_size) for _ in range(min(length, cut))]

    batches = []
    for _ in range(n):
        chosen = [lengths(rng) for _ in range(cfg.train.batch_size)]
        topics = torch.softmax(torch.randn(len(chosen), cfg.model.n_topics), -1)
        batches.append(
            make_batch(
                [[ids(k) for k in seg] for _, seg, _ in chosen],
                [[ids(k) for k in doc] for _, _, doc in chosen],
                [ids(s) for s, _, _ in chosen],
                topics,
            )
        )
    return batches


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("configs/denoisesum-yelp-cpu.toml"))
    parser.add_argument("--set", action="append", default=[], help="config override key=value")
    parser.add_argument("--vocab-size", type=int, default=30000)
    parser.add_argument("--pairs", type=Path, help="a pair directory to take real lengths from")
    parser.add_argument("--seconds", type=float, default=120.0, help="timed training time")
    parser.add_argument("--warmup", type=int, default=3, help="untimed first steps")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    cfg = load_config(SummarizerRunConfig, args.config, args.set)
    cfg.model.vocab_size = args.vocab_size
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    amp = autocast_dtype(cfg.train.precision, device)
    lengths = yelp_lengths
    if args.pairs:
        table = real_lengths(args.pairs)

        def lengths(rng: random.Random):
            return rng.choice(table)

    torch.manual_seed(0)
    model = DenoiseSum(cfg.model).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
    batches = make_batches(cfg, args.vocab_size, lengths, 64, seed=0)

    def step(batch) -> None:
        with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
            loss = model(batch.to(device))["loss"]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.grad_clip)
        optimizer.step()

    for batch in batches[: args.warmup]:
        step(batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        step(batches[(args.warmup + steps) % len(batches)])
        steps += 1
        if device.type == "cuda":
            torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    pairs_per_s = steps * cfg.train.batch_size / seconds
    result = {
        "config": str(args.config),
        "overrides": args.set,
        "model": {
            "vocab_size": args.vocab_size,
            "embed_dim": cfg.model.embed_dim,
            "hidden_dim": cfg.model.hidden_dim,
            "parameters": sum(p.numel() for p in model.parameters()),
        },
        "batch": {
            "pairs": cfg.train.batch_size,
            "max_review_tokens": cfg.data.max_review_tokens,
            "lengths": f"real ({args.pairs})" if args.pairs else "yelp-like (random)",
        },
        "steps": steps,
        "seconds": round(seconds, 1),
        "pairs_per_s": round(pairs_per_s, 2),
        "hours_per_100k_pairs": round(100_000 / pairs_per_s / 3600, 2),
        "peak_rss_mb": round(peak_rss_mb()),
        "device": str(device),
        "precision": str(amp) if amp else "fp32",
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "cpu": processor(),
    }
    if device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name()
        result["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated() / 2**20)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")


if __name__ == "__main__":
    main()
