"""Metrics whose external tool is missing (issue 16, item 9): the default metric list leaves them
out with a warning and a note, and scores the rest; a metric the user named is an error before
any work. Simulated by replacing the availability checks (API) or by running the real command
with a PATH that holds neither perl nor java (CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_jsonl
from denoisesum.errors import DenoiseSumError
from denoisesum.evaluation import DEFAULT_METRICS, evaluate, report
from denoisesum.evaluation.report import requested_metrics, split_metrics

PREDICTIONS = {"a": "the food was great", "b": "the pizza was cold"}
REFERENCES = {"a": ["the food was great and cheap"], "b": ["the pizza was cold and late"]}
SU4_HINT = "apt-get install -y perl libxml-parser-perl"
JAVA_HINT = "apt-get install -y default-jre-headless"


@pytest.fixture
def no_tools(monkeypatch):
    """su4 and meteor report their tools missing; scoring them anyway fails the test."""
    monkeypatch.setattr(
        report,
        "AVAILABILITY",
        {
            "su4": lambda: f"ROUGE-SU4 needs perl, which was not found ({SU4_HINT})",
            "meteor": lambda: f"METEOR needs java, which was not found ({JAVA_HINT})",
        },
    )

    def never(*_):
        raise AssertionError("a missing tool was run")

    monkeypatch.setitem(report.SCORERS, "su4", never)
    monkeypatch.setitem(report.SCORERS, "meteor", never)


def test_optional_metrics_whose_tool_is_missing_are_left_out_and_named(no_tools):
    result = evaluate(
        PREDICTIONS, REFERENCES, DEFAULT_METRICS, optional=DEFAULT_METRICS, resamples=10
    )
    assert set(result.scores) == {
        "rouge1",
        "rouge2",
        "rougeL",
        "pooled_rouge1",
        "pooled_rouge2",
        "pooled_rougeL",
    }
    assert set(result.not_computed) == {"su4", "meteor"}
    assert SU4_HINT in result.not_computed["su4"]
    assert result.to_dict()["not_computed"]["meteor"].endswith(f"({JAVA_HINT})")
    assert "not computed: su4: ROUGE-SU4 needs perl" in report.format_report(result)


def test_a_required_metric_whose_tool_is_missing_fails_before_scoring(no_tools, monkeypatch):
    monkeypatch.setitem(report.SCORERS, "rouge", lambda *_: pytest.fail("scored anyway"))
    with pytest.raises(DenoiseSumError, match=f"METEOR needs java.*{JAVA_HINT}"):
        evaluate(PREDICTIONS, REFERENCES, ["rouge", "meteor"])
    with pytest.raises(DenoiseSumError, match="ROUGE-SU4 needs perl"):
        split_metrics("rouge,su4,meteor", optional=["meteor"])
    assert split_metrics("rouge,su4,meteor", optional=["su4", "meteor"])[0] == ("rouge",)


def test_an_optional_metric_that_fails_is_left_out_and_nothing_at_all_is_an_error(monkeypatch):
    def broken(*_):
        raise DenoiseSumError("METEOR failed: out of memory")

    monkeypatch.setattr(report, "AVAILABILITY", {})
    monkeypatch.setitem(report.SCORERS, "meteor", broken)
    result = evaluate(PREDICTIONS, REFERENCES, "rouge,meteor", optional=["meteor"], resamples=10)
    assert result.not_computed == {"meteor": "METEOR failed: out of memory"}
    with pytest.raises(DenoiseSumError, match="out of memory"):
        evaluate(PREDICTIONS, REFERENCES, "rouge,meteor", resamples=10)
    with pytest.raises(DenoiseSumError, match="no metric could be computed: METEOR failed"):
        evaluate(PREDICTIONS, REFERENCES, "meteor", optional=["meteor"], resamples=10)


def test_the_option_not_given_makes_the_default_metrics_optional():
    assert requested_metrics(None) == (DEFAULT_METRICS, DEFAULT_METRICS)
    assert requested_metrics(None, "rouge,su4") == (("rouge", "su4"), ("rouge", "su4"))
    assert requested_metrics("rouge,pooled,su4,meteor") == (DEFAULT_METRICS, ())


def test_perl_without_xml_parser_is_found_before_rouge_runs(tmp_path, monkeypatch):
    from denoisesum.evaluation import su4

    fake = tmp_path / "bin" / "perl"  # a perl whose every script fails, as without XML::Parser
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    assert su4.unavailable() == (
        "ROUGE-SU4 needs perl's XML::Parser module, which was not "
        f"found (Debian/Ubuntu: {SU4_HINT})"
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    assert su4.unavailable().startswith("ROUGE-SU4 needs perl, which was not found")


# ---- through the command line, with neither perl nor java on PATH ------------------------


def run_without_tools(tmp_path: Path, *args) -> subprocess.CompletedProcess:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    env = {**os.environ, "PATH": str(empty), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "denoisesum.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture
def files(tmp_path):
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"entity_id": e, "reviews": [f"{refs[0]} indeed", "so so"], "summaries": refs}
            for e, refs in REFERENCES.items()
        ],
    )
    predictions = write_jsonl(
        tmp_path / "p.jsonl", [{"entity_id": e, "summary": s} for e, s in PREDICTIONS.items()]
    )
    return gold, predictions


def test_cli_evaluate_by_default_scores_what_it_can_and_warns(files, tmp_path):
    gold, predictions = files
    result = run_without_tools(tmp_path, "evaluate", predictions, gold)
    assert result.returncode == 0, result.stderr
    assert "ROUGE-1 F1  (rouge-score)" in result.stdout
    assert "ROUGE-L F1  (pooled, py-rouge style)" in result.stdout
    assert "not computed: su4: ROUGE-SU4 needs perl, which was not found" in result.stdout
    assert "warning: metric 'su4' not computed:" in result.stderr and SU4_HINT in result.stderr
    assert "warning: metric 'meteor' not computed:" in result.stderr
    assert JAVA_HINT in result.stderr and "Traceback" not in result.stderr

    result = run_without_tools(
        tmp_path, "evaluate", predictions, gold, "--json", "--compare", predictions
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data["not_computed"]) == {"su4", "meteor"} and "rouge1" in data["scores"]
    assert set(data["compare"]["not_computed"]) == {"su4", "meteor"}
    assert result.stderr.count("warning: metric 'meteor'") == 1


def test_cli_evaluate_fails_when_a_named_metric_cannot_run(files, tmp_path):
    gold, predictions = files
    scores = tmp_path / "scores.jsonl"
    result = run_without_tools(
        tmp_path, "evaluate", predictions, gold, "--metrics", "rouge,meteor", "--per-entity", scores
    )
    assert result.returncode == 2 and result.stdout == "" and not scores.exists()
    assert result.stderr.strip() == (
        f"error: METEOR needs java, which was not found (Debian/Ubuntu: {JAVA_HINT})"
    )


def test_cli_leaderboard_by_default_leaves_out_what_cannot_run(files, tmp_path):
    gold, predictions = files
    page = tmp_path / "board.md"
    result = run_without_tools(
        tmp_path,
        "leaderboard",
        gold,
        "--baselines",
        "first",
        "--predictions",
        f"mine={predictions}",
        "-o",
        page,
    )
    assert result.returncode == 0, result.stderr
    assert "warning: metric 'su4' not computed" in result.stderr and SU4_HINT in result.stderr
    text = page.read_text()
    assert "| mine | predictions |" in text and "SU4 R |" not in text
    assert "**Not computed.**" in text and "- `meteor`: METEOR needs java" in text


def test_cli_leaderboard_fails_before_any_baseline_when_a_named_metric_cannot_run(files, tmp_path):
    gold, _ = files
    page = tmp_path / "board.md"
    result = run_without_tools(
        tmp_path, "leaderboard", gold, "--baselines", "first", "--metrics", "rouge,su4", "-o", page
    )
    assert result.returncode == 2 and not page.exists()
    assert "first:" not in result.stderr  # no baseline ran
    assert result.stderr.strip().startswith("error: ROUGE-SU4 needs perl, which was not found")
