"""Vocabulary: token <-> id, with special tokens first. Saved as JSON beside every model."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import InputError
from denoisesum.io import read_json, write_json

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(4)
FORMAT = "denoisesum-vocab/1"


class Vocab:
    def __init__(
        self,
        tokens: Sequence[str],
        counts: Sequence[int] | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"vocabulary must start with the special tokens {SPECIALS}")
        self.tokens = list(tokens)
        self.counts = list(counts) if counts is not None else [0] * len(tokens)
        self.tokenizer = tokenizer or Tokenizer()
        self.index = {token: i for i, token in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            raise ValueError("vocabulary has duplicate tokens")

    @classmethod
    def from_counts(
        cls,
        counts: Mapping[str, int],
        min_count: int = 1,
        max_size: int | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> Vocab:
        """Most frequent tokens first (ties by token, so the result is deterministic).

        `max_size` counts the special tokens too.
        """
        kept = sorted(
            ((t, c) for t, c in counts.items() if c >= min_count and t not in SPECIALS),
            key=lambda tc: (-tc[1], tc[0]),
        )
        if max_size is not None:
            kept = kept[: max(0, max_size - len(SPECIALS))]
        return cls(
            [*SPECIALS, *(t for t, _ in kept)],
            [0] * len(SPECIALS) + [c for _, c in kept],
            tokenizer,
        )

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self.index

    def id(self, token: str) -> int:
        return self.index.get(token, UNK_ID)

    def encode(self, tokens: Iterable[str]) -> list[int]:
        get = self.index.get
        return [get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int], strip_specials: bool = True) -> list[str]:
        tokens = (self.tokens[i] for i in ids)
        if strip_specials:
            return [t for t in tokens if t not in SPECIALS]
        return list(tokens)

    def encode_text(self, text: str) -> list[int]:
        return self.encode(self.tokenizer.tokenize(text))

    def save(self, path: str | Path) -> None:
        write_json(
            path,
            {
                "format": FORMAT,
                "tokenizer": self.tokenizer.to_dict(),
                "tokens": self.tokens,
                "counts": self.counts,
            },
        )

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        data = read_json(path)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError(f"not a denoisesum vocabulary (expected format {FORMAT})", path=path)
        _check_entries(data, path)
        try:
            return cls(data["tokens"], data.get("counts"), Tokenizer(**data.get("tokenizer", {})))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed vocabulary: {exc}", path=path) from exc


def _check_entries(data: dict, path: str | Path) -> None:
    """Every token a string and every count a whole number: a token such as 5 would load and
    fail later, far from this file."""
    for key, kind, what in (("tokens", str, "a string"), ("counts", int, "a whole number")):
        entries = data.get(key)
        if entries is None and key == "counts":
            continue
        if not isinstance(entries, list):
            raise InputError(f"malformed vocabulary: '{key}' must be a list", path=path)
        for i, entry in enumerate(entries):
            if not isinstance(entry, kind) or isinstance(entry, bool):
                raise InputError(
                    f"malformed vocabulary: entry {i} of '{key}' is "
                    f"{json.dumps(entry)[:40]}, not {what}",
                    path=path,
                )
