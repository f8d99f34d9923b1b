"""Topic models giving p(z) for a summary: LDA over content words, or human categories.

A topic directory holds `topics.json` (format, kind, settings, vocabulary, top words) and, for
LDA, `topics.npz` (alpha [K] and the topic-word weights exp(E[log beta]) [K, V]). Only arrays and
JSON are stored, no pickles.

LDA is trained with gensim's online variational Bayes (`LdaModel`, Hoffman et al. 2010): about a
minute per pass over 100k reviews on one core. Inference is the same variational E-step as
gensim's, but written here and started from a fixed point (gamma = alpha + n_words / K, as in
Blei's lda-c) instead of gensim's random one: gensim draws its start from the model's shared
random state, so the same summary would get a slightly different p(z) depending on what was
inferred before it. Here p(z) depends only on the model and the text.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from scipy.special import digamma

from denoisesum.config import Range, at_least
from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.io import atomic_write, read_json, require_part, write_json
from denoisesum.text import content_words as filter_words
from denoisesum.text import lda_stopwords

FORMAT = "denoisesum-topics/1"
META, ARRAYS = "topics.json", "topics.npz"

Text = str | Sequence[str]  # space-separated tokens, or a token list


@dataclass
class LDAConfig:
    n_topics: int = 100  # the paper: 100 for Yelp, 50 for Rotten Tomatoes
    sample: int = 100_000  # reviews to train on (a uniform sample of the corpus)
    max_words: int = 20_000  # LDA vocabulary: the most frequent content words ...
    min_docs: int = 5  # ... found in at least this many documents ...
    max_doc_fraction: float = 0.5  # ... and in at most this share of them
    passes: int = 2
    chunksize: int = 2000  # documents per online update
    iterations: int = 50  # E-step iterations per document during training
    seed: int = 1
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "n_topics": at_least(2),
        **dict.fromkeys(
            ("sample", "max_words", "min_docs", "passes", "chunksize", "iterations"), at_least(1)
        ),
        "max_doc_fraction": Range(0, 1, low_open=True),
        "seed": at_least(0),
    }


def content_words(tokens: Text) -> list[str]:
    """What LDA sees of a text: lower-cased alphabetic tokens of 3+ letters, no stopwords
    (gensim's list). Clitics, numbers and punctuation carry no topic; the tokenizer has already
    split them off."""
    if isinstance(tokens, str):
        tokens = tokens.split()
    return filter_words(tokens, lda_stopwords(), alphabetic=True, min_length=3)


def _tokens(texts: Iterable[Text]) -> list[list[str]]:
    return [content_words(t) for t in texts]


# ---------------------------------------------------------------------------------------------
# LDA


class LDATopics:
    kind = "lda"

    def __init__(
        self,
        words: list[str],
        alpha: np.ndarray,
        topic_word: np.ndarray,
        settings: dict[str, Any] | None = None,
    ) -> None:
        if topic_word.shape != (len(alpha), len(words)):
            raise ValueError(
                f"topic_word has shape {topic_word.shape}, expected ({len(alpha)}, {len(words)})"
            )
        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}
        self.alpha = np.asarray(alpha, dtype=np.float64)  # [K]
        self.topic_word = np.asarray(topic_word, dtype=np.float64)  # [K, V] exp(E[log beta])
        self.settings = settings or {}

    @property
    def n_topics(self) -> int:
        return len(self.alpha)

    @property
    def labels(self) -> list[str]:
        return [f"topic {k}: {' '.join(self.top_words(k, 5))}" for k in range(self.n_topics)]

    def top_words(self, topic: int, n: int = 10) -> list[str]:
        return [self.words[i] for i in np.argsort(-self.topic_word[topic], kind="stable")[:n]]

    def distributions(
        self, texts: Sequence[Text], entity_ids: Sequence[str] | None = None, chunk: int = 256
    ) -> np.ndarray:
        """p(z | text) [n, K], rows summing to 1 (the prior mean for a text with no known word).

        Deterministic: a text's result does not depend on the others (converged rows are frozen).
        """
        out = np.empty((len(texts), self.n_topics))
        for begin in range(0, len(texts), chunk):
            bows = [
                Counter(self.index[w] for w in words if w in self.index)
                for words in _tokens(texts[begin : begin + chunk])
            ]
            width = max([1, *(len(b) for b in bows)])
            ids = np.zeros((len(bows), width), dtype=np.int64)
            counts = np.zeros((len(bows), width))
            for row, bow in enumerate(bows):
                ids[row, : len(bow)] = list(bow.keys())
                counts[row, : len(bow)] = list(bow.values())
            out[begin : begin + len(bows)] = self._infer(ids, counts)
        return out

    def _infer(
        self, ids: np.ndarray, counts: np.ndarray, max_iter: int = 200, tol: float = 1e-3
    ) -> np.ndarray:
        """Variational E-step for a chunk: ids/counts [B, W] (padding has count 0) -> [B, K]."""
        k = self.n_topics
        beta = self.topic_word[:, ids].transpose(1, 0, 2)  # [B, K, W]
        gamma = self.alpha + counts.sum(1, keepdims=True) / k  # [B, K]
        active = np.ones(len(ids), dtype=bool)
        for _ in range(max_iter):
            theta = np.exp(digamma(gamma) - digamma(gamma.sum(1, keepdims=True)))  # [B, K]
            norm = np.einsum("bk,bkw->bw", theta, beta) + 1e-100  # [B, W]
            new = self.alpha + theta * np.einsum("bw,bkw->bk", counts / norm, beta)
            change = np.abs(new - gamma).mean(1)
            gamma = np.where(active[:, None], new, gamma)
            active &= change >= tol
            if not active.any():
                break
        return gamma / gamma.sum(1, keepdims=True)

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        with atomic_write(directory / ARRAYS, "wb") as handle:
            np.savez(handle, alpha=self.alpha, topic_word=self.topic_word.astype(np.float32))
        write_json(
            directory / META,
            {
                "format": FORMAT,
                "kind": self.kind,
                "n_topics": self.n_topics,
                "settings": self.settings,
                "words": self.words,
                "top_words": [self.top_words(k) for k in range(self.n_topics)],
            },
        )

    @classmethod
    def from_meta(cls, directory: Path, meta: dict[str, Any]) -> LDATopics:
        with np.load(require_part(directory, ARRAYS, f"{ARRAYS} is missing")) as arrays:
            return cls(meta["words"], arrays["alpha"], arrays["topic_word"], meta.get("settings"))


def train_lda(documents: Sequence[Text], cfg: LDAConfig | None = None) -> LDATopics:
    """Train LDA on documents (token lists or space-separated tokens), deterministically."""
    from gensim.corpora import Dictionary
    from gensim.models import LdaModel

    cfg = cfg or LDAConfig()
    if cfg.n_topics < 2:
        raise DenoiseSumError(f"LDA needs at least 2 topics, got {cfg.n_topics}")
    docs = _tokens(documents)
    dictionary = Dictionary(docs)
    dictionary.filter_extremes(
        no_below=cfg.min_docs, no_above=cfg.max_doc_fraction, keep_n=cfg.max_words
    )
    if len(dictionary) == 0:
        raise DenoiseSumError(
            f"LDA: no content word is in at least {cfg.min_docs} and at most "
            f"{cfg.max_doc_fraction:.0%} of the {len(docs):,} documents; use more documents "
            "or lower --min-docs"
        )
    bows = [dictionary.doc2bow(d) for d in docs]
    lda = LdaModel(
        bows,
        num_topics=cfg.n_topics,
        id2word=dictionary,
        chunksize=cfg.chunksize,
        passes=cfg.passes,
        iterations=cfg.iterations,
        random_state=cfg.seed,
        eval_every=None,
    )
    words = [dictionary[i] for i in range(len(dictionary))]
    settings = {
        **asdict(cfg),
        "documents": len(docs),
        "empty_documents": sum(1 for b in bows if not b),
    }
    return LDATopics(words, np.asarray(lda.alpha), lda.expElogbeta, settings)


# ---------------------------------------------------------------------------------------------
# human categories


class CategoryTopics:
    """p(z) of a summary = the category distribution of its entity's reviews (one-hot when the
    entity has one category). The summary is a review of that entity, so the text is not used."""

    kind = "categories"

    def __init__(self, labels: list[str], entities: dict[str, dict[str, float]]) -> None:
        self.labels = list(labels)
        self.entities = entities  # entity id -> {label: probability}
        self.label_index = {label: i for i, label in enumerate(self.labels)}

    @property
    def n_topics(self) -> int:
        return len(self.labels)

    def distributions(
        self, texts: Sequence[Text], entity_ids: Sequence[str] | None = None
    ) -> np.ndarray:
        if entity_ids is None or len(entity_ids) != len(texts):
            raise ValueError("category topics need the entity id of every text")
        out = np.zeros((len(texts), self.n_topics))
        for row, entity in enumerate(entity_ids):
            dist = self.entities.get(entity)
            if dist is None:
                raise DenoiseSumError(
                    f"entity '{entity}' has no category in this topic model "
                    "(was it built from the same corpus?)"
                )
            for label, p in dist.items():
                out[row, self.label_index[label]] = p
        return out

    def save(self, directory: str | Path) -> None:
        write_json(
            Path(directory) / META,
            {
                "format": FORMAT,
                "kind": self.kind,
                "n_topics": self.n_topics,
                "labels": self.labels,
                "entities": self.entities,
            },
        )

    @classmethod
    def from_meta(cls, directory: Path, meta: dict[str, Any]) -> CategoryTopics:
        return cls(meta["labels"], meta["entities"])


def category_topics(reviews: Iterable[Any], field: str = "category") -> CategoryTopics:
    """From corpus reviews (`entity_id`, `category`): each entity's normalised category counts."""
    counts: dict[str, Counter] = {}
    n_reviews = 0
    for review in reviews:
        n_reviews += 1
        if review.category is not None:
            counts.setdefault(review.entity_id, Counter())[review.category] += 1
    if not counts:
        raise DenoiseSumError(
            f"--categories human needs a category field, but none of the {n_reviews:,} reviews "
            f"has one (field '{field}'; choose another with --category-field), or use LDA topics"
        )
    labels = sorted({c for per in counts.values() for c in per})
    entities = {
        e: {c: n / sum(per.values()) for c, n in sorted(per.items())} for e, per in counts.items()
    }
    return CategoryTopics(labels, entities)


