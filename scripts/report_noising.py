"""Write docs/results/noising.md from a finished `synthesize` run.

    python scripts/report_noising.py runs/synth-yelp-5k --wall-seconds 408 \
        --note '...' > docs/results/noising.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from pathlib import Path

PAPER_PAIRS = 100_000
TARGET_MINUTES = 45


def example_pairs(run: Path, count: int) -> list[dict]:
    lines = gzip.decompress((run / "shards" / "shard-00000.jsonl.gz").read_bytes()).splitlines()
    return [json.loads(x) for x in lines[:count]]


def show_pair(pair: dict) -> list[str]:
    out = [
        f"### Pair {pair['pair_id']} (entity `{pair['entity_id']}`, N = {pair['n']})",
        "",
        f"**Candidate summary** (review #{pair['candidate_review']}):",
        "",
        f"> {pair['summary']}",
        "",
        "**Segment noise** (token + chunk alterations):",
        "",
    ]
    out += [f"{i}. {text}" for i, text in enumerate(pair["segment_noise"], 1)]
    out += [
        "",
        "<details><summary><b>Document noise</b> (most similar reviews of the same "
        "entity)</summary>",
        "",
    ]
    out += [f"{i}. {text}" for i, text in enumerate(pair["document_noise"], 1)]
    return [*out, "", "</details>", ""]


def profile_section(prof: dict, previous: dict | None, label: str = "") -> list[str]:
    n = prof["candidates"]
    plain = prof["full_vocab_log_prob_seconds"] + prof["nucleus_seconds"]
    out = [
        "",
        "## Where the time goes",
        "",
        f"One LM batch of {n} candidates ({prof['positions']:,} positions), one thread "
        "(`benchmarks/noising_profile.py`, best of 3):",
        "",
        "| step | seconds | per candidate |",
        "|---|---|---|",
        f"| forward and backward LSTMs | {prof['lstm_seconds']:.2f} | "
        f"{prof['lstm_seconds'] / n * 1000:.0f} ms |",
        f"| plain way: full 30k-word distribution + nucleus sampling (8 copies) | {plain:.2f} | "
        f"{plain / n * 1000:.0f} ms |",
        f"| of which the adaptive softmax head alone (2,000 words + 2 clusters) | "
        f"{prof['head_only_seconds']:.2f} | {prof['head_only_seconds'] / n * 1000:.0f} ms |",
        f"| **head-first exact nucleus (what `synthesize` does)** | "
        f"{prof['head_first_nucleus_seconds']:.2f} | "
        f"{prof['head_first_nucleus_seconds'] / n * 1000:.0f} ms |",
        "",
        "Head-first nucleus: a tail-cluster word is never more likely than its cluster's entry "
        "in the head, so where the nucleus of the head's words closes on a word at least as "
        "likely as every cluster entry, it is exactly the nucleus of the full distribution and "
        "the 28,000 tail words are never computed. On these candidates "
        f"{prof['closes_in_head']:.0%} of positions close inside the head and the bound "
        f"certifies {prof['certified_by_cluster_bound']:.0%} at once; at the other positions "
        "only the tail clusters whose total mass reaches the nucleus' cut are expanded (a "
        "cluster below the cut cannot hold a nucleus word), which is still exact.",
    ]
    if previous:
        run = previous["this_run"]
        rate = previous["pairs"] / (run["wall_seconds"] - run["prepare_seconds"])
        peak = max(v for k, v in run["peak_rss_mb"].items() if k != "driver")
        out += [
            "",
            f"{label}, the same run made {rate:.1f} pairs/s with "
            f"{peak:,.0f} MB per worker (worker CPU seconds: "
            + ", ".join(f"{k} {v:.0f}" for k, v in run["worker_cpu_seconds_by_stage"].items())
            + ").",
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path)
    parser.add_argument("--wall-seconds", type=float, required=True)
    parser.add_argument("--note", default="")
    parser.add_argument("--profile", type=Path, help="JSON from benchmarks/noising_profile.py")
    parser.add_argument("--previous", type=Path, help="manifest.json of an earlier run to compare")
    parser.add_argument(
        "--previous-label",
        default="Before the head-first nucleus",
        help="what was different in the --previous run",
    )
    parser.add_argument("--cache", default="runs/encoded", help="the run's --cache directory")
    args = parser.parse_args()
    manifest = json.loads((args.run / "manifest.json").read_text())
    run, filt, s = manifest["this_run"], manifest["candidate_filter"], manifest["settings"]
    pairs = manifest["pairs"]
    shard_seconds = run["wall_seconds"] - run["prepare_seconds"]
    rate = pairs / shard_seconds
    stages = run["worker_cpu_seconds_by_stage"]
    worker_total = sum(stages.values())
    full_minutes = (run["prepare_seconds"] + PAPER_PAIRS / rate) / 60
    out = [
        "# Synthetic pairs by noising, on the Yelp corpus",
        "",
        "```bash",
        'denoisesum synthesize "../shared/data/yelp/corpus/part-*.jsonl.xz" \\',
        f"    --lm lms/bilm-yelp -o {args.run} --cache {args.cache} \\",
        f"    --config configs/synth-yelp.toml --pairs {pairs} --workers 2",
        f"python -m benchmarks.noising_profile {args.run} {args.cache} "
        "lms/bilm-yelp > runs/noising-profile.json",
        f"python scripts/report_noising.py {args.run} --wall-seconds {args.wall_seconds:.0f} \\",
        f"    --cache {args.cache} --profile runs/noising-profile.json --note '...' \\",
        *(
            [f"    --previous {args.previous} --previous-label '{args.previous_label}' \\"]
            if args.previous
            else []
        ),
        "    > docs/results/noising.md",
        "```",
        "",
        f"Machine: {os.cpu_count()} CPU cores, no GPU; a local Dask cluster of 2 workers, one "
        f"torch thread each. {args.note}",
        "",
        "## Settings",
        "",
        f"Preset `{s['preset']}` (50–90 tokens, fewer than 3 symbol tokens); N ~ Normal("
        f"{s['n_mean']}, {s['n_std']}); token replacement p_R = {s['noise']['p_replace']} from the "
        f"p_N = {s['noise']['top_p']} nucleus of the BiLM (`lms/bilm-yelp`, perplexity 17.86); "
        f"chunk removal {s['noise']['p_remove_chunk']}; chunk inventory and templates from "
        f"{s['inventory_reviews']:,} candidate-like reviews; {s['shard_size']} pairs per shard; "
        f"seed {s['seed']}.",
        "",
        "## Measurements",
        "",
        "| measure | value |",
        "|---|---|",
        f"| reviews / passing the candidate constraints | {filt['reviews']:,} / "
        f"{filt['eligible']:,} ({filt['eligible'] / filt['reviews']:.1%}); rejected for length "
        f"{filt['rejected_length']:,}, for symbols {filt['rejected_symbols']:,} |",
        f"| pairs made | {pairs:,} ({pairs / PAPER_PAIRS:.0%} of the paper's {PAPER_PAIRS:,}) |",
        f"| wall time of the command | {args.wall_seconds:.0f} s (preparation "
        f"{run['prepare_seconds']:.0f} s: candidate filter, IDF, chunk inventory) |",
        f"| throughput while making shards | **{rate:.1f} pairs/s** |",
        f"| pairs whose entity had fewer than N other reviews | "
        f"{manifest['short_document_noise_pairs_this_run']:,} (they get what there is) |",
        f"| peak memory (VmHWM) | driver {run['peak_rss_mb']['driver']:,.0f} MB; workers "
        + ", ".join(f"{v:,.0f} MB" for k, v in run["peak_rss_mb"].items() if k != "driver")
        + " (each worker holds one shard at a time, so this does not grow with the number of "
        "pairs) |",
        f"| projected time for {PAPER_PAIRS:,} pairs at this rate | {full_minutes:.0f} min "
        f"(target: {TARGET_MINUTES} min) |",
        "",
        "Worker CPU time by stage (`segment_noise` includes the LM's nucleus sampling, i.e. its "
        "output layer, as well as the token and chunk alterations; `lm` is only the BiLM's "
        "LSTMs; `parse` is spaCy's chunking; `retrieval` the document-noise search):",
        "",
        "| stage | seconds | share | per pair |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {name} | {sec:.0f} | {sec / worker_total:.0%} | {sec / pairs * 1000:.0f} ms |"
        for name, sec in sorted(stages.items(), key=lambda kv: -kv[1])
    ]
    if args.profile:
        previous = json.loads(args.previous.read_text()) if args.previous else None
        out += profile_section(json.loads(args.profile.read_text()), previous, args.previous_label)
    out += [
        "",
        "## Examples",
        "",
        "The first pairs of shard 0, in full (texts are the tokenized, lower-cased form the "
        "summarizer is trained on).",
        "",
    ]
    for pair in example_pairs(args.run, 3):
        out += show_pair(pair)
    print("\n".join(out))


if __name__ == "__main__":
    main()
