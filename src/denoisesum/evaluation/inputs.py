"""Reading predictions and gold references, and checking that they describe the same entities."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from denoisesum.data.reviewsets import read_predictions, read_review_sets
from denoisesum.errors import InputError
from denoisesum.io import require_file

SHOWN_IDS = 5  # how many offending entity ids an error message lists


def _listing(ids: Sequence[str]) -> str:
    shown = ", ".join(f"'{i}'" for i in ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def load_predictions(path: str | Path) -> dict[str, str]:
    require_file(path)
    return {p.entity_id: p.summary for p in read_predictions(path)}


def load_references(path: str | Path) -> dict[str, list[str]]:
    """Gold summaries by entity, in file order; every entity must have a non-empty summary."""
    require_file(path)
    references = {s.entity_id: s.summaries for s in read_review_sets(path)}
    check_references(references, path)
    return references


def check_references(
    references: Mapping[str, Sequence[str]], path: str | Path | None = None
) -> None:
    if not references:
        raise InputError("no entities to evaluate", path=path)
    missing = [e for e, refs in references.items() if not refs]
    if missing:
        raise InputError(
            f"{len(missing)} entit{'y has' if len(missing) == 1 else 'ies have'} "
            f"no reference summaries: {_listing(missing)}",
            path=path,
            field="summaries",
        )
    for entity, refs in references.items():
        for i, ref in enumerate(refs):
            if not ref.strip():
                raise InputError(
                    f"entity '{entity}': reference summary {i} is empty",
                    path=path,
                    field="summaries",
                )


def check_ids(
    predictions: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    predictions_path: str | Path | None = None,
    gold_path: str | Path | None = None,
) -> None:
    """Every gold entity needs exactly one prediction, and no prediction may be left over."""
    missing = [e for e in references if e not in predictions]
    extra = [e for e in predictions if e not in references]
    if not missing and not extra:
        return
    gold = f"the gold file {gold_path}" if gold_path is not None else "the references"
    problems = []
    if missing:
        problems.append(
            f"{len(missing)} gold entit{'y' if len(missing) == 1 else 'ies'} "
            f"missing from the predictions ({_listing(missing)})"
        )
    if extra:
        problems.append(
            f"{len(extra)} predicted entit{'y' if len(extra) == 1 else 'ies'} "
            f"not in {gold} ({_listing(extra)})"
        )
    raise InputError(
        f"entity ids do not match {gold}: " + "; ".join(problems), path=predictions_path
    )