# ---------------------------------------------------------------------------------------------
# loading and use

TopicModel = LDATopics | CategoryTopics
_KINDS: dict[str, Any] = {"lda": LDATopics, "categories": CategoryTopics}


def load_topics(directory: str | Path) -> TopicModel:
    directory = Path(directory)
    meta = read_json(
        require_part(
            directory,
            META,
            f"not a topic model directory ({META} is missing; make one with `denoisesum topics`)",
        )
    )
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(
            f"not a denoisesum topic model (expected format {FORMAT})", path=directory / META
        )
    kind = meta.get("kind")
    if kind not in _KINDS:
        raise InputError(f"unknown topic model kind {kind!r}", path=directory / META, field="kind")
    return _KINDS[kind].from_meta(directory, meta)


def fingerprint(directory: str | Path) -> str:
    """A hash of a topic model's files: cached distributions are valid while it is unchanged."""
    digest = hashlib.sha256()
    for name in (META, ARRAYS):
        path = Path(directory) / name
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def topic_distributions(
    model: TopicModel, texts: Sequence[Text], entity_ids: Sequence[str] | None = None
) -> np.ndarray:
    """p(z) [n, K] for summaries (space-separated tokens or token lists), rows summing to 1.
    Category models look the summaries up by their entity ids instead of reading them."""
    return model.distributions(texts, entity_ids)
