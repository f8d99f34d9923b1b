"""Crash-safe training checkpoints.

A checkpoint is a model directory (models/store.py: `model.safetensors`, `config.json`,
`vocab.json`) plus what resuming needs (`state.pt`: optimizer, scheduler, RNG, data position).
Checkpoints are written into a temporary directory and renamed into place, and `LATEST` is
replaced atomically afterwards, so a kill at any moment leaves the previous checkpoint usable.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import torch

from denoisesum.data.vocab import Vocab
from denoisesum.io import atomic_write
from denoisesum.models.store import save_model_dir

STATE = "state.pt"


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    model: torch.nn.Module,
    config: dict[str, Any],
    vocab: Vocab,
    state: dict[str, Any],
    keep: int = 2,
) -> Path:
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


def _complete(checkpoint: Path) -> bool:
    """Whether `checkpoint`'s state.pt is there and loads: a file cut short (a damaged disk, a
    copy interrupted) is as unusable as a missing one."""
    if not (checkpoint / STATE).is_file():
        return False
    try:
        load_state(checkpoint)
    except Exception:  # whatever torch.load raises on a damaged file (many kinds)
        return False
    return True


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint to resume from: the one LATEST names, or, when that one is incomplete (no
    state.pt, or one that does not load: a kill while it was written, or a damaged disk), the
    newest complete one, said on standard error. None when there is no complete checkpoint."""
    root = Path(run_dir) / "checkpoints"
    pointer = root / "LATEST"
    named = root / pointer.read_text().strip() if pointer.is_file() else None
    if named is not None and _complete(named):
        return named
    # newest first, so only the damaged ones and one complete one are loaded
    newest = next(
        (p for p in sorted(root.glob("step-*"), reverse=True) if p != named and _complete(p)), None
    )
    if newest is None:
        return None
    if named is not None:
        print(
            f"{named} is incomplete (no {STATE}, or one that does not load); resuming from "
            f"{newest.name}, the newest complete checkpoint",
            file=sys.stderr,
        )
    return newest


def load_state(checkpoint: Path) -> dict[str, Any]:
    return torch.load(checkpoint / STATE, map_location="cpu", weights_only=False)
