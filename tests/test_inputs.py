"""What a command reads (issues 60 item 4, 61 items 1-2): a corpus's stars reach the summarizer
from the command line; no input is an error naming the file, and nothing is written; a run that
skipped bad records says how many; a file the command may not read is "permission denied"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import grouped_reviews, refused, run_cli, save_tiny_summarizer, write_jsonl

# the reviews and stars the browser test gives by every path (test_serving_browser.py)
STARRED = [
    "The pizza was fantastic and the crust was perfect.",
    "Terrible service, the waiter was rude and the food came cold.",
    "Great pizza, friendly staff and a cozy room.",
    "We waited an hour for a table and the pasta was bland.",
]
STARS = [5, 4, 5, 4]  # lenient raters: the default method then says no complaint


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from denoisesum.inference.beam import SearchConfig
    from denoisesum.summarizer import SummarizerConfig

    settings = SummarizerConfig(search=SearchConfig(beam=2, min_words=2, max_words=6))
    return save_tiny_summarizer(tmp_path_factory.mktemp("m") / "tiny", settings)


def test_a_corpus_stars_column_reaches_the_summarizer(tmp_path):
    """The default model summarizes a CSV export with a stars column (--rating-field) as Python
    does with the same stars, and otherwise than without them."""
    from denoisesum.summarizer import Summarizer

    summarizer = Summarizer.from_pretrained()
    python = summarizer.summarize(STARRED, ratings=STARS)
    assert python != summarizer.summarize(STARRED), "these stars change nothing"
    export = tmp_path / "export.csv"
    export.write_text(
        "business_id,stars,body\n"
        + "".join(f'pizzeria,{s},"{t}"\n' for t, s in zip(STARRED, STARS, strict=True))
    )
    fields = ["--entity-field", "business_id", "--text-field", "body"]
    summaries = {}
    for rating_field in ("stars", "no_such_column"):
        out = tmp_path / f"{rating_field}.jsonl"
        done = run_cli("summarize", export, *fields, "--rating-field", rating_field, "-o", out)
        assert done.returncode == 0, done.stderr
        summaries[rating_field] = [json.loads(line)["summary"] for line in out.open()]
    assert summaries["stars"] == [python]
    assert summaries["no_such_column"] != [python]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.jsonl", ""),
        ("empty.csv", ""),
        ("header.csv", "entity_id,text,rating\n"),
        ("blank.jsonl", "\n\n"),
    ],
)
def test_no_reviews_is_an_error_naming_the_file_and_nothing_is_written(
    tiny, tmp_path, name, content
):
    source = tmp_path / name
    source.write_text(content)
    out = tmp_path / "out.csv"
    done = run_cli("summarize", source, "--model", tiny, "-o", out)
    assert refused(done, f"{source}: no reviews"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no output, no sidecar


def test_no_review_set_on_standard_input_is_an_error(tiny, tmp_path):
    out = tmp_path / "out.jsonl"
    done = run_cli("summarize", "-", "--model", tiny, "-o", out, input="")
    assert refused(done, "standard input: no reviews"), done.stderr
    assert not out.exists()


def test_every_record_skipped_is_no_reviews_and_says_how_many(tiny, tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_text('{"entity_id": "a"}\nnot json\n')
    done = run_cli("summarize", source, "--model", tiny, "-o", tmp_path / "o.jsonl", "--skip-bad")
    assert refused(done, f"{source}: no reviews: nothing to summarize (2 bad record(s) skipped)")


@pytest.mark.parametrize("kind", ["review sets", "corpus"])
def test_skip_bad_skips_and_says_how_many(tiny, tmp_path, kind):
    grouped = grouped_reviews(3, 2, seed=1)
    if kind == "review sets":
        source = write_jsonl(
            tmp_path / "sets.jsonl", [{"entity_id": e, "reviews": t} for e, t in grouped.items()]
        )
        with source.open("a") as handle:
            handle.write('{"entity_id": "x", "reviews": []}\nnot json\n')
        bad_line = 4
    else:
        rows = [{"entity_id": e, "text": t} for e, texts in grouped.items() for t in texts]
        source = write_jsonl(tmp_path / "corpus.jsonl", [*rows, {"entity_id": "x"}])
        bad_line = len(rows) + 1
    out = tmp_path / "out.jsonl"
    stopped = run_cli("summarize", source, "--model", tiny, "-o", out)
    assert refused(stopped, f"line {bad_line}"), stopped.stderr
    assert not out.exists()
    done = run_cli("summarize", source, "--model", tiny, "-o", out, "--skip-bad")
    assert done.returncode == 0, done.stderr
    skipped = 2 if kind == "review sets" else 1
    assert f"{source}: skipped {skipped} bad record(s)" in done.stderr
    assert [json.loads(line)["entity_id"] for line in out.open()] == list(grouped)


def test_an_empty_corpus_is_no_reviews_for_training(tmp_path):
    source = tmp_path / "empty.csv"
    source.write_text("entity_id,text,rating\n")
    done = run_cli("vocab", source, "-o", tmp_path / "model" / "vocab.json")
    assert refused(done, f"{source}: no reviews"), done.stderr


def _without_file_permissions() -> list[str] | None:
    """A command prefix under which the files' permissions hold: none needed for an ordinary
    user; for root, setpriv without the capabilities that override them; None if neither."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    drop = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"]


def test_an_unreadable_file_is_permission_denied(tmp_path):
    prefix = _without_file_permissions()
    if prefix is None:
        pytest.skip("root without setpriv reads every file")
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"entity_id": "a", "summary": "Good."}])
    gold = write_jsonl(tmp_path / "g.jsonl", [{"entity_id": "a", "reviews": ["x"]}])
    predictions.chmod(0)
    commands = {
        "evaluate": ["evaluate", predictions, gold],
        "summarize": ["summarize", predictions, "-o", tmp_path / "o.jsonl"],
    }
    for name, args in commands.items():
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "denoisesum.cli", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        assert refused(done, f"{predictions}: permission denied"), (name, done.stderr)
