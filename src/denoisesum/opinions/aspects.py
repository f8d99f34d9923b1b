"""The aspect lexicon: the things reviewers of a domain talk about ("broth", "pork ramen",
"wait", "front desk"), learnt from a review corpus, so that summarizing can tell which words of
a sentence name what the opinion is about without a tagger.

    lexicon = build_lexicon(texts_by_entity)       # spaCy's tagger, once, at `fit`
    lexicon.save(model_dir)                         # aspects.json beside the model
    Lexicon.load(model_dir).mentions(tokens)        # ["pork ramen", "broth"]: a dictionary look-up

A term is a noun (Penn tags NN, NNS; folded to its singular: `text.fold`) or a two-word
compound ending in one (noun + noun, or a non-evaluative adjective + noun: "fried rice",
"happy hour"), seen in at least `min_entities` entities of the corpus, and tagged a noun in
most of its uses (so "order" the verb does not make every "we ordered" an opinion about the
order). Each term keeps the number of entities whose reviews use it: a term that nearly every
entity's reviews use ("food", "place", "service") says little about one entity, one that few do
("pho", "valet") is specific (`specificity`).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from denoisesum.errors import InputError
from denoisesum.io import file_in, read_json, write_json
from denoisesum.text import STOPWORDS, fold

FILENAME = "aspects.json"
_fold = functools.lru_cache(maxsize=200_000)(fold)  # the same words again and again
NOUN_TAGS = frozenset({"NN", "NNS"})
# words a tagger calls nouns that never name what an opinion is about
NOT_ASPECTS = frozenset(
    """
time times lot lots bit thing things way day days night week weeks year years month months
star stars review reviews yelp something anything everything nothing someone anyone everyone
people guy guys husband wife friend friends boyfriend girlfriend family kid kids son daughter
mom dad today tonight tomorrow yesterday minute minutes hour hours visit visits experience
place spot fact kind sort part end reason idea chance deal couple top type stuff times one ones boy
strip street downtown town area city neighborhood problem job item side option choice point
name person hand home house fan girl lady man woman business restaurant store shop location
issue question word rest number level note note sure thank thanks everyone anything mind
""".split()
)


# adjectives that make no compound: "first time", "big portions", "other location"
PLAIN_ADJECTIVES = frozenset(
    """first second third next last several whole entire multiple different big little small
    new old right hard long late early fair decent high low top large huge local other same only
    few many much full half real main overall general usual regular total previous""".split()
)
MIN_WORD_COUNT = 5  # a word of the corpus at least this often is a word, not a typo
EVALUATIVE_PULL = 60.0  # a word pulling the rating model's stars this much makes an opinion


@dataclass
class Lexicon:
    """Aspect terms (folded, lower case; compounds joined by a space) -> the number of
    entities whose reviews use them, out of `entities`; and the corpus's words (a word
    outside them is likely a typo)."""

    terms: dict[str, int]
    entities: int
    words: frozenset[str] = frozenset()

    def specificity(self, term: str) -> float:
        """How particular a term is to few entities: ln(entities / df), at least 0."""
        df = self.terms.get(term, self.entities)
        return max(0.0, math.log((self.entities + 1) / (df + 1)))

    def mentions(self, tokens: Sequence[str]) -> list[str]:
        """The aspect terms of lower-cased tokens, compounds first (a compound hides its head:
        "pork ramen", not also "ramen"), in order, each once."""
        folded = [_fold(t) for t in tokens]
        found: list[str] = []
        used: set[int] = set()
        for i in range(len(folded) - 1):
            pair = f"{tokens[i]} {folded[i + 1]}"
            if pair in self.terms:
                found.append(pair)
                used.update((i, i + 1))
        for i, word in enumerate(folded):
            if i not in used and word in self.terms:
                found.append(word)
        return list(dict.fromkeys(found))

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / FILENAME
        data = {"entities": self.entities, "terms": self.terms, "words": sorted(self.words)}
        write_json(path, data)
        return path

    @classmethod
    def load(cls, directory: str | Path) -> Lexicon:
        path = file_in(directory, FILENAME)
        data = read_json(path)
        if not (isinstance(data, dict) and isinstance(data.get("terms"), dict)):
            raise InputError("not an aspect lexicon (needs 'entities' and 'terms')", path=path)
        terms = {str(k): int(v) for k, v in data["terms"].items()}
        return cls(terms, int(data["entities"]), frozenset(map(str, data.get("words", []))))


def evaluative_words(rating, threshold: float = EVALUATIVE_PULL) -> list[str]:
    """The words whose pull on a rating model's stars (RatingModel.word_weights) passes
    `threshold`: opinions ("great", "rude", "bland"), never the first word of a compound."""
    return [w for w, pull in rating.word_weights().items() if abs(pull) > threshold]


def merge_lexicons(own: Lexicon, base: Lexicon) -> Lexicon:
    """A domain's lexicon with a base model's: every term of either, the base's own terms
    counted as if the domain had as many entities (its specificity kept), the words of both."""
    scale = own.entities / max(1, base.entities)
    terms = {t: max(1, round(df * scale)) for t, df in base.terms.items()}
    terms.update(own.terms)
    return Lexicon(dict(sorted(terms.items())), own.entities, own.words | base.words)


def sample_reviews(reviews, per_entity: int, max_reviews: int) -> list[tuple[str, str]]:
    """(entity id, text) of at most `per_entity` reviews of each entity (the first ones) and
    `max_reviews` in all, from corpus Reviews: many entities rather than many reviews of a few,
    since a term's specificity counts entities."""
    taken: dict[str, int] = {}
    out = []
    for review in reviews:
        if taken.get(review.entity_id, 0) < per_entity:
            taken[review.entity_id] = taken.get(review.entity_id, 0) + 1
            out.append((review.entity_id, review.text))
            if len(out) >= max_reviews:
                break
    return out


