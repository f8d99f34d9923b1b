"""The synthetic-pair shard format: what `denoisesum synthesize` writes (noising/pipeline.py)
and the summarizer's trainer and the topic model read.

A pairs directory holds `shards/shard-NNNNN.jsonl.gz` (or the shard files directly), one pair
per line:

    {"pair_id": int, "entity_id": str, "summary": str, "segment_noise": [str],
     "document_noise": [str], "rating": float | null, ...}

`rating` (optional; written since the encoded corpus keeps ratings) is the star rating of the
review the summary is: the opinion an opinion-conditioned summarizer is trained to follow.

Texts are space-separated tokens; the writer adds fields of its own (see `pair_record`) that
readers ignore. A malformed line is an InputError naming the file, line and field.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from denoisesum.errors import InputError
from denoisesum.io import iter_jsonl


def shard_path(pairs_dir: str | Path, shard: int) -> Path:
    return Path(pairs_dir) / "shards" / f"shard-{shard:05d}.jsonl.gz"


def pair_record(
    pair_id: int,
    entity_id: str,
    summary: Sequence[str],
    segment: Sequence[str],
    document: Sequence[str],
    **extra: Any,
) -> dict[str, Any]:
    """One shard line: the summary's tokens, the noisy reviews as token strings, and any extra
    fields the writer keeps (ignored by readers)."""
    return {
        "pair_id": pair_id,
        "entity_id": entity_id,
        "summary": " ".join(summary),
        "segment_noise": list(segment),
        "document_noise": list(document),
        **extra,
    }


def find_shards(pairs_dir: str | Path) -> list[Path]:
    """The shard files of a `denoisesum synthesize` output directory, in order."""
    root = Path(pairs_dir)
    if not root.is_dir():
        raise InputError("not a directory of synthetic pairs", path=root)
    shards = sorted((root / "shards").glob("shard-*.jsonl.gz")) or sorted(
        root.glob("shard-*.jsonl.gz")
    )
    if not shards:
        raise InputError(
            "no pair shards found (expected shards/shard-NNNNN.jsonl.gz, as made by "
            "`denoisesum synthesize`)",
            path=root,
        )
    return shards


@dataclass
class Pair:
    pair_id: int
    entity_id: str
    summary: list[str]
    segment: list[list[str]]
    document: list[list[str]]
    rating: float | None = None  # the summary review's stars; None: unknown or not recorded


RATING_RANGE = (0.0, 10.0)  # a sane rating: stars (1-5) or a 10-point scale


def _rating(record: dict, path: Path, line: int) -> float | None:
    value = record.get("rating")
    if value is None:
        return None
    low, high = RATING_RANGE
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise InputError(
            f"must be a number in [{low:g}, {high:g}] or null, got {value!r}",
            path=path,
            line=line,
            field="rating",
        )
    return float(value)


def _texts(record: dict, key: str, path: Path, line: int) -> list[list[str]]:
    value = record.get(key)
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InputError(
            "must be a list of strings (space-separated tokens)", path=path, line=line, field=key
        )
    return [t.split() for t in value]


def parse_pair(record: Any, path: Path, line: int) -> Pair:
    """Check one shard line; InputError names the file, line and field."""
    if not isinstance(record, dict):
        raise InputError(
            f"a pair must be a JSON object, got {type(record).__name__}", path=path, line=line
        )
    for key in ("pair_id", "entity_id", "summary", "segment_noise", "document_noise"):
        if key not in record:
            raise InputError("missing field", path=path, line=line, field=key)
    pair_id, entity = record["pair_id"], record["entity_id"]
    if isinstance(pair_id, bool) or not isinstance(pair_id, int):
        raise InputError(
            f"must be an integer, got {pair_id!r}", path=path, line=line, field="pair_id"
        )
    if not isinstance(entity, str) or not entity:
        raise InputError("must be a non-empty string", path=path, line=line, field="entity_id")
    summary = record["summary"]
    if not isinstance(summary, str) or not summary.split():
        raise InputError(
            "must be a non-empty string of tokens", path=path, line=line, field="summary"
        )
    return Pair(
        pair_id,
        entity,
        summary.split(),
        _texts(record, "segment_noise", path, line),
        _texts(record, "document_noise", path, line),
        _rating(record, path, line),
    )


def iter_pairs(shards: Sequence[Path]) -> Iterator[Pair]:
    for path in shards:
        for line, record in iter_jsonl(path):
            yield parse_pair(record, path, line)
