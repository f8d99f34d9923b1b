"""Rating model: how many stars a text reads as, learned from the corpus's own star ratings.

A multinomial logistic regression over TF-IDF features of word n-grams (1 to 3 words, so that
"not worth", "will not be" and "be back" carry their own weights): sublinear term frequency,
smoothed IDF, each text's vector scaled to unit length, exactly as scikit-learn's
`TfidfVectorizer(sublinear_tf=True)` computes them. It is trained with scikit-learn
(training/rating.py); applying it needs only NumPy, so summarizing does not need scikit-learn.

    model = RatingModel.load(path)
    model.stars(["the food was cold and the staff was rude"])  # array([1.4])

`stars` is the expected rating Σ_k k·p(k | text), a number between the lowest and the highest
class; `polarity` maps it to negative / mixed / positive with the thresholds below, which the
opinion measures (evaluation/opinion.py), the evidence check and decoding share.

Shapes: N texts, F features, K rating classes (5 for Yelp's stars).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import InputError
from denoisesum.io import file_in

FILENAME, REPORT_FILENAME = "rating.npz", "rating-report.json"  # the model, its accuracy
MAX_N = 3  # longest n-gram
# stars below NEGATIVE read as negative, above POSITIVE as positive, between them as mixed
NEGATIVE, POSITIVE = 2.5, 3.5
POLARITIES = ("negative", "mixed", "positive")

_TOKENIZER = Tokenizer()
# texts whose class scores are kept: decoding rates the same clauses again and again (a
# business's candidate summaries share most of their sentences; 1,697 texts rated, 597 distinct,
# over 24 dev businesses). Only short ones, clauses and sentences: whole reviews are rated once,
# and a service must not hold its clients' reviews (20,000 of 5,000 characters: 100 MB)
CACHED_TEXTS, CACHED_CHARS = 20_000, 300


def ngrams(tokens: Sequence[str], max_n: int = MAX_N) -> list[str]:
    """Every n-gram of 1..max_n tokens, joined by spaces (the model's feature names)."""
    return [
        " ".join(tokens[i : i + n]) for n in range(1, max_n + 1) for i in range(len(tokens) - n + 1)
    ]


def text_features(text: str) -> list[str]:
    return ngrams(_TOKENIZER.tokenize(text))


def polarity(stars: float) -> str:
    """'negative', 'mixed' or 'positive' for a rating."""
    if stars < NEGATIVE:
        return "negative"
    return "positive" if stars > POSITIVE else "mixed"


def polarity_sign(stars: float) -> int:
    """The polarity of a rating as a sign: -1 negative, 0 mixed, +1 positive."""
    return {"negative": -1, "mixed": 0, "positive": 1}[polarity(stars)]


@dataclass
class RatingModel:
    features: list[str]  # [F] n-gram of each column
    idf: np.ndarray  # [F] float32
    coef: np.ndarray  # [K, F] float32
    intercept: np.ndarray  # [K] float32
    classes: np.ndarray  # [K] float32, the ratings (1..5)

    def __post_init__(self) -> None:
        self.column = {f: i for i, f in enumerate(self.features)}
        self._scores: dict[str, np.ndarray] = {}  # text -> its class scores [K] (CACHED_TEXTS)

    # ---- applying ----------------------------------------------------------------------------

    def vector(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(columns, values) of a text's unit-length TF-IDF vector (only known n-grams)."""
        counts = Counter(c for c in map(self.column.get, text_features(text)) if c is not None)
        cols = np.fromiter(counts, dtype=np.int64, count=len(counts))
        tf = np.fromiter((1 + math.log(counts[c]) for c in counts), np.float32, len(counts))
        values = tf * self.idf[cols]
        norm = float(np.linalg.norm(values))
        return cols, values / norm if norm else values

    def probs(self, texts: Iterable[str]) -> np.ndarray:
        """p(rating class | text) [N, K]."""
        rows = [self._class_scores(text) for text in texts]  # [K] each
        if not rows:
            return np.zeros((0, len(self.classes)), np.float32)
        scores = np.stack(rows)  # [N, K]
        scores -= scores.max(1, keepdims=True)
        p = np.exp(scores)
        return p / p.sum(1, keepdims=True)

    def _class_scores(self, text: str) -> np.ndarray:
        row = self._scores.get(text)
        if row is None:
            cols, values = self.vector(text)
            row = self.coef[:, cols] @ values + self.intercept  # [K]
            if len(text) <= CACHED_CHARS:
                if len(self._scores) >= CACHED_TEXTS:
                    self._scores.clear()
                self._scores[text] = row
        return row

    def stars(self, texts: Iterable[str]) -> np.ndarray:
        """Expected rating of each text [N]."""
        return self.probs(texts) @ self.classes

    def counts(self, tokens: Sequence[str]) -> Counter:
        """Feature column -> count of a tokenized text (the Tokenizer's tokens)."""
        return Counter(c for c in map(self.column.get, ngrams(tokens)) if c is not None)

    def stars_of_tokens(self, token_lists: Sequence[Sequence[str]]) -> np.ndarray:
        """Expected rating of each tokenized text [N], all at once: one sparse product instead
        of one per text, for the many sentences of many reviews."""
        return self.stars_of_counts([self.counts(tokens) for tokens in token_lists])

    def stars_of_counts(self, all_counts: Sequence[Counter]) -> np.ndarray:
        """Expected rating of texts given as their feature counts (`counts`) [N]."""
        from scipy.sparse import csr_matrix

        rows, cols, values = [], [], []
        for i, counts in enumerate(all_counts):
            if not counts:
                continue
            where = np.fromiter(counts, dtype=np.int64, count=len(counts))
            tf = np.fromiter((1 + math.log(counts[c]) for c in counts), np.float32, len(counts))
            v = tf * self.idf[where]
            rows.append(np.full(len(where), i))
            cols.append(where)
            values.append(v / np.linalg.norm(v))
        n = len(all_counts)
        if not rows:
            x = csr_matrix((n, len(self.features)), dtype=np.float32)
        else:
            data = (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols)))
            x = csr_matrix(data, shape=(n, len(self.features)), dtype=np.float32)
        scores = np.asarray(x @ self.coef.T) + self.intercept  # [N, K]
        scores -= scores.max(1, keepdims=True)
        p = np.exp(scores)
        return (p / p.sum(1, keepdims=True)) @ self.classes

    def star(self, text: str) -> float:
        return float(self.stars([text])[0])

    def word_weights(self) -> dict[str, float]:
        """Each single word's pull on the expected rating near a neutral text: Σ_k (k − mean k)
        coef[k, w] idf[w]. Decoding uses it to lean each step's words toward a target opinion."""
        centred = self.classes - self.classes.mean()  # [K]
        pull = (centred @ self.coef) * self.idf  # [F]
        return {f: float(pull[i]) for i, f in enumerate(self.features) if " " not in f}

    # ---- storage ----------------------------------------------------------------------------

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / FILENAME
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(
            tmp,
            features=np.array(self.features, dtype=str),
            idf=self.idf.astype(np.float32),
            coef=self.coef.astype(np.float16),
            intercept=self.intercept,
            classes=self.classes,
        )
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, directory: str | Path) -> RatingModel:
        """From a directory holding rating.npz (or the file itself)."""
        path = file_in(directory, FILENAME)
        try:
            with np.load(path, allow_pickle=False) as data:
                model = cls(
                    data["features"].tolist(),
                    data["idf"].astype(np.float32),
                    data["coef"].astype(np.float32),
                    data["intercept"].astype(np.float32),
                    data["classes"].astype(np.float32),
                )
        except FileNotFoundError as exc:
            raise InputError(
                "no rating model here (make one with `denoisesum rating`)", path=path
            ) from exc
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"not a readable rating model ({exc})", path=path) from exc
        if model.coef.shape != (len(model.classes), len(model.features)):
            raise InputError(
                f"rating model shapes disagree: coef {model.coef.shape}, "
                f"{len(model.features)} features",
                path=path,
            )
        return model


def find_rating_model(model_dir: str | Path) -> RatingModel | None:
    """The rating model stored with a summarizer (its directory's rating.npz), if any."""
    path = Path(model_dir) / FILENAME
    return RatingModel.load(path) if path.exists() else None
