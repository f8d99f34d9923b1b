"""Which reviews may serve as candidate summaries (paper §3.1, §4 "constraints").

Presets match the paper: Yelp keeps reviews of 50-90 tokens with fewer than 3 symbol tokens;
Rotten Tomatoes keeps single sentences of 20-30 tokens, with fewer than 3 symbols and no first
person singular. A *symbol* is a token with no letter or digit that is not ordinary sentence
punctuation: "$", "*", "&", "/", emoji and emoticons count; ". , ! ? ; : ' \" ( ) ..." do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from denoisesum.config import Range, at_least
from denoisesum.errors import ConfigError

PUNCTUATION = {".", ",", "!", "?", ";", ":", "'", '"', "(", ")", "...", "-", "--"}
FIRST_PERSON_SINGULAR = {"i", "me", "my", "mine", "myself", "im", "i'm"}
SENTENCE_END = {".", "!", "?"}


def is_symbol(token: str) -> bool:
    return token not in PUNCTUATION and not any(ch.isalnum() for ch in token)


@dataclass
class CandidateConfig:
    min_tokens: int = 50
    max_tokens: int = 90
    max_symbols: int = 2  # "fewer than 3 symbol tokens"
    allow_first_person: bool = True
    one_sentence: bool = False
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "min_tokens": at_least(1),
        "max_tokens": at_least(1),
        "max_symbols": at_least(0),
    }

    def validate(self) -> None:
        if self.max_tokens < self.min_tokens:
            why = f"{self.max_tokens} must be at least min_tokens ({self.min_tokens})"
            raise ConfigError(f"max_tokens {why}", key="max_tokens", reason=why)


PRESETS = {
    "yelp": CandidateConfig(50, 90, 2, True, False),
    "rt": CandidateConfig(20, 30, 2, False, True),
    "generic": CandidateConfig(20, 100, 2, True, False),
}


def preset(name: str) -> CandidateConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown candidate preset '{name}' (known: {', '.join(PRESETS)})"
        ) from None


def rejection(tokens: Sequence[str], cfg: CandidateConfig) -> str | None:
    """Why `tokens` cannot be a candidate summary, or None if it can."""
    if not cfg.min_tokens <= len(tokens) <= cfg.max_tokens:
        return "length"
    if sum(is_symbol(t) for t in tokens) > cfg.max_symbols:
        return "symbols"
    if not cfg.allow_first_person and any(t in FIRST_PERSON_SINGULAR for t in tokens):
        return "first person"
    if cfg.one_sentence and any(t in SENTENCE_END for t in tokens[:-1]):
        return "several sentences"
    return None
