"""Opinosis (Ganesan, Zhai & Han, COLING 2010): abstractive summaries from a word graph.

Implemented from the paper's description:

* **Graph.** One node per distinct (lower-cased word, Penn POS tag) of the entity's sentences (or
  per word, with `pos=False`); an edge joins words that follow each other in a sentence. Every node
  keeps its positional references: the (sentence, position) pairs where it occurs.
* **Paths.** A search starts at every *valid start node*: a word whose mean position in its
  sentences is at most `start_position` (15), and not a verb, preposition or conjunction. It
  follows edges while the path's *redundancy* stays at least `redundancy` (σ_r = 2): the number
  of sentences that contain the path's words in order, each within `gap` (3) positions of the
  previous one (the paper's gapped intersection of positional references, so "the staff was very
  friendly" supports "the staff was friendly").
* **Candidates.** A path is a candidate when it reaches a *valid end node*: sentence-final
  punctuation, a comma or a coordinating conjunction (dropped from the output), and is well formed:
  at least three words, a noun or pronoun and a verb (with POS tags), and it does not end on a
  determiner, preposition, conjunction or the like. Its score is the paper's `wt_loglen`:
  (1/|W|) · Σ_{i=2..|W|} log2(i) · r(v_1..v_i), which favours long paths that stay redundant.
* **Collapse.** Candidates that share a prefix ending at a hub (a form of "to be") are fused into
  one sentence ("the staff is friendly and fast"), scored by the mean of the fused paths; up to
  three continuations, none mostly contained in another.
* **Output.** Candidates by score, skipping any whose word set has Jaccard similarity above
  `similarity` (0.5) with one already taken, until the word budget is spent.

Opinosis was designed for hundreds of redundant sentences. Eight Yelp reviews rarely say the same
thing in the same words: on the MeanSum test set, 90 of 100 entities have no path with σ_r = 2
that reaches an end node, so a strict Opinosis returns nothing for them. By default the budget is
therefore filled in tiers: every path with redundancy ≥ σ_r first, then those one sentence less
redundant, down to `min_redundancy` (1, i.e. gapped compressions of single sentences). Set
`min_redundancy=redundancy` for the strict algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

from denoisesum.baselines.base import (
    Summarizer,
    compared_words,
    fill_budget,
    split_sentences,
    word_count,
)
from denoisesum.baselines.options import DEFAULT_WORDS
from denoisesum.data.tokenizer import detokenize
from denoisesum.text import load_spacy

Key = tuple[str, str]  # (lower-cased word, POS tag; "" without tags)
Overlap = dict[int, list[int]]  # sentence -> positions where the path's last word is
Tagger = Callable[[list[list[str]]], list[list[str]]]

_FINAL = {".", "!", "?", "..."}  # a path ends here and goes no further
_JOINS = {",", ";", "and", "but", "yet"}  # a path may end here, or go on
_HUBS = {"is", "are", "was", "were", "am", "'s", "'re", "'m"}
_NOT_LAST_TAGS = {
    "DT",
    "IN",
    "CC",
    "TO",
    "PRP$",
    "WDT",
    "WP",
    "WP$",
    "WRB",
    "POS",
    "PDT",
    "EX",
    "MD",
    "RP",
    "HYPH",
    ",",
    ":",
    "``",
    "''",
    "-LRB-",
}
_NOT_LAST_WORDS = {
    "a",
    "an",
    "the",
    "of",
    "to",
    "in",
    "on",
    "at",
    "for",
    "with",
    "from",
    "by",
    "and",
    "but",
    "or",
    "so",
    "as",
    "if",
    "than",
    "that",
    "this",
    "which",
    "who",
    "my",
    "our",
    "your",
    "their",
    "his",
    "her",
    "its",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "very",
    "really",
    "too",
    "not",
    "n't",
    "i",
    "we",
    "it",
}
_NO_START = {"and", "but", "or", "yet", "so", "because"}
# tags of words that cannot open a sentence (a verb, preposition or particle left mid-clause)
_NO_START_TAGS = ("VB", "MD", "IN", "TO", "CC", "RP", "POS", "WDT")
MAX_FUSED = 3  # paths fused at one hub


@cache
def _spacy():
    return load_spacy()


def spacy_tagger(sentences: list[list[str]]) -> list[list[str]]:
    """Penn Treebank tags of pre-tokenized sentences, from the project's spaCy pipeline."""
    from spacy.tokens import Doc

    nlp = _spacy()
    docs = nlp.pipe(Doc(nlp.vocab, words=s) for s in sentences)
    return [[t.tag_ for t in doc] for doc in docs]


