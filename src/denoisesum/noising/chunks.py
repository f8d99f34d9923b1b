"""Chunk-level segment noise (paper Algorithm 1, ChunkAlter) and the shallow parser it needs.

Shallow parsing: spaCy's tagger (the offline `en_core_web_sm` model) assigns Penn Treebank tags
to our own tokens; a small grammar over those tags groups them into CoNLL-2000 style chunks
(NP, VP, ADJP, ADVP, PP, SBAR, PRT, and O for everything else, one token each). The paper used
the FLAIR chunker, which needs downloaded weights; this grammar follows the CoNLL-2000 chunk
definitions closely enough for noising, where chunks are only shuffled and swapped.

Chunk alteration: drop each candidate chunk with probability p_remove, take the chunk-label
sequence of another review as a template, and fill each slot with a remaining candidate chunk of
that label (without replacement) or else a random corpus chunk of that label.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import regex

from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.io import atomic_write
from denoisesum.text import load_spacy

# One letter per Penn tag class, so the chunk grammar is a regular expression over a string.
_TAG_CODES = {
    **dict.fromkeys(["DT", "PDT", "PRP$", "WP$"], "D"),
    **dict.fromkeys(["JJ", "JJR", "JJS"], "J"),
    **dict.fromkeys(["NN", "NNS", "NNP", "NNPS", "FW"], "N"),
    "CD": "C",
    "POS": "S",
    "MD": "M",
    "TO": "T",
    "IN": "I",
    "RP": "Q",
    **dict.fromkeys(["PRP", "EX", "WP"], "P"),
    **dict.fromkeys(["RB", "RBR", "RBS"], "R"),
    **dict.fromkeys(["VB", "VBD", "VBG", "VBN", "VBP", "VBZ"], "V"),
    **dict.fromkeys(["WDT", "WRB"], "W"),
}
# Prepositions that open a clause are SBAR in CoNLL-2000, not PP.
_SUBORDINATORS = {
    "because",
    "although",
    "though",
    "if",
    "while",
    "since",
    "whereas",
    "unless",
    "until",
    "that",
    "whether",
    "once",
    "so",
    "as",
    "than",
    "before",
    "after",
}
_GRAMMAR = regex.compile(
    r"""
    (?P<NP>D*(?:R?J|C)*N+S?|P|D+[JC]*|C+)
  | (?P<VP>R*[MV](?:R*[MV])*|T(?:R*V)+)
  | (?P<ADJP>R*J+)
  | (?P<ADVP>R+)
  | (?P<SBAR>[BW])
  | (?P<PP>[IT])
  | (?P<PRT>Q)
  | (?P<O>.)
""",
    regex.VERBOSE,
)

Chunk = tuple[str, int, int]  # (label, start, end) over a token list


def chunk_tags(tokens: Sequence[str], tags: Sequence[str]) -> list[Chunk]:
    """Group tokens with Penn tags into labelled chunks covering every token in order."""
    codes = "".join(
        "B" if tag == "IN" and tok in _SUBORDINATORS else _TAG_CODES.get(tag, "O")
        for tok, tag in zip(tokens, tags, strict=True)
    )
    return [(m.lastgroup, m.start(), m.end()) for m in _GRAMMAR.finditer(codes)]


class Chunker:
    def __init__(self, nlp=None, batch_size: int = 256) -> None:
        self.nlp = nlp or load_spacy()
        self.batch_size = batch_size

    def chunk_many(self, token_lists: Iterable[Sequence[str]]) -> list[list[Chunk]]:
        from spacy.tokens import Doc

        token_lists = [list(t) for t in token_lists]
        docs = (Doc(self.nlp.vocab, words=t) for t in token_lists)
        tagged = self.nlp.pipe(docs, batch_size=self.batch_size)
        return [
            chunk_tags(t, [w.tag_ for w in doc]) for t, doc in zip(token_lists, tagged, strict=True)
        ]


@dataclass
class ChunkInventory:
    """Corpus chunks by label (to fill template slots) and label sequences (templates)."""

    chunks: dict[str, list[tuple[str, ...]]]
    templates: list[list[str]]

    @classmethod
    def build(
        cls, token_lists: Sequence[Sequence[str]], parses: Sequence[list[Chunk]]
    ) -> ChunkInventory:
        chunks: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        templates = []
        for tokens, parse in zip(token_lists, parses, strict=True):
            templates.append([label for label, _, _ in parse])
            for label, start, end in parse:
                chunks[label].append(tuple(tokens[start:end]))
        if not templates:
            raise DenoiseSumError("cannot build a chunk inventory from no reviews")
        return cls(dict(chunks), templates)

    def sample_template(self, rng: np.random.Generator) -> list[str]:
        return self.templates[rng.integers(len(self.templates))]

    def sample_chunk(self, label: str, rng: np.random.Generator) -> tuple[str, ...]:
        pool = self.chunks[label]
        return pool[rng.integers(len(pool))]

    def save(self, path: str | Path) -> None:
        data = {"format": "denoisesum-chunks/1", "chunks": self.chunks, "templates": self.templates}
        with atomic_write(path, "wb") as handle:
            handle.write(gzip.compress(json.dumps(data).encode("utf-8"), mtime=0))

    @classmethod
    def load(cls, path: str | Path) -> ChunkInventory:
        try:
            data = json.loads(gzip.decompress(Path(path).read_bytes()))
        except (OSError, ValueError) as exc:
            raise InputError(f"not a chunk inventory: {exc}", path=path) from exc
        chunks = {k: [tuple(c) for c in v] for k, v in data["chunks"].items()}
        return cls(chunks, data["templates"])


@dataclass
class PlacedChunk:
    label: str
    tokens: tuple[str, ...]
    source: str  # "candidate" or "inventory"


def chunk_noise(
    tokens: Sequence[str],
    parse: list[Chunk],
    inventory: ChunkInventory,
    p_remove: float,
    rng: np.random.Generator,
) -> list[PlacedChunk]:
    """One chunk-altered version of `tokens` (whose chunks are `parse`)."""
    kept: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for label, start, end in parse:
        if rng.random() >= p_remove:
            kept[label].append(tuple(tokens[start:end]))
    out = []
    for label in inventory.sample_template(rng):
        pool = kept.get(label)
        if pool:
            out.append(PlacedChunk(label, pool.pop(rng.integers(len(pool))), "candidate"))
        elif label in inventory.chunks:
            out.append(PlacedChunk(label, inventory.sample_chunk(label, rng), "inventory"))
    return out
