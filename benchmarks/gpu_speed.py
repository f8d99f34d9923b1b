"""CPU against CUDA: businesses per second of the shipped model on MeanSum Yelp dev (issue 34
item 5), written as JSON to the path given.

    python -m benchmarks.gpu_speed --out gpu-speed.json
    python -m benchmarks.gpu_speed --out gpu-speed.json --entities 100 --cpu-entities 24

One process, one model load per device, well under 3 minutes on one H100/H200 machine. Each
variant decodes through the Summarizer (`summarize_results`: tokenizing, choosing the
reviews, beam search with the model's own settings, the contradiction-free choice), after a
warm-up batch that is not timed:

- cpu: float32, batches of 8, torch's threads (all cores unless OMP_NUM_THREADS says);
  the first --cpu-entities businesses (the CPU is the slow one);
- cuda-fp16: float16 autocast (what `--device cuda` / `device="cuda"` does), batches of 8;
- cuda-fp32: the same in float32 (`summarizer.half = False`): what the precision buys;
- cuda-fp16-batch-N: batches of --big-batch (a batch's shortlist is the union of its inputs'
  words, so summaries may differ from batches of 8 even on one device);
- cuda-fp32-batch-N: the same in float32.

Per variant: businesses/s, seconds, and how many of the businesses the CPU also decoded got
the very summary the CPU wrote (float16 can send a close beam another way). Without CUDA only
the CPU variant runs and "cuda" says why.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SETS = ROOT.parent / "shared" / "data" / "yelp" / "meansum_dev.jsonl"


def load_sets(path: str, n: int) -> list[list[str]]:
    from denoisesum.data.reviewsets import read_review_sets

    return [s.reviews for s in list(read_review_sets(path))[:n]]


def timed(summarizer, sets: list[list[str]], batch_size: int) -> tuple[float, list[list[str]]]:
    """Seconds to summarize `sets` (after one untimed warm-up batch) and the summaries."""
    summarizer.summarize_results(sets[:batch_size], batch_size=batch_size)
    if summarizer.device.type == "cuda":
        torch.cuda.synchronize()
    began = time.perf_counter()
    out = [r.tokens for r in summarizer.summarize_results(sets, batch_size=batch_size)]
    if summarizer.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - began, out


def figures(
    name: str, seconds: float, out: list, reference: list, batch: int, extra: dict | None = None
) -> dict:
    n = min(len(out), len(reference))
    same = sum(a == b for a, b in zip(out[:n], reference[:n], strict=True))
    row = {
        "variant": name,
        "businesses": len(out),
        "batch_size": batch,
        "seconds": seconds,
        "businesses_per_s": len(out) / seconds,
        "same_as_cpu": same,
        "compared": n,
        **(extra or {}),
    }
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def cuda_variants(args, sets: list[list[str]], reference: list) -> list[dict]:
    from denoisesum.summarizer import Summarizer

    summarizer = Summarizer.from_pretrained(args.model, device="cuda")
    rows = []
    plans = [
        ("cuda-fp16", True, 8),
        ("cuda-fp32", False, 8),
        (f"cuda-fp16-batch-{args.big_batch}", True, args.big_batch),
        (f"cuda-fp32-batch-{args.big_batch}", False, args.big_batch),
    ]
    for name, half, batch in plans:
        summarizer.half = half
        torch.cuda.reset_peak_memory_stats()
        seconds, out = timed(summarizer, sets, batch)
        rows.append(
            figures(
                name,
                seconds,
                out,
                reference,
                batch,
                {"peak_gpu_memory_mib": torch.cuda.max_memory_allocated() / 2**20},
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file to write the figures to")
    parser.add_argument("--review-sets", default=str(DEFAULT_SETS))
    parser.add_argument("--model", default=None, help="model directory or installed name")
    parser.add_argument("--entities", type=int, default=100, help="businesses decoded on CUDA")
    parser.add_argument("--cpu-entities", type=int, default=24, help="businesses on the CPU")
    parser.add_argument("--big-batch", type=int, default=32)
    args = parser.parse_args()
    if not Path(args.review_sets).is_file():
        parser.error(
            f"--review-sets {args.review_sets}: no such file (the MeanSum dev JSONL; "
            "on a machine without ../shared, copy it and name it here)"
        )
    from denoisesum.summarizer import Summarizer

    sets = load_sets(args.review_sets, max(args.entities, args.cpu_entities))
    cpu = Summarizer.from_pretrained(args.model, device="cpu")
    seconds, reference = timed(cpu, sets[: args.cpu_entities], 8)
    rows = [figures("cpu", seconds, reference, reference, 8)]
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "review_sets": args.review_sets,
    }
    if torch.cuda.is_available():
        result["cuda"] = {"device": torch.cuda.get_device_name(), "version": torch.version.cuda}
        rows += cuda_variants(args, sets[: args.entities], reference)
        cpu_rate = rows[0]["businesses_per_s"]
        for row in rows:
            row["ratio_to_cpu"] = row["businesses_per_s"] / cpu_rate
    else:
        result["cuda"] = {"device": None, "why": "torch.cuda.is_available() is False here"}
    result["variants"] = rows
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
