"""The leaderboard's options: the command line that reproduces a page, and the light import the
CLI relies on to read their defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from denoisesum.baselines import FirstReview, prepare
from denoisesum.baselines.options import LeaderboardOptions
from denoisesum.errors import DenoiseSumError


def test_defaults_leave_only_the_gold_file():
    assert LeaderboardOptions(Path("gold.jsonl")).command_line() == (
        "denoisesum leaderboard gold.jsonl"
    )


def test_options_that_differ_from_their_defaults_follow_in_order():
    options = LeaderboardOptions(
        Path("gold.jsonl"),
        systems=[Path("a"), Path("b c")],
        baselines="",
        limit=5,
        seed=0,
        corpus=["x.jsonl"],
        title="My board",
        output=Path("docs/results/leaderboard-yelp.md"),
    )
    assert options.command_line() == (
        "denoisesum leaderboard gold.jsonl --systems a --systems 'b c' --baselines '' "
        "--limit 5 --corpus x.jsonl --title 'My board'"
    )


def test_baseline_names_skip_blanks():
    assert LeaderboardOptions(Path("g"), baselines=" first, ,oracle").baseline_names() == [
        "first",
        "oracle",
    ]


def test_a_baseline_that_learns_nothing_refuses_a_corpus_before_reading_it():
    with pytest.raises(DenoiseSumError, match="learns nothing from a corpus"):
        prepare(FirstReview(), ["no-such-corpus.jsonl"])


def test_the_cli_starts_without_loading_the_baselines():
    code = (
        "import sys, denoisesum.cli; "
        "print(any(m.startswith(('numpy', 'denoisesum.baselines.registry')) "
        "for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
