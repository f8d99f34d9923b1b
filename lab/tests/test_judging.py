"""lab/studies/judging.py: the paired comparison of two systems judged side by side."""

import json
import subprocess
import sys


def _row(entity: str, system: str, verdicts: list[str], contra: bool, misleading: bool) -> dict:
    return {
        "entity_id": entity,
        "system": system,
        "verdicts": verdicts,
        "self_contradiction": contra,
        "misleading": misleading,
    }


def test_paired_counts_fixed_and_new(tmp_path):
    rows = [
        _row("a", "old", ["full", "none"], True, False),
        _row("a", "new", ["full", "full"], False, False),
        _row("b", "old", ["full"], False, False),
        _row("b", "new", ["none"], True, True),
        _row("c", "old", ["partial"], True, False),
        _row("c", "new", ["partial"], False, False),
    ]
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run(
        [sys.executable, "-m", "lab.studies.judging", "paired", "old", "new", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "self_contradiction: 2 -> 1 of 3; fixed 2, new 1" in out
    assert "misleading: 0 -> 1 of 3; fixed 0, new 1" in out
    # full share: a +0.5, b -1, c 0 -> mean -0.167 over 3 (2 differ)
    assert "full share: mean change -0.167 over 3 businesses (2 differ)" in out
