"""Crash-safe checkpoints and model directories.

A *model directory* is what users load: `model.safetensors`, `config.json`, `vocab.json`.
A *checkpoint* adds what resuming needs (`state.pt`: optimizer, scheduler, RNG, data position).
Checkpoints are written into a temporary directory and renamed into place, and `LATEST` is
replaced atomically afterwards, so a kill at any moment leaves the previous checkpoint usable.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from denoisesum.data.vocab import Vocab
from denoisesum.errors import InputError
from denoisesum.io import atomic_write, read_json, write_json

WEIGHTS, CONFIG, VOCAB, STATE = "model.safetensors", "config.json", "vocab.json", "state.pt"


def save_weights(path: Path, model: torch.nn.Module) -> None:
    tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    tmp = path.with_name(f".{path.name}.tmp")
    save_file(tensors, str(tmp))
    os.replace(tmp, path)


def save_model_dir(directory: str | Path, model: torch.nn.Module, config: dict[str, Any],
                   vocab: Vocab) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab.save(directory / VOCAB)
    write_json(directory / CONFIG, config)
    save_weights(directory / WEIGHTS, model)


def read_model_dir(directory: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any], Vocab]:
    directory = Path(directory)
    for name in (WEIGHTS, CONFIG, VOCAB):
        if not (directory / name).is_file():
            raise InputError(f"not a model directory: {name} is missing", path=directory)
    return load_file(str(directory / WEIGHTS)), read_json(directory / CONFIG), Vocab.load(
        directory / VOCAB)


def save_checkpoint(run_dir: str | Path, step: int, model: torch.nn.Module,
                    config: dict[str, Any], vocab: Vocab, state: dict[str, Any],
                    keep: int = 2) -> Path:
    """Write checkpoint `step` under run_dir/checkpoints, point LATEST at it, prune old ones."""
    root = Path(run_dir) / "checkpoints"
    final = root / f"step-{step:09d}"
    tmp = root / f".step-{step:09d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    save_model_dir(tmp, model, config, vocab)
    torch.save(state, tmp / STATE)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    with atomic_write(root / "LATEST") as handle:
        handle.write(final.name + "\n")
    for old in sorted(root.glob("step-*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    pointer = Path(run_dir) / "checkpoints" / "LATEST"
    if not pointer.is_file():
        return None
    path = pointer.parent / pointer.read_text().strip()
    return path if (path / STATE).is_file() else None


def load_state(checkpoint: Path) -> dict[str, Any]:
    return torch.load(checkpoint / STATE, map_location="cpu", weights_only=False)
