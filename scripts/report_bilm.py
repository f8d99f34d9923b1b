"""Write docs/results/bilm.md from a finished `train-lm` run.

    python -m scripts.report_bilm runs/bilm-yelp --throughput runs/bilm-throughput.json \
        --tokenize-seconds 132 > docs/results/bilm.md
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

from benchmarks.common import cpu_name
from denoisesum.inference.cloze import fill_blanks
from denoisesum.models.store import load_bilm

CLOZE = [
    "the pizza was _ and the service was _ .",
    "we waited over an hour for our _ .",
    "the staff was very _ and helpful .",
    "i would _ recommend this place to anyone .",
    "the _ was cold and the fries were soggy .",
    "great place to get your car _ .",
    "the hotel room was clean but the _ was noisy .",
    "dr . smith is the best _ i have ever had .",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path)
    parser.add_argument("--throughput", type=Path, help="JSON from benchmarks/bilm_throughput.py")
    parser.add_argument("--tokenize-seconds", type=float, help="measured corpus tokenizing time")
    parser.add_argument("--wall-seconds", type=float, help="wall time of the train-lm command")
    parser.add_argument("--note", default="", help="a sentence on the conditions of the run")
    parser.add_argument("--title", default="Bidirectional cloze LM on the Yelp corpus")
    parser.add_argument(
        "--purpose",
        default=("The LM that segment noising samples replacement words from (paper §3.1)."),
    )
    parser.add_argument(
        "--command", help="the commands that made it (default: the noising LM's recipe)"
    )
    parser.add_argument(
        "--cache", type=Path, help="its tokenized-corpus cache (default: RUN/encoded)"
    )
    args = parser.parse_args()
    results = json.loads((args.run / "results.json").read_text())
    cfg = json.loads((args.run / "run-config.json").read_text())
    meta = json.loads(((args.cache or args.run / "encoded") / "meta.json").read_text())
    metrics = [json.loads(x) for x in (args.run / "metrics.jsonl").read_text().splitlines()]
    held = results["heldout"]
    m, t = cfg["model"], cfg["train"]
    out = [
        f"# {args.title}",
        "",
        f"{args.purpose} Word *j* is predicted from the forward LSTM state after word *j−1* and",
        "the backward LSTM state after word *j+1*.",
        "",
        "## How it was made",
        "",
        "```bash",
        *(
            args.command.splitlines()
            if args.command
            else [
                "bash scripts/train_bilm_yelp.sh runs/bilm-yelp   # train-lm with "
                "configs/bilm-yelp.toml",
                "python -m benchmarks.bilm_throughput runs/bilm-yelp > runs/bilm-throughput.json",
                "python -m scripts.report_bilm runs/bilm-yelp --throughput "
                "runs/bilm-throughput.json \\",
                f"    --tokenize-seconds {args.tokenize_seconds or 0:.0f} "
                f"--wall-seconds {args.wall_seconds or 0:.0f} --note '...' > docs/results/bilm.md",
            ]
        ),
        "```",
        "",
        f"Machine: {os.cpu_count()} CPU cores ({cpu_name()}), no GPU, torch {torch.__version__}, "
        f"{results['threads']} threads. {args.note}",
        "",
        "## Settings",
        "",
        "| setting | value | paper |",
        "|---|---|---|",
        f"| corpus | {meta['reviews']:,} reviews, {meta['tokens']:,} tokens | Yelp |",
        f"| vocabulary | {results['vocab_size']:,} (min count {cfg['vocab']['min_count']}) | 50k |",
        f"| embedding / LSTM hidden (per direction) / projection | {m['embed_dim']} / "
        f"{m['hidden_dim']} / {m['proj_dim']} | ? / 512 / - |",
        f"| output layer | adaptive softmax, clusters {m['cutoffs']}, div {m['div_value']} | "
        "full softmax |",
        f"| dropout | {m['dropout']} | |",
        f"| segments | reviews cut into ≤ {t['max_len']} words | |",
        f"| batch | ≤ {t['batch_tokens']} padded tokens, length-bucketed | |",
        f"| optimizer | Adam, lr {t['lr']}, {t['warmup_steps']} warm-up steps, cosine to 10% at "
        f"step {t['max_steps']}, grad-norm clip {t['grad_clip']} | |",
        f"| budget | {t['max_minutes'] or 'no'} min of training steps | |",
        f"| held-out | {t['heldout_percent']}% of entities (by id hash), "
        f"{held['tokens']:,} tokens | |",
        "",
        "## Results",
        "",
        "| measure | value |",
        "|---|---|",
        f"| held-out perplexity (all held-out reviews) | **{held['ppl']:.2f}** "
        f"(cross-entropy {held['nll']:.3f} nats/token; uniform would be "
        f"{results['uniform_nll']:.2f} nats, perplexity {results['vocab_size']:,}) |",
        f"| held-out `<unk>` rate | {held['unk_rate']:.2%} |",
        f"| training steps / tokens | {results['steps']:,} / {results['train_tokens']:,} "
        f"({results['train_tokens'] / meta['tokens']:.0%} of one epoch) |",
        f"| training time (steps only) | {results['train_seconds'] / 60:.1f} min |",
        f"| training throughput during the run | {results['tokens_per_second']:,.0f} tokens/s |",
    ]
    if args.wall_seconds:
        out.append(
            f"| wall time of `train-lm` (steps, evaluations, saving) | "
            f"{args.wall_seconds / 60:.1f} min |"
        )
    if args.tokenize_seconds:
        out.append(
            f"| tokenizing the corpus once (2 processes) | {args.tokenize_seconds / 60:.1f} min |"
        )
    if args.throughput:
        bench = json.loads(args.throughput.read_text())
        out += [
            f"| training throughput, separate 30 s benchmark | "
            f"{bench['train_tokens_per_s']:,} tokens/s |",
            f"| `log_probs` (full distribution at every position) | "
            f"{bench['log_probs_positions_per_s']:,} positions/s |",
        ]
    if args.wall_seconds and args.tokenize_seconds:
        total = (args.wall_seconds + args.tokenize_seconds) / 60
        overhead = (args.wall_seconds - results["train_seconds"]) / 60
        fit = t["max_minutes"] - max(0.0, total - 60)
        out += [
            "",
            f"End to end the LM took {total:.1f} min: {results['train_seconds'] / 60:.1f} "
            f"min of training steps, {overhead:.1f} min of evaluations and checkpoints, "
            f"{args.tokenize_seconds / 60:.1f} min of tokenizing."
            + (
                f" For a strict one-hour budget set `train.max_minutes = {int(fit)}`."
                if total > 60
                else ""
            ),
        ]
    out += [
        "",
        "Held-out perplexity during training (first 2,000 held-out reviews):",
        "",
        "| step | perplexity |",
        "|---|---|",
    ]
    out += [f"| {x['step']:,} | {x['heldout_ppl']:.2f} |" for x in metrics if "heldout_ppl" in x]
    out += [
        "",
        "## Cloze predictions",
        "",
        "Top-5 words (probability) the model proposes for each blank, from both sides of the "
        "context; these distributions, cut to their top-p nucleus, are what token noising "
        "samples from.",
        "",
    ]
    model, vocab = load_bilm(args.run)
    for sentence in CLOZE:
        out.append(f"- *{sentence}*")
        for position, guesses in fill_blanks(model, vocab, sentence, 5):
            shown = ", ".join(f"{w} ({p:.2f})" for w, p in guesses)
            out.append(f"  - word {position + 1}: {shown}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
