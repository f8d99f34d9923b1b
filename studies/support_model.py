"""Fit the support model (models/support.py) to the blinded judgements of model summaries.

    python -m studies.support_model [--judged FILE ...] [--out MODEL_DIR]

Every sentence of a model summary in the judged files (docs/results/judged/*.jsonl and
../shared/data/yelp/judged/meansum_dev_veridicality.jsonl; each business's sentence once, the
first file that judged it; human summaries left out), its business's reviews from MeanSum dev
or the part-15 opinion set (runs/opinion/set-part15.jsonl), read into inference/support.py's
FEATURES with the model directory's rating model. The target: the judges found it fully
supported. A logistic regression (scikit-learn, C = 1); its held-out ROC AUC by 5-fold
cross-validation over businesses (no business in both the fitting and the scored part) beside
the lexical score's alone, and the share of fully supported sentences among those kept when the
least likely fifth is left out. Writes support.json into --out (default: the shipped model), with
those figures in "about".
"""

from __future__ import annotations

import argparse
import glob
from datetime import UTC, datetime

import numpy as np

from denoisesum.inference.support import FEATURES, Evidence, support_features
from denoisesum.io import iter_jsonl
from denoisesum.models.rating import RatingModel
from denoisesum.models.support import SupportModel
from studies.faithfulness import SETS, SHARED

MODEL = "src/denoisesum/pretrained/denoisesum-yelp"
JUDGED = sorted(f for f in glob.glob("docs/results/judged/*.jsonl") if "entities" not in f)
JUDGED.append(str(SHARED / "judged" / "meansum_dev_veridicality.jsonl"))


def review_sets() -> dict[str, dict]:
    out = {}
    for name in ("dev", "part15"):
        out.update({r["entity_id"]: r for _, r in iter_jsonl(SETS[name])})
    return out


def judged_rows(files: list[str], rating: RatingModel) -> tuple[np.ndarray, np.ndarray, list]:
    """(features [N, F], fully supported [N], business of each) over the judged model
    sentences whose business's reviews are known."""
    sets, seen = review_sets(), set()
    x, y, groups = [], [], []
    for path in files:
        for _, row in iter_jsonl(path):
            entity = sets.get(row["entity_id"])
            if entity is None or "human" in row["system"]:
                continue
            reviews, ratings = entity["reviews"], entity.get("ratings")
            stars = float(np.mean(ratings)) if ratings else float(rating.stars(reviews).mean())
            features = support_features(Evidence(reviews, rating=rating), row["sentences"], stars)
            for text, verdict, f in zip(row["sentences"], row["verdicts"], features, strict=True):
                if f is None or (row["entity_id"], text) in seen:
                    continue
                seen.add((row["entity_id"], text))
                x.append(f)
                y.append(verdict == "full")
                groups.append(row["entity_id"])
    return np.array(x), np.array(y), groups


def held_out(x: np.ndarray, y: np.ndarray, groups: list) -> dict:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    p = np.zeros(len(y))
    for fit, score in GroupKFold(5).split(x, y, groups):
        model = LogisticRegression(max_iter=2000).fit(x[fit], y[fit])
        p[score] = model.predict_proba(x[score])[:, 1]
    kept = p >= np.quantile(p, 0.2)
    return {
        "roc_auc": round(float(roc_auc_score(y, p)), 3),
        "roc_auc_lexical_score": round(float(roc_auc_score(y, x[:, FEATURES.index("score")])), 3),
        "accuracy_at_half": round(float(np.mean((p >= 0.5) == y)), 3),
        "full_share": round(float(y.mean()), 3),
        "full_share_without_least_likely_fifth": round(float(y[kept].mean()), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judged", nargs="+", default=JUDGED)
    parser.add_argument("--out", default=MODEL)
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression

    rating = RatingModel.load(MODEL)
    x, y, groups = judged_rows(args.judged, rating)
    scores = held_out(x, y, groups)
    fitted = LogisticRegression(max_iter=2000).fit(x, y)
    about = {
        "target": "judged fully supported (../shared/docs/VERIDICALITY.md)",
        "sentences": len(y),
        "businesses": len(set(groups)),
        "judged_files": [f.split("/")[-1] for f in args.judged],
        "held_out_by_business_5_fold": scores,
        "fitted": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "by": "python -m studies.support_model",
    }
    weights, bias = fitted.coef_[0].tolist(), float(fitted.intercept_[0])
    model = SupportModel(list(FEATURES), weights, bias, about)
    print(f"{len(y)} sentences of {len(set(groups))} businesses: {scores}")
    print(f"wrote {model.save(args.out)}")


if __name__ == "__main__":
    main()