@dataclass
class WordGraph:
    """The Opinosis graph: nodes with positional references, edges between adjacent words."""

    references: dict[Key, Overlap] = field(default_factory=dict)
    successors: dict[Key, dict[Key, None]] = field(default_factory=dict)  # ordered set

    @classmethod
    def build(cls, sentences: Sequence[Sequence[Key]]) -> WordGraph:
        graph = cls()
        for sid, keys in enumerate(sentences):
            for position, key in enumerate(keys, start=1):
                graph.references.setdefault(key, {}).setdefault(sid, []).append(position)
                graph.successors.setdefault(key, {})
                if position > 1:
                    graph.successors[keys[position - 2]][key] = None
        return graph

    def mean_position(self, key: Key) -> float:
        positions = [p for ps in self.references[key].values() for p in ps]
        return sum(positions) / len(positions)


def gapped_overlap(overlap: Overlap, references: Overlap, gap: int) -> Overlap:
    """Where the next word follows the path in the same sentence, at most `gap` positions on."""
    out: Overlap = {}
    for sid, positions in references.items():
        before = overlap.get(sid)
        if before:
            kept = [p for p in positions if any(0 < p - q <= gap for q in before)]
            if kept:
                out[sid] = kept
    return out


@dataclass(frozen=True)
class Candidate:
    words: tuple[str, ...]  # the sentence, without its end node
    score: float
    redundancy: int  # sentences supporting the whole path (the least of fused paths)


Path = tuple[tuple[Key, ...], float, int]  # (nodes, wt_loglen score, redundancy)


