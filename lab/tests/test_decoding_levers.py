"""lab/studies/decoding_levers.py: every variant paired against the model's own decoding, kept as
it comes (a rerun reuses a stored row), and a clear refusal of a setting that the search and the
policy lack."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import save_tiny_summarizer, write_dev_sets
from denoisesum.summarizer import SummarizerConfig

ROOT = Path(__file__).resolve().parents[2]
STUDY = [sys.executable, "-m", "lab.studies.decoding_levers"]  # run from ROOT


def study(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*STUDY, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
        timeout=300,
    )


def test_variants_are_paired_with_base_and_kept(tmp_path):
    model = save_tiny_summarizer(tmp_path / "m", SummarizerConfig())
    dev = write_dev_sets(tmp_path / "dev.jsonl")
    out, md = tmp_path / "levers.json", tmp_path / "levers.md"
    done = study(
        model,
        dev,
        "--variants",
        "b2:beam=2;short:max_words=12",
        "--json",
        out,
        "--markdown",
        md,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())
    assert list(rows) == ["base", "b2", "short"]
    assert rows["short"]["changes"] == {"max_words": 12}
    assert "rouge1" in rows["short"]["vs_base"] and "vs_base" not in rows["base"]
    assert all(len(s.split()) <= 12 for s in rows["short"]["summaries"])
    assert "| short | max_words=12 |" in md.read_text()
    rows["b2"]["seconds"] = -1.0  # a stored row with the same changes is not decoded again
    out.write_text(json.dumps(rows))
    again = study(model, dev, "--variants", "b2:beam=2", "--json", out)
    assert again.returncode == 0, again.stderr
    assert json.loads(out.read_text())["b2"]["seconds"] == -1.0
    for variants, message in (
        ("x:no_such_setting=1", "x: unknown setting(s) no_such_setting"),
        ("y:max_words=3", "y: config key 'search.min_words': 10 must be between"),
    ):
        bad = study(model, dev, "--variants", variants, "--json", tmp_path / "x.json")
        assert bad.returncode != 0 and message in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
