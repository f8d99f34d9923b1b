"""Hostile input, round two (issue 33): settings outside their bounds are one line naming the key
and its valid range, before any work; a small corpus trains (or is refused, saying what works).
Each case through the real command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_cli(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "denoisesum.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def refused(done: subprocess.CompletedProcess, message: str) -> bool:
    """An error of one line holding `message`, no traceback."""
    lines = done.stderr.strip().splitlines()
    return (
        done.returncode == 2
        and "Traceback" not in done.stderr
        and bool(lines)
        and lines[-1].startswith("error: ")
        and message in lines[-1]
    )


# ---- small corpora ---------------------------------------------------------------------------


def test_train_lm_on_the_example_corpus_with_the_default_config(tmp_path):
    # 24 reviews, a vocabulary of a few dozen words: below the default cutoffs [2000, 10000]
    done = run_cli("train-lm", EXAMPLES / "corpus.jsonl", "-o", tmp_path / "lm", "--max-steps", 2)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "lm" / "model.safetensors").is_file()
    cloze = run_cli("cloze", tmp_path / "lm", "the _ was great")
    assert cloze.returncode == 0 and cloze.stdout.startswith("_1: "), cloze.stderr


def test_train_lm_whose_vocabulary_keeps_no_word_is_refused(tmp_path):
    done = run_cli("train-lm", EXAMPLES / "corpus.jsonl", "-o", tmp_path / "lm",
                   "--max-steps", 2, "--set", "vocab.min_count=1000")
    assert refused(done, "the vocabulary has no word"), done.stderr
    assert "lower vocab.min_count" in done.stderr
    assert not (tmp_path / "lm" / "model.safetensors").exists()
