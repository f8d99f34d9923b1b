"""Decoding over a vocabulary shortlist: the most frequent words plus the input's own words.

Beam search spends most of its time in the two decoders' output layers (beams x hidden x V
multiply-adds per step, for V = 30,000 or 50,000 words). A summary of some reviews uses common
words and words of those reviews, so scoring only those (Jean et al. 2015; L'Hostis et al. 2016,
"vocabulary selection") makes that part of each step cheaper. The softmax is then normalised
over the shortlist, which changes probabilities by the mass of the words left out (small for a
frequency-ordered vocabulary): summaries can differ from full-vocabulary decoding, so this is a
setting (`SummarizerConfig.shortlist`, `denoisesum summarize --shortlist N`), off unless a
model's config sets it. For the shipped Yelp model a few thousand words decode several times
faster than its whole vocabulary with the same dev ROUGE (docs/results/summarize.md), so its
config sets one.

    model = ShortlistModel(denoisesum_model, shortlist_rows(batch.reviews, 5000, vocab_size))
    hyps = beam_search(model, batch, config, model.positions(banned_ids).tolist())
    words = model.vocab_ids(hyps[0][0].tokens)

The shortlist's positions stand in for word ids during the search: the special tokens come first
(so <pad>, <unk>, <s>, </s> keep their ids), and n-gram blocking works on positions exactly as on
ids, since the map is one-to-one. Several entities decoded together share one ShortlistModel over
the union of their shortlists, each entity masked to its own (`entity_words`): a review set's
summary is the same whether it is decoded alone or beside others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from denoisesum.data.batch import SummaryBatch
from denoisesum.data.vocab import SPECIALS
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.models.denoisesum_parts import Branch, DecodeState, OutRows


def shortlist_rows(reviews: torch.Tensor, top: int, vocab_size: int) -> torch.Tensor:
    """The vocabulary ids to decode over: specials, the `top` most frequent words (vocabularies
    are ordered by frequency) and every word of `reviews` [R, T]; sorted, so specials first."""
    common = torch.arange(min(len(SPECIALS) + top, vocab_size), device=reviews.device)
    return torch.unique(torch.cat([common, reviews.flatten()]))


class ShortlistModel:
    """A DenoiseSum that decodes over `rows` (vocabulary ids) only: the beam-search protocol
    (encode, decode_step) with word positions in `rows` in place of word ids."""

    def __init__(self, model: DenoiseSum, rows: torch.Tensor) -> None:
        if len(rows) < len(SPECIALS) or not torch.equal(
            rows[: len(SPECIALS)].cpu(), torch.arange(len(SPECIALS))
        ):
            raise ValueError("a shortlist must start with the special tokens")
        self.model, self.rows = model, rows
        self.position = torch.full(
            (model.config.vocab_size,), -1, dtype=torch.long, device=rows.device
        )
        self.position[rows] = torch.arange(len(rows), device=rows.device)
        self.seg_rows, self.doc_rows = self._out_rows(model.seg), self._out_rows(model.doc)

    def _out_rows(self, branch: Branch | None) -> OutRows | None:
        """The shortlist's rows of a decoder's output layer: (weight [V', D], bias [V']), or
        packed as fp16 where the decoder's other weights are (Decoder.out_rows)."""
        return None if branch is None else branch.decoder.out_rows(self.rows)

    def encode(self, batch: SummaryBatch) -> DecodeState:
        if bool((self.position[batch.reviews] < 0).any()):
            raise ValueError("the shortlist must hold every word of the input reviews")
        state = self.model.encode(batch)
        if state.doc is not None:  # copy ids become positions (padding is <pad>: position 0)
            state.doc = dataclasses.replace(state.doc, ids=self.position[state.doc.ids])
        return state

    def decode_step(
        self, state: DecodeState, prev_positions: torch.Tensor, words: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, DecodeState]:
        """prev_positions [B*] -> log p [B*, V'] over the shortlist, and the next state.
        words [B*, V'] bool: each row's own shortlist within this one (DenoiseSum.decode_step)."""
        return self.model.decode_step(
            state, self.rows[prev_positions], self.seg_rows, self.doc_rows, words
        )

    def entity_words(self, batch: SummaryBatch, top: int) -> torch.Tensor:
        """[B, V'] bool: the shortlist each entity of `batch` would decode over alone (the
        specials, the `top` most frequent words, its own reviews' words), as positions among
        the rows (the batch's union): a summary then does not depend on the entities decoded
        beside it."""
        n, v = batch.n_pairs, len(self.rows)
        own = (self.rows < len(SPECIALS) + top).expand(n, v).clone()  # specials and common
        entity = batch.review_pair.unsqueeze(1).expand_as(batch.reviews)  # [R, T]
        own[entity.flatten(), self.position[batch.reviews].flatten()] = True
        return own

    def positions(self, ids: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Vocabulary ids -> shortlist positions [N'], leaving out words not in the shortlist."""
        ids = torch.as_tensor(ids if isinstance(ids, torch.Tensor) else list(ids), dtype=torch.long)
        found = self.position[ids.to(self.rows.device)]
        return found[found >= 0]

    def vocab_ids(self, positions: Sequence[int]) -> list[int]:
        return self.rows[
            torch.tensor(list(positions), dtype=torch.long, device=self.rows.device)
        ].tolist()
