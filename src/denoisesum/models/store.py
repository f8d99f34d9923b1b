"""The model-directory format: what the trainers write and every stage loads. This module is
its one writer (`save_model_dir`, `export_model_dir`, `update_settings`) and names its files;
code elsewhere uses these names, never the strings.

    model.safetensors   the weights (fp32 or fp16; loaded into fp32)
    vocab.json          the vocabulary and its tokenizer settings (data/vocab.py)
    config.json         {"kind": "bilm" | "denoisesum",
                         "model": {BiLMConfig or DenoiseSumConfig fields},
                         ...}   other keys belong to the stage that wrote or reads them (the
                                training settings; "summarize" for the Summarizer)
    rating.npz          optional: the rating model (models/rating.py reads and writes it), and
    rating-report.json  its accuracy (`denoisesum rating`)

"kind" and "model" are required; "model" holds only the config fields of its kind (missing
ones take their defaults) and its vocab_size equals the vocabulary's size. Anything unreadable
or inconsistent is an InputError naming the file and the field, never a traceback. Training
checkpoints (training/checkpoint.py) are model directories plus the state to resume.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import torch
from safetensors.torch import load_file, save_file

from denoisesum.config import build, merge
from denoisesum.data.vocab import Vocab
from denoisesum.errors import ConfigError, DenoiseSumError, InputError
from denoisesum.io import atomic_write, read_json, require_part, write_json
from denoisesum.models.bilm import BiLM, BiLMConfig
from denoisesum.models.denoisesum import DenoiseSum, DenoiseSumConfig
from denoisesum.models.rating import FILENAME as RATING
from denoisesum.models.rating import REPORT_FILENAME as RATING_REPORT

WEIGHTS, CONFIG, VOCAB = "model.safetensors", "config.json", "vocab.json"
# RATING, RATING_REPORT: named where the rating model is read and written (models/rating.py),
# which needs no torch
# kind -> (model class, its config class, what to call it in messages)
KINDS: dict[str, tuple[type[torch.nn.Module], type, str]] = {
    "bilm": (BiLM, BiLMConfig, "a bidirectional LM"),
    "denoisesum": (DenoiseSum, DenoiseSumConfig, "a DenoiseSum summarizer"),
}
T = TypeVar("T")


def _save_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    save_file(tensors, str(tmp))
    os.replace(tmp, path)


def save_model_dir(
    directory: str | Path, model: torch.nn.Module, config: dict[str, Any], vocab: Vocab
) -> None:
    """A trained model, its whole config.json and its vocabulary (what the trainers save)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab.save(directory / VOCAB)
    write_json(directory / CONFIG, config)
    _save_tensors(
        directory / WEIGHTS,
        {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()},
    )


def save_weights(path: str | Path, model: torch.nn.Module) -> None:
    """A model's weights as model.safetensors: each float tensor as fp16 where that is exact
    (a model loaded from fp16 weights keeps their size), else as it is."""
    tensors = {}
    for key, value in model.state_dict().items():
        value = value.detach().contiguous().cpu()
        if value.is_floating_point() and torch.equal(value.half().to(value.dtype), value):
            value = value.half()
        tensors[key] = value
    _save_tensors(Path(path), tensors)


def export_model_dir(
    source: str | Path, target: str | Path, config: dict[str, Any] | None = None, fp16: bool = False
) -> None:
    """Copy a model directory: its weights (byte for byte, or with `fp16` floats stored as fp16:
    half the size, loaded back into fp32, so the model changes only by that rounding), its
    vocabulary, its rating model if any, and `config` as its config.json (None: the source's).
    config.json is written last, when the rest is in place."""
    source, target = Path(source), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    config = read_settings(source) if config is None else config
    if fp16:
        _save_tensors(
            target / WEIGHTS,
            {
                k: v.half() if v.is_floating_point() else v
                for k, v in load_file(str(source / WEIGHTS)).items()
            },
        )
    copied = [VOCAB, *(name for name in (RATING, RATING_REPORT) if (source / name).is_file())]
    for name in copied if fp16 else [WEIGHTS, *copied]:
        with atomic_write(target / name, "wb", encoding=None) as handle:
            handle.write((source / name).read_bytes())
    write_json(target / CONFIG, config)


def read_settings(directory: str | Path) -> dict[str, Any]:
    """A model directory's config.json (a JSON object)."""
    path = Path(directory) / CONFIG
    config = read_json(path)
    if not isinstance(config, dict):
        raise InputError(f"must be a JSON object, got {type(config).__name__}", path=path)
    return config


