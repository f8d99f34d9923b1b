"""ROUGE as py-rouge computes it (Diego999/py-rouge 1.1, the scorer behind the ROUGE tables of
DenoiseSum, PlanSum and COOP), reimplemented here because the package no longer imports (it needs
`pkg_resources`, gone from setuptools) and its tokenizer needs NLTK data we cannot download.

The behaviour reproduced, with py-rouge's defaults `stemming=True, ensure_compatibility=True,
apply_avg=True, alpha=0.5`; no length limit by default (py-rouge's default cuts summaries at 665
characters, which leaves the Yelp test summaries whole), see `PooledRouge`:

* Sentences are the lines of a summary ('\\n'); nothing else splits sentences.
* Each sentence is lower-cased, every character outside [A-Za-z0-9] becomes a space, and the result
  goes through NLTK's word tokenizer, which here only splits "gonna", "gotta", "gimme", "lemme",
  "wanna" in two ("cannot" is shielded from it and stays one word).
* Words longer than 3 characters are mapped through py-rouge's WordNet exception table (e.g.
  "children" -> "child", "better" -> "well", plus DUC-2004 fixes), otherwise stemmed by NLTK's
  Porter stemmer in its ORIGINAL_ALGORITHM mode.
* ROUGE-N: counts are *pooled* over an entity's references (n-gram totals of the hypothesis,
  of the references and of the clipped overlaps are summed over references) and P/R/F come from
  the totals. With one reference per entity this is plain per-pair ROUGE-N. (py-rouge counts
  len - n + 1 n-grams, i.e. -1 bigrams in a text with no words, where we count 0; this only
  matters when one of several references has no alphanumeric word at all.)
* ROUGE-L: summary-level LCS. For each reference sentence, the LCS with every hypothesis sentence
  is traced back and the hit positions in the reference sentence are united; a hit counts while
  the hypothesis still has an unused copy of the word (across all reference sentences). Totals
  are pooled over references as above. With one sentence per summary (no newlines) this is the
  plain LCS of the two summaries.
* Each entity's F1 is averaged over entities (apply_avg).
"""

from __future__ import annotations

import importlib.metadata
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from denoisesum.errors import DenoiseSumError
from denoisesum.extras import install_hint

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")
# NLTK's word tokenizer turns "cannot" into "can not"; py-rouge (like ROUGE-1.5.5) keeps one word.
_CANNOT = "cannot"
_CANNOT_SHIELD = "_cannot_"
_WORDNET_FILES = ("rouge/wordnet_key_value.txt", "rouge/wordnet_key_value_special_cases.txt")


@cache
def _wordnet_table() -> dict[str, str]:
    """py-rouge's word -> lemma table, read from the installed py-rouge distribution's data files.

    Read as plain files: importing the `rouge` package itself fails on current setuptools.
    """
    try:
        dist = importlib.metadata.distribution("py-rouge")
    except importlib.metadata.PackageNotFoundError:
        raise DenoiseSumError(
            install_hint("the pooled (py-rouge style) scorer (py-rouge's data files)", "eval")
        ) from None
    table: dict[str, str] = {}
    for name in _WORDNET_FILES:
        path = dist.locate_file(name)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise DenoiseSumError(f"cannot read py-rouge data file {path}: {exc}") from None
        for line in text.splitlines():
            if line.strip():
                word, lemma = line.strip().split("|")
                table[word] = lemma
    return table


@cache
def _nltk_tools():
    from nltk.stem.porter import PorterStemmer
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer(), PorterStemmer(PorterStemmer.ORIGINAL_ALGORITHM)


def _stem(token: str) -> str:
    if len(token) <= 3:
        return token
    table = _wordnet_table()
    if token in table:
        return table[token]
    return _nltk_tools()[1].stem(token)


def tokenize_sentence(sentence: str, split_contractions: bool = True) -> list[str]:
    """One sentence as py-rouge sees it: lower-cased, alphanumeric, tokenized, stemmed words."""
    text = _NON_ALNUM.sub(" ", sentence.lower()).strip()
    if split_contractions:
        # NLTK's sentence splitter would run first in word_tokenize, but with no punctuation left
        # it cannot split anything, so the word tokenizer alone gives the same tokens (and needs
        # no downloaded Punkt model).
        tokens = _nltk_tools()[0].tokenize(text.replace(_CANNOT, _CANNOT_SHIELD))
    else:
        tokens = text.split()
    stemmed = " ".join(_stem(t) for t in tokens)
    return stemmed.replace(_CANNOT_SHIELD, _CANNOT).split()


