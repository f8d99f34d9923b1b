"""Word-level tokenizer and detokenizer for review text.

Tokenization follows Penn Treebank conventions for clitics ("can't" -> "ca n't", "it's" -> "it 's"),
keeps URLs, emails, numbers ("5.99", "1,000", "3:30"), abbreviations ("u.s.") and emoji as single
tokens, collapses runs of "!"/"?" and dots, and splits sentences glued without a space
("was great.The staff" -> "was great . the staff"). Lower-cases by default, as the paper's data.

The detokenizer turns model output back into text for people: clitics re-attached, no space
before closing punctuation, sentence case, "i" -> "I".
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import regex

# Order matters: earlier alternatives win at the same position.
# The email and abbreviation scans are bounded (a local part of at most 64 characters, the
# RFC 5321 limit; at most 32 letters): unbounded, each was retried at every position of a long
# run that fails ("____...", "a.a.a...a"), which made tokenizing quadratic in the input.
_TOKEN_RE = regex.compile(
    r"""
    (?P<url>(?:https?://|www\.)[^\s<>"]*[^\s<>".,;:!?)\]'])
  | (?P<email>[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+)
  | (?P<emoticon>(?<![\w:;=])(?:[:;=][-^']?[()\[\]dDpP/|*]|<3)(?![\w)(]))
  | (?P<emoji>[\U0001F1E6-\U0001F1FF]{2}
        |\p{Extended_Pictographic}(?:[\p{EMod}\uFE0F\u20E3]|\u200D\p{Extended_Pictographic})*)
  | (?P<abbrev>(?<!\p{L})(?:\p{L}\.){2,32}+(?!\p{L}))
  | (?P<number>\d+(?:[.,:/]\d+)*(?:(?:st|nd|rd|th)(?!\p{L}))?)
  | (?P<word>[\p{L}\p{M}\p{N}]+(?:'[\p{L}\p{M}\p{N}]+|-\p{L}[\p{L}\p{M}\p{N}]*)*)
  | (?P<dots>\.{2,})
  | (?P<bang>[!?]+)
  | (?P<dashes>-{2,})
  | (?P<other>\S)
    """,
    regex.VERBOSE,
)

# Normalise typographic variants so "don’t" and "don't" are the same token.
_TRANSLATE = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u02bc": "'",
        "\u2032": "'",
        "`": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2033": '"',
        "\u2013": "-",
        "\u2014": "--",
        "\u2026": "...",
        "\u00a0": " ",
    }
)

CLITICS = ("n't", "'s", "'m", "'re", "'ve", "'ll", "'d")
_NO_SPACE_BEFORE = {".", ",", "!", "?", ";", ":", ")", "]", "}", "%", "...", *CLITICS}
_NO_SPACE_AFTER = {"(", "[", "{", "$", "#"}
_SENTENCE_END = {".", "!", "?"}


def _split_clitic(word: str) -> list[str]:
    lower = word.lower()
    if lower.endswith("n't") and len(word) > 3:
        return [word[:-3], word[-3:]]
    for clitic in CLITICS[1:]:
        if lower.endswith(clitic) and len(word) > len(clitic):
            return [word[: -len(clitic)], word[-len(clitic) :]]
    return [word]


@dataclass(frozen=True)
class Tokenizer:
    lowercase: bool = True

    def normalize(self, text: str) -> str:
        return unicodedata.normalize("NFC", text).translate(_TRANSLATE)

    def tokenize(self, text: str) -> list[str]:
        tokens: list[str] = []
        for match in _TOKEN_RE.finditer(self.normalize(text)):
            kind, token = match.lastgroup, match.group()
            if kind == "word" and "'" in token:
                tokens.extend(_split_clitic(token))
            elif kind == "dots":
                tokens.append("...")
            elif kind == "bang":
                tokens.append("?" if "?" in token else "!")
            else:
                tokens.append(token)
        if self.lowercase:
            return [t.lower() for t in tokens]
        return tokens

    def __call__(self, text: str) -> list[str]:
        return self.tokenize(text)

    def to_dict(self) -> dict:
        return {"lowercase": self.lowercase}


def detokenize(tokens: Sequence[str] | str, sentence_case: bool = True) -> str:
    """Join tokens into readable text: "i ca n't wait . the staff" -> "I can't wait. The staff"."""
    if isinstance(tokens, str):
        tokens = tokens.split()
    out: list[str] = []
    glue_next = False
    open_quote = False
    capitalize = sentence_case
    for token in tokens:
        glue = glue_next or token in _NO_SPACE_BEFORE
        glue_next = token in _NO_SPACE_AFTER
        if token == '"':
            glue, glue_next = (True, False) if open_quote else (glue, True)
            open_quote = not open_quote
        if sentence_case:
            if token == "i":
                token = "I"
            elif capitalize and token[:1].isalpha() and "://" not in token:
                token = token[0].upper() + token[1:]
            if token[:1].isalnum():
                capitalize = False
            elif token in _SENTENCE_END:
                capitalize = True
        out.append(token if glue or not out else " " + token)
    return "".join(out)
