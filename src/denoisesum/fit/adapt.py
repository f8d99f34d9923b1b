"""`denoisesum fit CORPUS --from MODEL`: adapt a trained summarizer to another corpus.

The summarizer starts from MODEL's weights (train.train.init_model) and keeps what makes it that
model: its vocabulary (read with its weights), its sizes and switches ([train.model], the topic
count of its discriminator included, so the topics stage makes as many topics), how far it reads
a review (train.data.max_review_tokens) and its whole decoding ([train.summarize]: length,
first-person ban, restatement blocking, opinion steering, shortlist; the decode stage keeps its
min_length instead of choosing one). Its rating model (rating.npz), which opinion steering and
the contradiction-free choice read, is exported with the adapted model.

No LM is trained to start the summarizer from (it starts from MODEL). The synthetic pairs still
need a cloze LM to noise with: MODEL's own noising LM, the one its pairs were noised with, in
MODEL/noise-lm/ (the installed denoisesum-yelp ships it: the Yelp BiLM, fp16), or, for a model
adapted from one, that model's (its config's fit.from); --noise-lm DIR gives another (token noise
only needs plausible replacements, and every stage after it is unchanged). Only when neither
exists does fit train one on the corpus for noising alone (the lm stage, with the preset's LM
sizes and budget_lm_share of --budget).

Fine-tuning settings the layer sets (each may be overridden with --config / --set): MODEL's own
last learning rate when it recorded it; no weight averaging (train.ema_decay 0: an adaptation
runs for a few hundred steps, and an average over a thousand keeps it at MODEL's weights); one
checkpoint kept per trainer (resuming needs only the latest; a 30k-word summarizer's checkpoint,
with Adam's moments, is some 320 MB).

MODEL is an installed model's name (denoisesum-yelp) or a directory; anything else is refused in
one line before any work.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from denoisesum.errors import ConfigError, DenoiseSumError, InputError
from denoisesum.inference.policy import migrate_summarize
from denoisesum.io import read_json
from denoisesum.models.store import CONFIG, RATING, RATING_REPORT, VOCAB, WEIGHTS

# what the adapted model takes from MODEL's config.json "model" section (vocab_size comes with
# the vocabulary itself)
MODEL_KEYS = (
    "embed_dim",
    "hidden_dim",
    "encoder_dim",
    "dropout",
    "n_topics",
    "segment_noise",
    "document_noise",
    "explicit_denoising",
    "copy",
    "discriminator",
    "coverage",
    "opinion",
)
# fine-tuning settings of MODEL's own last training, kept when it recorded them
TRAIN_KEYS = ("lr", "coverage_weight", "kl_weight", "grad_clip")
# files exported beside the adapted weights when MODEL has them (opinion steering reads them)
RATING_FILES = (RATING, RATING_REPORT)


def resolve_base(name_or_dir: str) -> Path:
    """MODEL's directory, checked: a summarizer's model.safetensors, config.json, vocab.json."""
    from denoisesum.summarizer import resolve_model

    try:
        path = resolve_model(name_or_dir)
    except DenoiseSumError as exc:
        raise ConfigError(f"--from: {exc}") from None
    if not path.is_dir():
        raise ConfigError(f"--from {name_or_dir}: no such model directory or installed model")
    missing = [name for name in (WEIGHTS, CONFIG, VOCAB) if not (path / name).is_file()]
    if missing:
        raise ConfigError(
            f"--from {name_or_dir}: {path} is not a trained summarizer (it has no "
            f"{', '.join(missing)})"
        )
    config = read_json(path / CONFIG)
    if not isinstance(config, dict) or config.get("kind") != "denoisesum":
        raise InputError(
            "not a DenoiseSum summarizer (kind must be 'denoisesum'; a BiLM goes to --noise-lm)",
            path=path / CONFIG,
            field="kind",
        )
    return path


def base_settings(model_dir: Path) -> dict[str, Any]:
    """The fit settings (a [train]/[topics]/[decode]/[lm] layer over the preset) that make the
    adapted model MODEL's: see the module docstring."""
    config = read_json(model_dir / CONFIG)
    where = model_dir / CONFIG
    model = config.get("model")
    summarize = config.get("summarize") or {}
    if isinstance(summarize, dict):
        try:
            summarize = dict(migrate_summarize(summarize))
        except ConfigError as exc:
            raise InputError(exc.reason, path=where, field=exc.key) from None
    if not isinstance(model, dict) or not isinstance(summarize.get("search"), dict):
        raise InputError(
            "has no 'model' and 'summarize.search' sections to adapt from",
            path=where,
            field="model",
        )
    reads = summarize.pop("max_review_tokens", None)  # fit derives it from train.data
    trained = config.get("train") if isinstance(config.get("train"), dict) else {}
    train = {key: trained[key] for key in TRAIN_KEYS if key in trained}
    # no weight averaging: MODEL's (0.999, an average over some 1,000 steps) would keep a short
    # adaptation next to MODEL's weights and lose what it learned
    train.update(init_model=str(model_dir.resolve()), keep_checkpoints=1, ema_decay=0.0)
    layer: dict[str, Any] = {
        "train": {
            "model": {k: model[k] for k in MODEL_KEYS if k in model},
            "summarize": summarize,
            "train": train,
        },
        "lm": {"train": {"keep_checkpoints": 1}},
        "decode": {"min_length": summarize["search"].get("min_words")},
    }
    if reads is not None:
        layer["train"]["data"] = {"max_review_tokens": reads}
    if "n_topics" in model:
        layer["topics"] = {"n_topics": model["n_topics"]}
    return layer


def export_rating(model_dir: Path, out: Path) -> list[str]:
    """Copy MODEL's rating model beside the adapted weights; the names copied."""
    copied = []
    for name in RATING_FILES:
        if (model_dir / name).is_file():
            shutil.copyfile(model_dir / name, out / name)
            copied.append(name)
    return copied