class Opinosis(Summarizer):
    """Fuse the most redundant word-graph paths of the entity's sentences into a summary."""

    name = "opinosis"

    def __init__(
        self,
        *,
        words: int = DEFAULT_WORDS,
        redundancy: int = 2,
        min_redundancy: int = 1,
        gap: int = 3,
        start_position: float = 15.0,
        similarity: float = 0.5,
        max_length: int = 30,
        collapse: bool = True,
        pos: bool = True,
        tagger: Tagger | None = None,
        max_steps: int = 200_000,
    ) -> None:
        self.words = words
        self.redundancy = redundancy
        self.min_redundancy = min(min_redundancy, redundancy)
        self.gap = gap
        self.start_position = start_position
        self.similarity = similarity
        self.max_length = max_length
        self.collapse = collapse
        self.tagger = (tagger or spacy_tagger) if pos else None
        self.max_steps = max_steps  # a guard: the search is bounded even on freak inputs

    def keys(self, reviews: Sequence[str]) -> list[list[Key]]:
        sentences = [s for r in reviews for s in split_sentences(r)]
        tags = self.tagger(sentences) if self.tagger else [[""] * len(s) for s in sentences]
        # "!" and "." only end a sentence: one end node lets "great." and "great!" agree
        return [
            [
                ("." if w in _FINAL else w.lower(), "." if w in _FINAL else t)
                for w, t in zip(s, ts, strict=True)
            ]
            for s, ts in zip(sentences, tags, strict=True)
        ]

    def candidates(self, reviews: Sequence[str]) -> list[Candidate]:
        """Every valid path (fused at hubs when `collapse`), best first: by redundancy tier
        (at least σ_r, then each level below), then by score."""
        paths = self._search(WordGraph.build(self.keys(reviews)))
        found = self._fuse(paths) if self.collapse else [_candidate(p) for p in paths]
        return sorted(found, key=lambda c: (-min(c.redundancy, self.redundancy), -c.score))

    def summarize(self, reviews: Sequence[str], *, references: Sequence[str] = ()) -> str:
        picked: list[Candidate] = []
        for candidate in self.candidates(reviews):
            if all(_jaccard(candidate.words, p.words) <= self.similarity for p in picked):
                picked.append(candidate)
        texts = [detokenize([*c.words, "."]) for c in picked]
        chosen = fill_budget(range(len(texts)), [word_count(t) for t in texts], self.words)
        return " ".join(texts[i] for i in chosen)

    # ------------------------------------------------------------------ path search

    def _is_start(self, graph: WordGraph, key: Key) -> bool:
        word, tag = key
        return (
            any(c.isalnum() for c in word)
            and word not in _NO_START
            and not tag.startswith(_NO_START_TAGS)
            and graph.mean_position(key) <= self.start_position
        )

    def _search(self, graph: WordGraph) -> list[Path]:
        # One search at the lowest redundancy wanted: a path's redundancy never grows as it
        # extends, so the paths of every higher tier are among these.
        found: list[Path] = []
        steps = [self.max_steps]
        for key, references in graph.references.items():
            if self._is_start(graph, key) and len(references) >= self.min_redundancy:
                self._extend(graph, [key], references, 0.0, found, steps)
        return found

    def _extend(
        self,
        graph: WordGraph,
        path: list[Key],
        overlap: Overlap,
        gain: float,
        found: list[Path],
        steps: list[int],
    ) -> None:
        steps[0] -= 1
        if steps[0] < 0:
            return
        for key in graph.successors[path[-1]]:
            following = gapped_overlap(overlap, graph.references[key], self.gap)
            if len(following) < self.min_redundancy:
                continue
            extended = [*path, key]
            # wt_loglen: each prefix's redundancy, weighted by log2 of its length
            total = gain + math.log2(len(extended)) * len(following)
            word = key[0]
            if (word in _FINAL or word in _JOINS) and self._well_formed(path):
                found.append((tuple(extended), total / len(extended), len(following)))
            if word not in _FINAL and len(extended) < self.max_length:
                self._extend(graph, extended, following, total, found, steps)

    def _well_formed(self, body: Sequence[Key]) -> bool:
        words = [w for w, _ in body]
        if len(compared_words(words)) < 3 or words[-1] in _NOT_LAST_WORDS:
            return False
        if self.tagger is None:
            return True
        tags = [t for _, t in body]
        has_subject = any(t.startswith("NN") or t == "PRP" for t in tags)
        has_verb = any(t.startswith("VB") for t in tags)
        return has_subject and has_verb and tags[-1] not in _NOT_LAST_TAGS

    # ------------------------------------------------------------------ collapse

    def _fuse(self, paths: list[Path]) -> list[Candidate]:
        """Fuse paths sharing a prefix up to a hub (within one redundancy tier); the rest stay
        as they are."""
        groups: dict[tuple, list[Path]] = {}
        for path in paths:
            nodes, _, redundancy = path
            hub = next((i for i, (w, _) in enumerate(nodes[1:-2], start=1) if w in _HUBS), None)
            if hub is not None:
                tier = min(redundancy, self.redundancy)
                groups.setdefault((nodes[: hub + 1], tier), []).append(path)
        fused: set[tuple[Key, ...]] = set()
        out = []
        for (anchor, _), members in groups.items():
            members.sort(key=lambda m: -m[1])
            tails: list[tuple[tuple[str, ...], Path]] = []
            for path in members:
                tail = tuple(w for w, _ in path[0][len(anchor) : -1])
                # containment, not Jaccard: "friendly" adds nothing to "very friendly"
                if len(tails) < MAX_FUSED and all(
                    _containment(tail, t) <= self.similarity for t, _ in tails
                ):
                    tails.append((tail, path))
            if len(tails) < 2:
                continue
            words = [w for w, _ in anchor]
            for i, (tail, _) in enumerate(tails):
                if i:
                    words.append("and" if i == len(tails) - 1 else ",")
                words.extend(tail)
            out.append(
                Candidate(
                    tuple(words),
                    sum(p[1] for _, p in tails) / len(tails),
                    min(p[2] for _, p in tails),
                )
            )
            fused.update(p[0] for _, p in tails)
        out.extend(_candidate(p) for p in paths if p[0] not in fused)
        return out


def _candidate(path: Path) -> Candidate:
    nodes, score, redundancy = path
    return Candidate(tuple(w for w, _ in nodes[:-1]), score, redundancy)


def _jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(compared_words(a)), set(compared_words(b))
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


def _containment(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(compared_words(a)), set(compared_words(b))
    return len(sa & sb) / min(len(sa), len(sb)) if sa and sb else 1.0
