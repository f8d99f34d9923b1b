"""What ROUGE does not see in a summary: repetition, restatement and voice.

Measured on a summary's text (tokenized or not; lower-cased, split into words and sentences):

- repeated words: content words (alphabetic, not in `text.STOPWORDS`) that occur
  again in the same sentence ("the pool was clean and clean");
- restated sentences: sentences at least half of whose content words (and at least two) already
  appeared in one earlier sentence ("the staff is friendly . the staff is very friendly");
- first person singular: the summary uses I / me / my / mine / myself, i.e. speaks as one
  customer rather than describing the business;
- words no review says (when the input reviews are given): content words of the summary found in
  none of its reviews, after light plural folding ("free coffee" at a car repair shop whose
  reviews never mention coffee). A word can be supported and its claim still false; this counts
  only what cannot come from the input at all.

`style_report` gives the share of summaries with each fault and the mean counts, for comparing
decodings or models side by side (lab/studies/decoding_levers.py, docs/results/).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import regex

from denoisesum.text import fold, is_content_word, without_openings

FIRST_PERSON_SINGULAR = frozenset({"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"})
_WORD = regex.compile(r"[\p{L}\p{N}]+(?:'[\p{L}]+)?|[.!?]")
_ENDS = frozenset(".!?")


def sentences(text: str) -> list[list[str]]:
    """Lower-cased words of each sentence (split after . ! ?)."""
    out: list[list[str]] = [[]]
    for word in _WORD.findall(text.lower()):
        if word in _ENDS:
            out.append([])
        else:
            out[-1].append(word)
    return [s for s in out if s]


def _content(words: Sequence[str]) -> list[str]:
    return [w for w in words if is_content_word(w)]


def repeated_words(text: str) -> int:
    """Content words that repeat one earlier in their own sentence."""
    return sum(len(c) - len(set(c)) for c in map(_content, sentences(text)))


def restated_sentences(text: str, share: float = 0.5) -> int:
    """Sentences with >= 2 content words, at least `share` of which one earlier sentence has."""
    seen: list[set[str]] = []
    count = 0
    for words in map(set, map(_content, sentences(text))):
        if len(words) >= 2 and any(len(words & s) >= share * len(words) for s in seen):
            count += 1
        seen.append(words)
    return count


def first_person(text: str) -> bool:
    return any(w in FIRST_PERSON_SINGULAR for s in sentences(text) for w in s)


def unsupported_words(text: str, reviews: Sequence[str]) -> int:
    """Distinct content words of `text` that none of `reviews` uses (plural-folded)."""
    said = {fold(w) for review in reviews for s in sentences(review) for w in _content(s)}
    text = without_openings(text)  # the summary's framing, not a claim
    return len({fold(w) for s in sentences(text) for w in _content(s)} - said)


@dataclass
class StyleReport:
    summaries: int
    with_repeated_words: float  # share of summaries with >= 1 repeated word in a sentence
    repeated_words: float  # mean per summary
    with_restated_sentence: float  # share with >= 1 restated sentence
    restated_sentences: float  # mean per summary
    first_person: float  # share in the first person singular
    unsupported_words: float | None = None  # mean per summary; None without the reviews

    def to_dict(self) -> dict[str, float | None]:
        return dict(vars(self))


def style_report(
    texts: Sequence[str], reviews: Sequence[Sequence[str]] | None = None
) -> StyleReport:
    """The measures over `texts`; with `reviews` (each summary's input reviews, in order) also
    the words no review says."""
    n = max(1, len(texts))
    rep = [repeated_words(t) for t in texts]
    res = [restated_sentences(t) for t in texts]
    unsupported = None
    if reviews is not None:
        unsupported = sum(unsupported_words(t, r) for t, r in zip(texts, reviews, strict=True)) / n
    return StyleReport(
        len(texts),
        sum(r > 0 for r in rep) / n,
        sum(rep) / n,
        sum(r > 0 for r in res) / n,
        sum(res) / n,
        sum(first_person(t) for t in texts) / n,
        unsupported,
    )
