"""Train the rating model (models/rating.py) on a corpus's own star ratings, with scikit-learn.

    model, report = train_rating_model(rated_texts, heldout_texts)

The features are scikit-learn's `TfidfVectorizer(sublinear_tf=True)` over the project's tokens and
their n-grams (the vectorizer is given our analyzer, so training and the NumPy-only RatingModel
see the same features); the classifier is a multinomial logistic regression. The report holds
what a user needs to trust it: held-out exact and within-one accuracy, polarity accuracy
(negative ≤ 2 stars, mixed 3, positive ≥ 4 against the predicted polarity), mean absolute error
and Pearson's r of the expected rating.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from denoisesum.errors import DenoiseSumError
from denoisesum.models.rating import RatingModel, polarity, text_features
from denoisesum.topics.build import reservoir


@dataclass
class RatingReport:
    train_reviews: int
    heldout_reviews: int
    features: int
    accuracy: float  # argmax class == rounded stars
    within_one: float  # |argmax class - stars| <= 1
    polarity_accuracy: float
    mae: float  # of the expected rating
    pearson_r: float
    class_counts: dict[str, int]  # training reviews per rating


def _true_polarity(stars: np.ndarray) -> list[str]:
    return ["negative" if s <= 2 else "positive" if s >= 4 else "mixed" for s in stars]


def evaluate(model: RatingModel, texts: Sequence[str], stars: np.ndarray) -> dict[str, float]:
    probs = model.probs(texts)  # [N, K]
    expected = probs @ model.classes
    best = model.classes[probs.argmax(1)]
    truth = np.rint(stars)
    guessed = [polarity(s) for s in expected]
    return {
        "accuracy": float((best == truth).mean()),
        "within_one": float((np.abs(best - truth) <= 1).mean()),
        "polarity_accuracy": float(
            np.mean([a == b for a, b in zip(guessed, _true_polarity(stars), strict=True)])
        ),
        "mae": float(np.abs(expected - stars).mean()),
        "pearson_r": float(np.corrcoef(expected, stars)[0, 1]),
    }


def train_rating_model(
    train: Sequence[tuple[str, float]],
    heldout: Sequence[tuple[str, float]],
    max_features: int = 200_000,
    min_df: int = 5,
    c: float = 4.0,
    max_iter: int = 200,
) -> tuple[RatingModel, RatingReport]:
    """(text, stars) pairs -> the model and its report on `heldout`. Stars are rounded to
    classes; at least two distinct classes are needed."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:  # pragma: no cover - scikit-learn is a dependency
        raise DenoiseSumError(
            "training a rating model needs scikit-learn (pip install scikit-learn)"
        ) from exc
    texts = [t for t, _ in train]
    labels = np.rint([s for _, s in train]).astype(int)
    if len(set(labels.tolist())) < 2:
        raise DenoiseSumError("a rating model needs reviews of at least two different ratings")
    if not heldout:
        raise DenoiseSumError("a rating model needs held-out rated reviews to report on")
    vectorizer = TfidfVectorizer(
        analyzer=text_features,
        sublinear_tf=True,
        min_df=min_df,
        max_features=max_features,
        dtype=np.float32,
    )
    x = vectorizer.fit_transform(texts)  # [N, F] sparse
    classifier = LogisticRegression(C=c, max_iter=max_iter, solver="saga", tol=1e-3, random_state=0)
    classifier.fit(x, labels)
    coef, intercept = classifier.coef_, classifier.intercept_
    if len(classifier.classes_) == 2:  # one logit z: softmax over (-z/2, z/2) is sigmoid(z)
        coef, intercept = np.vstack([-coef / 2, coef / 2]), np.hstack([-intercept, intercept]) / 2
    model = RatingModel(
        vectorizer.get_feature_names_out().tolist(),
        vectorizer.idf_.astype(np.float32),
        coef.astype(np.float32),
        intercept.astype(np.float32),
        classifier.classes_.astype(np.float32),
    )
    held_texts = [t for t, _ in heldout]
    held_stars = np.array([s for _, s in heldout], dtype=np.float32)
    counts = {str(k): int((labels == k).sum()) for k in sorted(set(labels.tolist()))}
    report = RatingReport(
        len(texts),
        len(held_texts),
        len(model.features),
        **evaluate(model, held_texts, held_stars),
        class_counts=counts,
    )
    return model, report


def rated_sample(reviews: Iterable, size: int, seed: int) -> list[tuple[str, float]]:
    """A uniform sample (reservoir) of `size` (text, rating) pairs of the rated reviews."""
    return reservoir(((r.text, r.rating) for r in reviews if r.rating is not None), size, seed)
