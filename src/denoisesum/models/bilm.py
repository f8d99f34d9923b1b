"""Bidirectional cloze language model (paper §3.1 "Segment Noising"; docs/method.md §1.3).

Word j of a review is predicted from both sides of its context at once: the forward LSTM's state
after reading <s> w_1 .. w_{j-1} and the backward LSTM's state after reading </s> w_L .. w_{j+1}.
The two directions are separate LSTMs, never stacked into one bidirectional LSTM: in a stacked
BiLSTM the second layer's forward state would see the first layer's backward state, which has read
w_j itself, and the model would learn to copy its target.

The output layer is an adaptive softmax (Grave et al. 2017) so a 30k+ vocabulary trains at a
useful speed on a CPU; `log_probs` still returns the full distribution at every position, which is
what the noising stage samples from.

Shapes: B batch, L words (without <s>/</s>), T = L + 2, E embed, H hidden, P projection, V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import nn

from denoisesum.config import Range, at_least
from denoisesum.data.vocab import BOS_ID, EOS_ID, PAD_ID
from denoisesum.errors import ConfigError


@dataclass
class BiLMConfig:
    """Defaults are sized to train on 2 CPU cores within an hour (docs/results/bilm.md).

    The paper uses a 50k vocabulary, 512-unit LSTMs and a full softmax.
    """

    vocab_size: int = 30000  # set from the vocabulary actually built
    embed_dim: int = 256
    hidden_dim: int = 384
    proj_dim: int = 256
    dropout: float = 0.1
    # adaptive softmax clusters: [0, 2000) in the head, then [2000, 10000), [10000, V)
    cutoffs: list[int] = field(default_factory=lambda: [2000, 10000])
    div_value: float = 4.0
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "vocab_size": at_least(5, "the 4 special tokens and a word"),
        "embed_dim": at_least(1),
        "hidden_dim": at_least(1),
        "proj_dim": at_least(1),
        "dropout": Range(0, 1, high_open=True),
        "cutoffs": at_least(1),
        "div_value": at_least(1),
    }

    def validate(self) -> None:
        if any(a >= b for a, b in zip(self.cutoffs, self.cutoffs[1:], strict=False)):
            why = f"{self.cutoffs} must be increasing"
            raise ConfigError(f"cutoffs {why}", key="cutoffs", reason=why)


def add_boundaries(ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """[B, L] word ids (right-padded) -> [B, L+2] with <s> first and </s> after each last word."""
    batch, length = ids.shape
    out = torch.full((batch, length + 2), PAD_ID, dtype=ids.dtype, device=ids.device)
    out[:, 0] = BOS_ID
    out[:, 1:-1] = ids
    out[:, 1:-1].masked_fill_(~length_mask(lengths, length), PAD_ID)
    out.scatter_(1, (lengths + 1).unsqueeze(1), EOS_ID)
    return out


def length_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """[B] lengths -> [B, max_len] bool, True on real positions."""
    return torch.arange(max_len, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def reverse_within_length(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each row's first `lengths[b]` steps, leaving the padding where it is.

    x: [B, T, ...]; applying it twice gives x back.
    """
    batch, steps = x.shape[:2]
    pos = torch.arange(steps, device=x.device).unsqueeze(0).expand(batch, steps)
    rev = torch.where(pos < lengths.unsqueeze(1), lengths.unsqueeze(1) - 1 - pos, pos)  # [B, T]
    index = rev.view(batch, steps, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index)


def output_cutoffs(c: BiLMConfig) -> list[int]:
    """The adaptive softmax's cutoffs for this vocabulary: those below its size; a vocabulary
    smaller than every cutoff (a small corpus) gets one of its size, all but its rarest word in
    the head (the module needs one tail cluster at least)."""
    return [k for k in c.cutoffs if k < c.vocab_size - 1] or [c.vocab_size - 1]


class BiLM(nn.Module):
    def __init__(self, config: BiLMConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.embed = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=PAD_ID)
        self.fwd = nn.LSTM(c.embed_dim, c.hidden_dim, batch_first=True)
        self.bwd = nn.LSTM(c.embed_dim, c.hidden_dim, batch_first=True)
        self.drop = nn.Dropout(c.dropout)
        self.proj = nn.Linear(2 * c.hidden_dim, c.proj_dim)
        cutoffs = output_cutoffs(c)
        if c.proj_dim // c.div_value ** len(cutoffs) < 1:
            raise ConfigError(
                f"model.proj_dim={c.proj_dim} is too small for {len(cutoffs)} "
                f"adaptive-softmax tail clusters with div_value={c.div_value}"
            )
        self.head = nn.AdaptiveLogSoftmaxWithLoss(
            c.proj_dim, c.vocab_size, cutoffs, div_value=c.div_value
        )

    def contexts(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """ids [B, L] word ids, lengths [B] -> [B, L, P]: the two-sided context of every word."""
        seq = add_boundaries(ids, lengths)  # [B, T]
        seq_lengths = lengths + 2
        x = self.drop(self.embed(seq))  # [B, T, E]
        fwd, _ = self.fwd(x)  # [B, T, H]; fwd[:, t] has read seq[:, :t+1]
        # Running the backward LSTM over each sequence reversed within its own length keeps the
        # padding at the end, where a left-to-right LSTM never lets it reach a real position.
        bwd, _ = self.bwd(reverse_within_length(x, seq_lengths))
        bwd = reverse_within_length(bwd, seq_lengths)  # [B, T, H]; bwd[:, t] has read seq[:, t:]
        # word j sits at seq position j+1: left context fwd[:, j], right context bwd[:, j+2]
        both = torch.cat([fwd[:, :-2], bwd[:, 2:]], dim=-1)  # [B, L, 2H]
        return self.proj(self.drop(both))  # [B, L, P]

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Mean negative log-likelihood over the real words, and how many there were."""
        mask = length_mask(lengths, ids.shape[1])  # [B, L]
        ctx = self.contexts(ids, lengths)[mask]  # [N, P]
        return self.head(ctx, ids[mask]).loss, int(mask.sum())

    @torch.no_grad()
    def log_probs(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """[B, L] word ids -> [B, L, V] log-probabilities of every word at every position.

        Position j's distribution ignores word j itself (the cloze setting the noising stage needs).
        Rows past a sequence's length hold values for padding: mask them with `length_mask`.
        """
        ctx = self.contexts(ids, lengths)  # [B, L, P]
        batch, length, _ = ctx.shape
        return self.head.log_prob(ctx.reshape(batch * length, -1)).view(batch, length, -1)
