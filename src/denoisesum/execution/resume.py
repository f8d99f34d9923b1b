"""Resuming a summarize output: the settings sidecar `FILE.settings.json` records what made
FILE (the model's files, every summarizing setting, slice, --raw, --explain, the input's
fields); rerunning the same command continues FILE, and a FILE made otherwise (other settings,
or no sidecar) is refused, naming what differs, unless --overwrite starts over.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from denoisesum.errors import InputError
from denoisesum.execution.outputs import OutputOptions, spool


def sidecar(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".settings.json")


def model_fingerprint(directory: Path) -> dict[str, str]:
    """sha256 of the model directory's files that summarizing reads."""
    from denoisesum.models.store import CONFIG, RATING, VOCAB

    names = [
        CONFIG,
        VOCAB,
        RATING,
        *sorted(p.name for p in directory.glob("*.safetensors")),
        *sorted(p.name for p in directory.glob("*.pt")),
    ]
    out = {}
    for name in names:
        path = directory / name
        if path.is_file():
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
            out[name] = digest.hexdigest()
    return out


def run_settings(summarizer, fmt: str, options: OutputOptions) -> dict[str, Any]:
    """What decides an output's records: the model (its files' hashes), every summarizing
    setting, the format and `options` (slice, raw, explain, the input fields)."""
    import dataclasses

    settings = {
        "model": model_fingerprint(Path(summarizer.path)) if summarizer.path else None,
        "summarize": dataclasses.asdict(summarizer.config),
        "format": fmt,
        **options.recorded(),
        "method": options.method or summarizer.default_method,
    }
    return json.loads(json.dumps(settings))  # as the sidecar holds them (tuples: lists)


def _differences(old: Any, new: Any, key: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            d
            for k in sorted(set(old) | set(new), key=str)
            for d in _differences(old.get(k), new.get(k), f"{key}.{k}" if key else str(k))
        ]
    return [] if old == new else [f"{key}: {json.dumps(old)} there, {json.dumps(new)} now"]


def check_resumable(output: Path, fmt: str, settings: dict) -> bool:
    """Whether `output` has records to resume from (True), or is to be started (False); an
    output made otherwise (no sidecar, other settings) is an error naming what differs."""
    data = spool(output) if fmt == "parquet" else output
    if not data.exists() and not output.exists():
        return False
    start_over = f"to start over, delete {output} (and {sidecar(output).name}) or add --overwrite"
    try:
        saved = json.loads(sidecar(output).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"exists and has no {sidecar(output).name}, so it was not made by a "
            f"resumable summarize run and cannot be continued: {start_over}",
            path=output,
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(
            f"cannot read its settings ({sidecar(output).name}: {exc}): {start_over}", path=output
        ) from None
    differ = _differences(saved.get("settings"), settings)
    if differ:
        shown = "; ".join(differ[:6]) + (f"; and {len(differ) - 6} more" if len(differ) > 6 else "")
        raise InputError(
            f"was made with other settings, so its summaries would not match "
            f"these ({shown}); to continue it, run with its settings "
            f"({sidecar(output).name}); {start_over}",
            path=output,
        )
    return True


def write_sidecar(output: Path, settings: dict, info: dict, complete: bool = False) -> None:
    from denoisesum.io import write_json

    write_json(sidecar(output), {"settings": settings, **info, "complete": complete})
