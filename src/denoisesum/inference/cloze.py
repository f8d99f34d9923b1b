"""Cloze predictions from a trained BiLM: what the noising stage would sample for a word."""

from __future__ import annotations

import torch

from denoisesum.config import between
from denoisesum.data.vocab import SPECIALS, Vocab
from denoisesum.errors import ConfigError, DenoiseSumError
from denoisesum.models.bilm import BiLM

BLANK = "_"


def fill_blanks(
    model: BiLM, vocab: Vocab, text: str, top: int = 5
) -> list[tuple[int, list[tuple[str, float]]]]:
    """For each '_' in `text`: its position and the `top` most likely words with probabilities.

    Special tokens are never proposed. `model, vocab` come from `models.store.load_bilm`.
    """
    valid = between(1, len(vocab) - len(SPECIALS), "the model's words")
    if not valid.contains(top):
        raise ConfigError(f"top={top} must be {valid}", key="top", reason=f"{top} must be {valid}")
    tokens = vocab.tokenizer.tokenize(text.replace(BLANK, f" {BLANK} "))
    blanks = [i for i, t in enumerate(tokens) if t == BLANK]
    if not blanks:
        raise DenoiseSumError("the text has no '_' to fill in")
    ids = torch.tensor([vocab.encode(tokens)])
    log_probs = model.log_probs(ids, torch.tensor([len(tokens)]))[0]  # [L, V]
    log_probs[:, : len(SPECIALS)] = -torch.inf
    out = []
    for i in blanks:
        values, indices = log_probs[i].exp().topk(top)
        out.append((i, [(vocab.tokens[j], float(p)) for j, p in zip(indices, values, strict=True)]))
    return out
