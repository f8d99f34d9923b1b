"""Start the summarizer from a trained language model (docs/method.md §2: "the LSTM weights are
pretrained as language models on the corpus").

The BiLM (`denoisesum train-lm`) has what the summarizer's encoder has: a word embedding and two
unidirectional LSTMs, one reading left to right and one right to left. Whatever matches is copied:

- embeddings: row by row, by word, so the summarizer may use its own vocabulary; a word the LM does
  not know keeps its random row. Needs the same embed_dim.
- encoder LSTMs: when embed_dim and the units per encoder direction (model.encoder_dim, by
  default hidden_dim / 2) equal the LM's embed_dim and hidden_dim.
- decoder LSTMs (one per branch): from the LM's forward LSTM when hidden_dim equals its hidden_dim
  (a decoder is a left-to-right LM conditioned on the input).

So one LM starts every LSTM when model.encoder_dim = model.hidden_dim = the LM's hidden_dim and
the embedding sizes agree (configs/denoisesum-yelp-lm256.toml with lms/bilm-yelp-256).

Anything whose shape differs is left as initialised and listed in the report, never silently
reshaped.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from denoisesum.data.vocab import Vocab
from denoisesum.models.bilm import BiLM
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.models.store import load_bilm


def _copy_lstm(target: nn.LSTM, source: nn.LSTM) -> bool:
    """Copy all weights when every shape matches; False (nothing copied) otherwise."""
    src = dict(source.named_parameters())
    if any(name not in src or src[name].shape != p.shape for name, p in target.named_parameters()):
        return False
    with torch.no_grad():
        for name, p in target.named_parameters():
            p.copy_(src[name])
    return True


def copy_embeddings(
    target: nn.Embedding, vocab: Vocab, source: nn.Embedding, source_vocab: Vocab
) -> int:
    """Copy the rows of the words both vocabularies have; returns how many."""
    if target.embedding_dim != source.embedding_dim:
        return 0
    pairs = [
        (i, source_vocab.index[w]) for i, w in enumerate(vocab.tokens) if w in source_vocab.index
    ]
    if not pairs:
        return 0
    rows, src_rows = (torch.tensor(x, dtype=torch.long) for x in zip(*pairs, strict=True))
    with torch.no_grad():
        target.weight[rows] = source.weight[src_rows].to(target.weight.dtype)
    return len(pairs)


def init_from_bilm(model: DenoiseSum, vocab: Vocab, lm: BiLM, lm_vocab: Vocab) -> dict:
    """Copy the LM's matching weights into model; returns what was and was not copied."""
    report = {
        "embedding_rows": copy_embeddings(model.embed, vocab, lm.embed, lm_vocab),
        "vocab_size": len(vocab),
        "copied": [],
        "skipped": [],
    }
    parts = {
        "encoder forward LSTM": (model.enc_fwd, lm.fwd),
        "encoder backward LSTM": (model.enc_bwd, lm.bwd),
    }
    for name, branch in model.branches().items():
        parts[f"decoder {name} LSTM"] = (branch.decoder.lstm, lm.fwd)
    for name, (target, source) in parts.items():
        report["copied" if _copy_lstm(target, source) else "skipped"].append(name)
    if not report["embedding_rows"]:
        report["skipped"].append("embeddings")
    return report


def init_from_lm_dir(model: DenoiseSum, vocab: Vocab, lm_dir: str | Path) -> dict:
    lm, lm_vocab = load_bilm(lm_dir)
    return {"lm": str(lm_dir), **init_from_bilm(model, vocab, lm, lm_vocab)}
