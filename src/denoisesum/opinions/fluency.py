"""How well a review sentence reads on its own: its SLOR under the model's cloze LM.

SLOR (syntactic log-odds ratio; Pauls & Klein 2012, Lau et al. 2017, Kann et al. 2018) is a
sentence's mean word log-probability under a language model less the mean of its words' unigram
log-probabilities, so that rare words (the dish names and numbers a summary should keep) do not
count against it, only the way the words go together. The LM is the model directory's noising
BiLM (noise-lm/, the corpus's own reviews; models/store.noise_lm): each word is scored from both
sides of its context (a pseudo-log-likelihood, Salazar et al. 2020).

Measured on 629 blind-judged summaries (`python -m lab.studies.fluency`): within each system,
a summary's lowest sentence SLOR ranks its readability score with Spearman 0.31-0.38 (0.34 for
the opinions method's), and the telegraphic fragments judges marked down score lowest
("handcrafted chocolates best quality in store.", "nachos have squeeze cheese and cold
chicken."). Across systems it does not: the DenoiseSum model writes likely words that make
little sense.

    fluency = Fluency.load(model_dir)          # None where the model has no noise-lm
    fluency.slor([["the", "broth", "is", "rich", "."]])   # [4.1]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import torch

from denoisesum.data.batch import pad_ids
from denoisesum.data.vocab import UNK_ID, Vocab
from denoisesum.models.bilm import BiLM, length_mask
from denoisesum.models.store import load_bilm, noise_lm

MAX_TOKENS = 60  # a sentence is scored on its first words (a summary sentence is at most 24)


class Fluency:
    """SLOR of tokenized sentences under a cloze BiLM and its vocabulary's unigram counts."""

    def __init__(self, lm: BiLM, vocab: Vocab) -> None:
        self.lm, self.vocab = lm.eval(), vocab
        total = sum(vocab.counts) or 1
        # [V] unigram log-probabilities; a word never counted gets a count of 1
        self.unigram = torch.tensor([math.log(max(c, 1) / total) for c in vocab.counts])

    @classmethod
    def load(cls, directory: str | Path) -> Fluency | None:
        """The fluency of a model directory's noising LM, None where there is none."""
        found = noise_lm(Path(directory))
        return None if found is None else cls(*load_bilm(found))

    @torch.no_grad()
    def slor(self, sentences: Sequence[Sequence[str]]) -> list[float]:
        """One SLOR per sentence (lower-cased tokens): higher reads better."""
        if not sentences:
            return []
        # an empty sentence scores as one unknown word
        ids, lengths = pad_ids(
            [self.vocab.encode(tokens)[:MAX_TOKENS] or [UNK_ID] for tokens in sentences]
        )  # [B, L], [B]
        mask = length_mask(lengths, ids.shape[1])  # [B, L]
        contexts = self.lm.contexts(ids, lengths)  # [B, L, P]
        log_p = torch.zeros(ids.shape)  # [B, L] each word's log-probability from its context
        log_p[mask] = self.lm.head(contexts[mask], ids[mask]).output
        odds = (log_p - self.unigram[ids]) * mask  # [B, L]
        return (odds.sum(1) / lengths).tolist()


class Scores:
    """A summary's fluency look-ups: each sentence text scored once, however often its opinion
    is weighed (choosing.py may weigh an opinion twice)."""

    def __init__(self, fluency: Fluency) -> None:
        self.fluency = fluency
        self.known: dict[str, float] = {}

    def __call__(self, sentences: Sequence) -> list[float]:
        """sentences: opinions.sentences.Sentence (their .text and .tokens)."""
        new = {s.text: s.tokens for s in sentences if s.text not in self.known}
        self.known.update(zip(new, self.fluency.slor(list(new.values())), strict=True))
        return [self.known[s.text] for s in sentences]