def update_settings(directory: str | Path, changes: dict[str, Any]) -> dict[str, Any]:
    """Merge `changes` into a model directory's config.json, table by table (e.g.
    {"summarize": {"search": {"min_words": 30}}} changes that one key); returns the result."""
    config = merge(read_settings(directory), changes)
    write_json(Path(directory) / CONFIG, config)
    return config


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def read_model_dir(directory: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any], Vocab]:
    """The weights, config.json and vocabulary of a model directory, unchecked against each
    other (`load` checks them)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError("no such model directory", path=directory)
    for name in (WEIGHTS, CONFIG, VOCAB):
        require_part(directory, name, f"not a model directory: {name} is missing")
    try:
        weights = load_file(str(directory / WEIGHTS))
    except Exception as exc:  # safetensors raises its own error types for a damaged file
        raise InputError(
            f"unreadable weights ({_first_line(exc)}); the file is damaged or not "
            "a safetensors file",
            path=directory / WEIGHTS,
        ) from None
    return weights, read_settings(directory), Vocab.load(directory / VOCAB)


def parse_section(cls: type[T], data: Any, path: Path, name: str) -> T:
    """A config dataclass from a section of a JSON file; errors name the file and field."""
    if not isinstance(data, dict):
        raise InputError(f"must be an object, got {data!r}", path=path, field=name)
    try:
        return build(cls, data, f"{name}.")
    except ConfigError as exc:
        raise InputError(exc.reason, path=path, field=exc.key or name) from None


def load(directory: str | Path, kind: str) -> tuple[torch.nn.Module, Vocab, dict[str, Any]]:
    """The model of a directory (eval mode), its vocabulary and its whole config.json; the
    directory must hold a model of `kind` ("bilm" or "denoisesum")."""
    model_cls, config_cls, description = KINDS[kind]
    directory = Path(directory)
    weights, config, vocab = read_model_dir(directory)
    path = directory / CONFIG
    if config.get("kind") != kind:
        raise InputError(
            f"holds a {config.get('kind')!r} model, not {description} ('{kind}')",
            path=path,
            field="kind",
        )
    if "model" not in config:
        raise InputError(f"missing: the model's {config_cls.__name__}", path=path, field="model")
    model_config = parse_section(config_cls, config["model"], path, "model")
    if model_config.vocab_size != len(vocab):
        raise InputError(
            f"{model_config.vocab_size} does not match the {len(vocab)} tokens of {VOCAB}",
            path=path,
            field="model.vocab_size",
        )
    try:
        model = model_cls(model_config)
    except ConfigError as exc:
        raise InputError(str(exc), path=path, field="model") from None
    # weights that start at zero (DenoiseSum's opinion table) may be missing: such a model
    # is the one saved without them
    optional = set(getattr(model, "ZERO_INIT_KEYS", ()))
    try:
        result = model.load_state_dict(weights, strict=False)
        missing = [k for k in result.missing_keys if k not in optional]
        if missing or result.unexpected_keys:
            raise RuntimeError(
                f"missing keys {missing[:3]}, unexpected keys {result.unexpected_keys[:3]}"
            )
    except RuntimeError as exc:  # missing/unexpected keys or wrong shapes
        reason = str(exc).splitlines()[-1].strip() or str(exc)
        raise InputError(
            f"weights do not fit config.json's model: {reason}", path=directory / WEIGHTS
        ) from None
    return model.float().eval(), vocab, config


def load_bilm(directory: str | Path) -> tuple[BiLM, Vocab]:
    """A trained BiLM (`denoisesum train-lm`) for cloze predictions and noising, in eval mode."""
    model, vocab, _ = load(directory, "bilm")
    return model, vocab


def load_denoisesum(directory: str | Path) -> tuple[DenoiseSum, Vocab, dict[str, Any]]:
    """A trained summarizer, its vocabulary and its config.json (for the sections of other
    stages, such as "summarize")."""
    return load(directory, "denoisesum")


# The models installed with the package: package data under denoisesum/pretrained/, one directory
# per model (pyproject.toml), loaded by name; the default is the Yelp summarizer.
PRETRAINED = "pretrained"
DEFAULT_MODEL = "denoisesum-yelp"


def installed_models_dir() -> Path:
    """Where the installed models are: denoisesum/pretrained/ wherever the package is (a source
    checkout, site-packages)."""
    return Path(str(resources.files("denoisesum") / PRETRAINED))


def installed_models() -> list[str]:
    """The names of the installed models (directories with a config.json)."""
    root = installed_models_dir()
    return sorted(p.name for p in root.iterdir() if (p / CONFIG).is_file()) if root.is_dir() else []


DEFAULT_MODEL_DIR = installed_models_dir() / DEFAULT_MODEL


def resolve_model(name_or_path: str | Path | None) -> Path:
    """A model directory from a path or the name of an installed model (None: the default). An
    existing directory wins over a name; anything else that is not a name (it has a path
    separator) is returned as given, for load_model to say what is wrong with it."""
    if name_or_path is None:
        if not DEFAULT_MODEL_DIR.is_dir():
            raise DenoiseSumError(
                f"no default model is installed (looked for {DEFAULT_MODEL_DIR}); pass a model "
                "directory: Summarizer.from_pretrained('path/to/model') or `denoisesum summarize "
                "--model DIR` (a directory with model.safetensors, config.json, vocab.json)"
            )
        return DEFAULT_MODEL_DIR
    path = Path(name_or_path)
    text = str(name_or_path)
    if path.is_dir() or "/" in text or os.sep in text or text in ("", ".", ".."):
        return path
    if text in installed_models():
        return installed_models_dir() / text
    names = ", ".join(installed_models()) or "none"
    raise DenoiseSumError(
        f"no model directory or installed model named {text!r} (installed models: {names})"
    )


NOISE_LM = "noise-lm"  # MODEL/noise-lm/: the BiLM MODEL's synthetic pairs were noised with


def noise_lm(model_dir: Path, depth: int = 4) -> Path | None:
    """MODEL's noising LM: MODEL/noise-lm/ when it holds a model, else, for a model adapted
    from another (its config's fit.from, a name or a directory), that one's; None when there is
    none (looked up `depth` models back at most)."""
    own = model_dir / NOISE_LM
    if (own / WEIGHTS).is_file() and (own / CONFIG).is_file() and (own / VOCAB).is_file():
        return own
    config = read_json(model_dir / CONFIG) if (model_dir / CONFIG).is_file() else {}
    origin = (config.get("fit") or {}).get("from") if isinstance(config, dict) else None
    if not isinstance(origin, str) or depth <= 0:
        return None
    try:
        earlier = resolve_model(origin)
    except DenoiseSumError:
        return None  # the model it came from is not here (another machine, deleted)
    if not earlier.is_dir() or earlier.resolve() == model_dir.resolve():
        return None
    return noise_lm(earlier, depth - 1)