def truncate(sentences: list[str], limit: int | None, unit: str) -> list[str]:
    """Keep the first `limit` words (whitespace-separated) or characters of a summary.

    py-rouge counts "bytes" as characters of the stripped sentences, without separators, and
    takes a limit of 0 as no limit.
    """
    if not limit:
        return sentences
    kept: list[str] = []
    used = 0
    for sentence in sentences:
        parts = sentence.split() if unit == "words" else sentence.strip()
        size = len(parts)
        if used + size < limit:
            kept.append(" ".join(parts) if unit == "words" else parts)
            used += size
            continue
        rest = parts[: limit - used]
        kept.append(" ".join(rest) if unit == "words" else rest)
        break
    return kept


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _lcs_hits(ref: list[str], hyp: list[str]) -> list[int]:
    """Positions in `ref` on one LCS of ref and hyp, traced back with py-rouge's tie-breaking
    (a diagonal match first, then "up" when it is at least as long as "left")."""
    m, n = len(ref), len(hyp)
    table = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        row, above = table[i], table[i - 1]
        for j in range(1, n + 1):
            if ref[i - 1] == hyp[j - 1]:
                row[j] = above[j - 1] + 1
            else:
                row[j] = above[j] if above[j] >= row[j - 1] else row[j - 1]
    hits = []
    i, j = m, n
    while i and j:
        if ref[i - 1] == hyp[j - 1]:
            i, j = i - 1, j - 1
            hits.append(i)
        elif table[i - 1][j] >= table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return hits


def _union_lcs_overlap(hyp: list[list[str]], ref: list[list[str]]) -> int:
    """Summary-level LCS hits (ROUGE-L numerator) of a hypothesis against one reference."""
    budget = Counter(t for sentence in hyp for t in sentence)
    overlap = 0
    for ref_sentence in ref:
        union: set[int] = set()
        for hyp_sentence in hyp:
            union.update(_lcs_hits(ref_sentence, hyp_sentence))
        for pos in sorted(union):
            token = ref_sentence[pos]
            # Only the hypothesis side needs clipping: hits are distinct reference positions, so
            # a word can never be hit more often than the reference has it.
            if budget[token] > 0:
                budget[token] -= 1
                overlap += 1
    return overlap


def _f1(hyp_count: int, ref_count: int, overlap: int) -> float:
    precision = overlap / hyp_count if hyp_count > 0 else 0.0
    recall = overlap / ref_count if ref_count > 0 else 0.0
    if precision == 0.0 or recall == 0.0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class PooledRouge:
    """Pooled multi-reference ROUGE-1/2/L F1, computed the way py-rouge does.

    `length_limit`/`length_unit` truncate every summary first, like py-rouge's `limit_length`
    ("words" or "bytes"); None (the default) scores whole summaries, as papers scoring full
    opinion summaries use it (`limit_length=False`).

    `split_contractions=False` splits words on spaces only, keeping "gotta", "gonna", "wanna"
    whole instead of NLTK's "got ta"...; not py-rouge's behaviour, but what some "py-rouge style"
    reimplementations do (the figures quoted in ../shared/data's README were made that way).
    """

    length_limit: int | None = None
    length_unit: str = "words"
    split_contractions: bool = True

    def __post_init__(self) -> None:
        if self.length_unit not in ("words", "bytes"):
            raise DenoiseSumError(
                f"length_unit must be 'words' or 'bytes', not '{self.length_unit}'"
            )

    def _prepare(self, summary: str) -> list[list[str]]:
        sentences = truncate(summary.split("\n"), self.length_limit, self.length_unit)
        return [tokenize_sentence(s, self.split_contractions) for s in sentences]

    def score(self, hypothesis: str, references: Sequence[str]) -> dict[str, float]:
        """F1 (0-1) of one hypothesis against its references, counts pooled over references."""
        hyp = self._prepare(hypothesis)
        refs = [self._prepare(r) for r in references]
        hyp_flat = [t for s in hyp for t in s]
        scores = {}
        for n in (1, 2):
            hyp_ngrams = _ngrams(hyp_flat, n)
            totals = [0, 0, 0]
            for ref in refs:
                ref_flat = [t for s in ref for t in s]
                ref_ngrams = _ngrams(ref_flat, n)
                totals[0] += sum(hyp_ngrams.values())
                totals[1] += sum(ref_ngrams.values())
                totals[2] += sum((hyp_ngrams & ref_ngrams).values())
            scores[f"rouge{n}"] = _f1(*totals)
        totals = [0, 0, 0]
        for ref in refs:
            totals[0] += len(hyp_flat)
            totals[1] += sum(len(s) for s in ref)
            totals[2] += _union_lcs_overlap(hyp, ref)
        scores["rougeL"] = _f1(*totals)
        return scores
