"""Training and inference throughput of the bidirectional LM on real Yelp batches.

    python -m benchmarks.bilm_throughput runs/bilm-yelp [--seconds 60]

Uses the run's tokenized corpus and config; trains a fresh copy of the model (the run's weights
are not touched) and times `log_probs` (the call the noising stage makes). Run it on an idle
machine: other processes on the same cores lower the numbers. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from benchmarks.common import processor
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.vocab import Vocab
from denoisesum.models.bilm import BiLM, BiLMConfig
from denoisesum.models.store import VOCAB
from denoisesum.training import lm_data
from denoisesum.training.lm import LMRunConfig


def timed_tokens(step, batches, seconds: float) -> float:
    """Run `step` over batches until `seconds` pass (after 3 warm-up batches); tokens/s."""
    for batch in batches[:3]:
        step(batch)
    tokens, start = 0, time.perf_counter()
    for batch in batches[3:]:
        tokens += step(batch)
        if time.perf_counter() - start > seconds:
            break
    return tokens / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    cfg = json.loads((args.run / "run-config.json").read_text())
    run = LMRunConfig(model=BiLMConfig(**cfg["model"]))
    train_cfg = cfg["train"]
    corpus = EncodedCorpus(args.run / "encoded")
    vocab = Vocab.load(args.run / VOCAB)
    table = corpus.vocab_table(vocab)
    train_reviews, _ = lm_data.split_reviews(corpus, train_cfg["heldout_percent"])
    segments = lm_data.make_segments(corpus, train_reviews[:200_000], train_cfg["max_len"])
    batches = lm_data.epoch_batches(segments.length, train_cfg["batch_tokens"], seed=0, epoch=0)
    torch.manual_seed(0)
    model = BiLM(run.model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def train_step(batch) -> int:
        ids, lengths = lm_data.collate(corpus, table, segments, batch)
        loss, n = model(ids, lengths)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return n

    def infer_step(batch) -> int:
        ids, lengths = lm_data.collate(corpus, table, segments, batch)
        model.log_probs(ids, lengths)
        return int(lengths.sum())

    model.train()
    train = timed_tokens(train_step, batches, args.seconds)
    model.eval()
    infer = timed_tokens(infer_step, batches[len(batches) // 2 :], args.seconds)
    print(
        json.dumps(
            {
                "train_tokens_per_s": round(train),
                "log_probs_positions_per_s": round(infer),
                "batch_tokens": train_cfg["batch_tokens"],
                "threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "cpu": processor(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
