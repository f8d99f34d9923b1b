"""What `denoisesum fit` knows of each stage between runs: a record next to the stage's output
(MODEL_DIR/work/STAGE.stage.json, written atomically):

    {"stage": "train", "output": "work/train",
     "settings": {"train.train.lr": 0.001, ...},   every setting of the stage, flattened
     "limits": {"train.train.max_minutes": 60, ...},  a trainer's max_steps and max_minutes
     "inputs": {"synthesize": "sha256...", ...},   digests of what it reads (earlier outputs)
     "done": false | true, "seconds": 812.4,       wall time of the run that finished it
     "made": {"work/train/model.safetensors": {"bytes": 86360, "sha256": "..."}, ...},
     "summary": "one line", "result": {...}}

A stage is *skipped* when its record is done, its output is there, as it made it (every file of
"made" has its size and SHA-256), and its inputs are unchanged. An output changed since (a file
truncated, edited or deleted) is made again by a stage made whole from its inputs (recipe.py's
`remake`: topics, decode, export) and refused by the others, which cannot repair what they made;
*resumed* when its record is not done (a crash or Ctrl-C cut it off: the trainers continue from
their last checkpoint, synthesis makes the missing shards, the short stages start again); and
*refused* when its settings or inputs differ from the record's: its output cannot be reused with
other settings, and the error names the stage and the first setting that differs. The decoding
choice (recipe.py's `settings_remake`), which nothing but the export reads, is made again instead,
and the export after it; so is the export when its own setting (the weights' format) changed. A
trainer
whose *limits* changed since it finished is *continued* from its last checkpoint up to the new
ones (recipe.py: a later session's time budget), not refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from denoisesum.errors import DenoiseSumError
from denoisesum.io import read_json, write_json

SUFFIX = ".stage.json"


def record_path(work: Path, stage: str) -> Path:
    return work / f"{stage}{SUFFIX}"


def read_record(work: Path, stage: str) -> dict[str, Any] | None:
    path = record_path(work, stage)
    return read_json(path) if path.is_file() else None


def write_record(work: Path, stage: str, record: dict[str, Any]) -> None:
    work.mkdir(parents=True, exist_ok=True)
    write_json(record_path(work, stage), {"stage": stage, **record})


def digest(paths: Iterable[Path]) -> str:
    """SHA-256 of the files' bytes, in order (what a later stage read)."""
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def made(root: Path, paths: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """What a stage made, for its record: {path under root: {"bytes": ..., "sha256": ...}}."""
    return {
        path.relative_to(root).as_posix(): {"bytes": path.stat().st_size, "sha256": digest([path])}
        for path in paths
    }


def damaged(root: Path, recorded: dict[str, dict[str, Any]]) -> list[str]:
    """A line for each file of `recorded` (`made`'s) that is no longer as the stage made it."""
    out = []
    for name, was in sorted(recorded.items()):
        path = root / name
        if not path.is_file():
            out.append(f"{name}: missing")
        elif (size := path.stat().st_size) != was["bytes"]:
            out.append(f"{name}: {size:,} bytes, {was['bytes']:,} when made")
        elif digest([path]) != was["sha256"]:
            out.append(f"{name}: changed since made (another SHA-256)")
    return out


def damage_text(damage: list[str]) -> str:
    more = f"; and {len(damage) - 1} more file(s)" if len(damage) > 1 else ""
    return damage[0] + more


def check_made(stage: str, output: str, damage: list[str]) -> None:
    """Refuse to skip a stage whose output changed since it ran (`damaged`'s lines)."""
    if damage:
        raise DenoiseSumError(
            f"stage '{stage}' ({output}): its output changed since it ran "
            f"({damage_text(damage)}), so it cannot be skipped. Restore it, or delete {output} "
            f"and the stages after it to redo them"
        )


def digest_value(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def changed_settings(
    recorded: dict[str, Any], settings: dict[str, Any], defaults: dict[str, Any] | None = None
) -> list[str]:
    """The keys whose values differ. A key missing on one side counts as its default (None when
    `defaults` has none): a setting added since a stage ran, left at its default (which does what
    the stage did before the setting existed), is no change."""
    defaults = defaults or {}
    return [
        k
        for k in sorted(set(recorded) | set(settings))
        if recorded.get(k, defaults.get(k)) != settings.get(k, defaults.get(k))
    ]


def check_settings(
    stage: str,
    output: str,
    recorded: dict[str, Any],
    settings: dict[str, Any],
    defaults: dict[str, Any] | None = None,
) -> None:
    """Refuse settings that differ from those the stage's output was made with (defaults: as in
    changed_settings)."""
    changed = changed_settings(recorded, settings, defaults)
    if not changed:
        return
    key = changed[0]
    more = f" (and {len(changed) - 1} more setting(s))" if len(changed) > 1 else ""
    raise DenoiseSumError(
        f"stage '{stage}' ({output}) was run with {key} = {_shown(recorded.get(key, '<unset>'))}, "
        f"now {_shown(settings.get(key, '<unset>'))}{more}: its output cannot be reused with "
        f"other settings. Run with the same settings, or give another output directory (or "
        f"delete {output} and the stages after it to redo them)"
    )


def changed_inputs(recorded: dict[str, str], inputs: dict[str, str]) -> list[str]:
    return sorted(k for k in {**recorded, **inputs} if recorded.get(k) != inputs.get(k))


def check_inputs(stage: str, output: str, recorded: dict[str, str], inputs: dict[str, str]) -> None:
    """Refuse a stage's earlier output made from other inputs (an earlier stage was redone
    differently, or --lm / --dev point to other files)."""
    changed = changed_inputs(recorded, inputs)
    if changed:
        raise DenoiseSumError(
            f"stage '{stage}' ({output}) was run on other inputs ({', '.join(changed)} changed "
            f"since): its output cannot be reused. Give another output directory (or delete "
            f"{output} and the stages after it to redo them)"
        )