@dataclass
class _Counts:
    entities: Counter  # term -> entities using it
    as_noun: Counter  # word -> uses tagged a noun
    uses: Counter  # word -> uses
    capitalized: Counter  # word -> uses capitalized inside a sentence (a name: "Montreal")


def _terms_of(doc, evaluative: frozenset[str]) -> tuple[set[str], list[str]]:
    """(the terms of one tagged review, its lower-cased words that could head a term)."""
    terms: set[str] = set()
    words = []
    tokens = [(t.text.lower(), t.tag_) for t in doc]
    for i, (word, tag) in enumerate(tokens):
        if not word.isalpha():
            continue
        words.append(word)
        # a lower-case word tagged a proper noun is a dish's foreign name ("pho", "banh")
        noun = tag in NOUN_TAGS or (tag == "NNP" and doc[i].text.islower())
        head = fold(word)
        if not noun or word in STOPWORDS or head in NOT_ASPECTS or len(head) < 3:
            continue
        terms.add(head)
        if i and tokens[i - 1][0].isalpha():
            before, before_tag = tokens[i - 1]
            noun_pair = before_tag in NOUN_TAGS and fold(before) not in NOT_ASPECTS
            plain = before in evaluative or before in STOPWORDS or before in PLAIN_ADJECTIVES
            if (noun_pair or before_tag == "JJ") and not plain:
                terms.add(f"{before} {head}")
    return terms, words


def build_lexicon(
    reviews: Iterable[tuple[str, str]],
    evaluative: Iterable[str] = (),
    min_entities: int = 3,
    min_noun_share: float = 0.6,
    batch_size: int = 256,
    progress=None,
) -> Lexicon:
    """The aspect lexicon of (entity id, review text) pairs, tagged with spaCy (the `train`
    extra). `evaluative`: adjectives that make an opinion, not a compound ("great food")."""
    from denoisesum.text import load_spacy

    nlp = load_spacy()
    evaluative = frozenset(evaluative)
    counts = _Counts(Counter(), Counter(), Counter(), Counter())
    seen: dict[str, set[str]] = {}
    pairs = list(reviews)
    docs = nlp.pipe((text[:5000] for _, text in pairs), batch_size=batch_size)
    for (entity, _), doc in zip(pairs, docs, strict=True):
        terms, words = _terms_of(doc, evaluative)
        counts.uses.update(words)
        counts.as_noun.update(t.text.lower() for t in doc if t.tag_ in NOUN_TAGS | {"NNP"})
        counts.capitalized.update(
            t.text.lower() for t in doc if t.i and t.text[:1].isupper() and not t.is_sent_start
        )
        seen.setdefault(entity, set()).update(terms)
        if progress is not None:
            progress(1)
    for terms in seen.values():
        counts.entities.update(terms)
    return _select(counts, len(seen), min_entities, min_noun_share)


def _select(counts: _Counts, n_entities: int, min_entities: int, min_share: float) -> Lexicon:
    def nounish(word: str) -> bool:
        uses = counts.uses[word] + counts.uses[word + "s"]
        nouns = counts.as_noun[word] + counts.as_noun[word + "s"]
        # a word mostly a verb may still be a common noun ("the wait was an hour")
        return uses > 0 and (nouns / uses >= min_share or (nouns >= 200 and nouns / uses >= 0.3))

    def name(word: str) -> bool:
        return counts.capitalized[word] > 0.5 * max(1, counts.uses[word])

    kept = {}
    for term, df in counts.entities.items():
        words = term.split()
        if df < min_entities or any(name(w) or fold(w) in NOT_ASPECTS for w in words):
            continue
        if nounish(term.split()[-1]):
            kept[term] = df
    words = frozenset(w for w, c in counts.uses.items() if c >= MIN_WORD_COUNT)
    return Lexicon(dict(sorted(kept.items())), n_entities, words)
