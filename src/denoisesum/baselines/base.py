"""The interface every baseline shares, and the sentence helpers they have in common.

A baseline turns the reviews of one entity into a summary: `summarize(reviews)`. Those that learn
from a corpus (IDF weights, word vectors) take it in `fit(texts)` first; the Oracle, which picks
with the gold summary, says so with `needs_reference` and is given `references`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import ClassVar

from denoisesum.data.tokenizer import Tokenizer, detokenize
from denoisesum.text import content_words

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = {".", "!", "?", "..."}
_TOKENIZER = Tokenizer(lowercase=False)


class Summarizer(ABC):
    """One entity's reviews in, one summary out."""

    name: ClassVar[str]
    needs_reference: ClassVar[bool] = False  # True: summarize() needs the gold `references`
    can_fit: ClassVar[bool] = False  # True: fit() learns something from a corpus
    needs_fit: ClassVar[bool] = False  # True: fit() (or a saved model) must come first

    def fit(self, texts: Iterable[str]) -> Summarizer:
        """Learn from a corpus of review texts; a no-op for baselines that need nothing."""
        return self

    @abstractmethod
    def summarize(self, reviews: Sequence[str], *, references: Sequence[str] = ()) -> str:
        """The summary of one entity's reviews (`references`: gold summaries, Oracle only)."""


def clean(text: str) -> str:
    # Newlines would become sentence breaks for the pooled (py-rouge) scorer's ROUGE-L.
    return " ".join(text.split())


def word_count(text: str) -> int:
    """Words as ROUGE counts them (runs of letters and digits), as the leaderboard reports."""
    return len(_WORD.findall(text.lower()))


def compared_words(tokens: Iterable[str]) -> list[str]:
    """Lower-cased tokens that contain a letter or digit, stopwords included (what the
    baselines' similarities compare)."""
    return content_words(tokens, stopwords=frozenset())


def split_sentences(text: str) -> list[list[str]]:
    """Sentences of a review as cased project tokens, split after . ! ? and '...'."""
    sentences: list[list[str]] = []
    current: list[str] = []
    for token in _TOKENIZER.tokenize(text):
        current.append(token)
        if token in _SENTENCE_END:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    # a sentence of punctuation alone ("!!! ...") says nothing
    return [s for s in sentences if compared_words(s)]


def join_tokens(tokens: Sequence[str]) -> str:
    """Cased tokens back to text, keeping the writer's case."""
    return detokenize(tokens, sentence_case=False)


def fill_budget(ranked: Iterable[int], lengths: Sequence[int], words: int) -> list[int]:
    """Greedily take items in rank order while they fit in `words` (the best one always)."""
    chosen: list[int] = []
    used = 0
    for i in ranked:
        if chosen and used + lengths[i] > words:
            continue  # too long to fit: a shorter, lower-ranked item may still fit
        chosen.append(i)
        used += lengths[i]
        if used >= words:
            break
    return chosen
