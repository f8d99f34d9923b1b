"""The support model: how likely a reader checking a summary sentence against its reviews finds
it fully supported (../shared/docs/VERIDICALITY.md), from the evidence check's readings of it.

Word overlap alone (inference/support.py) orders sentences only loosely as judges do (ROC AUC
0.66 over the judged model sentences): a stock verdict that agrees with the reviews is usually
supported though it shares few words, and a long sentence whose words all occur in some review
often joins them into a claim no review makes. This is a logistic regression over a handful of
such readings of a sentence (inference/support.py `support_features`), fitted to blinded
judgements (studies/support_model.py, which reports its held-out accuracy); decoding uses it to
choose among candidate summaries (decode.prefer_supported). Stored as support.json beside a
summarizer's weights; numpy only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from denoisesum.errors import InputError
from denoisesum.io import write_json

FILENAME = "support.json"


@dataclass
class SupportModel:
    features: list[str]  # [F] the name of each input (inference/support.py FEATURES)
    coef: list[float]  # [F]
    intercept: float
    # how it was fitted (data, held-out scores): kept with the weights, not read by the model
    about: dict | None = None

    def probability(self, rows: np.ndarray) -> np.ndarray:
        """rows [N, F] -> p(fully supported) [N]."""
        z = np.asarray(rows, dtype=np.float64) @ np.asarray(self.coef) + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / FILENAME
        write_json(path, asdict(self))
        return path

    @classmethod
    def load(cls, path: str | Path) -> SupportModel:
        """From support.json (or the directory holding it)."""
        path = Path(path)
        if path.is_dir():
            path = path / FILENAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            model = cls(
                list(data["features"]),
                [float(x) for x in data["coef"]],
                float(data["intercept"]),
                data.get("about"),
            )
        except FileNotFoundError as exc:
            raise InputError("no support model here", path=path) from exc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"not a readable support model ({exc})", path=path) from exc
        if len(model.coef) != len(model.features):
            raise InputError(
                f"support model has {len(model.coef)} weights for {len(model.features)} features",
                path=path,
            )
        return model


def find_support_model(model_dir: str | Path) -> SupportModel | None:
    """The support model stored with a summarizer (its directory's support.json), if any."""
    path = Path(model_dir) / FILENAME
    return SupportModel.load(path) if path.exists() else None
