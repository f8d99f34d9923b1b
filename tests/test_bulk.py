"""Bulk runs of `denoisesum summarize` (issue 34 item 1, issue 35 item 4): streaming, resume
after a kill, the settings sidecar, output formats by extension, progress lines."""

from __future__ import annotations

import csv
import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import conftest
from conftest import (
    all_ended,
    children,
    grouped_reviews,
    save_tiny_summarizer,
    write_jsonl,
)
from denoisesum.execution import bulk, inputs, outputs, resume

N_ENTITIES = 12


run_cli = functools.partial(conftest.run_cli, timeout=180)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from denoisesum.inference.beam import SearchConfig
    from denoisesum.summarizer import SummarizerConfig

    settings = SummarizerConfig(search=SearchConfig(beam=2, min_words=2, max_words=6))
    return save_tiny_summarizer(tmp_path_factory.mktemp("m") / "tiny", settings)


def entity_sets(n: int = N_ENTITIES) -> list[dict]:
    return [{"entity_id": e, "reviews": t} for e, t in grouped_reviews(n, 4, seed=3).items()]


@pytest.fixture(scope="module")
def sets_file(tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("in") / "sets.jsonl", entity_sets())


@pytest.fixture(scope="module")
def reference(tiny, sets_file, tmp_path_factory) -> list[str]:
    """The lines of an uninterrupted run."""
    out = tmp_path_factory.mktemp("ref") / "out.jsonl"
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", out, "--batch-size", "2")
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert [json.loads(line)["entity_id"] for line in lines] == [
        s["entity_id"] for s in entity_sets()
    ]
    return lines


# the CLI with every batch taking at least 0.5 s more: time to interrupt a run midway
SLOW_CLI = (
    "import time, denoisesum.execution.outputs as outputs\n"
    "decode = outputs.summarize_batch\n"
    "outputs.summarize_batch = lambda *args: (time.sleep(0.5), decode(*args))[1]\n"
    "from denoisesum.cli import main\n"
    "main()\n"
)


def slow_summarize(tiny, sets_file, out, threads: int = 1) -> tuple[list[str], dict]:
    """The command line of a summarize run into `out`, two entities a batch, each batch slowed
    (SLOW_CLI), and its environment (`threads` torch threads: with 2, the batches are decoded
    by two worker processes, forked with the slowed code)."""
    args = [
        sys.executable,
        "-c",
        SLOW_CLI,
        "summarize",
        str(sets_file),
        "--model",
        str(tiny),
        "-o",
        str(out),
        "--batch-size",
        "2",
    ]
    return args, {**os.environ, "OMP_NUM_THREADS": str(threads)}


@pytest.mark.parametrize("threads", [1, 2])
def test_a_killed_run_resumes_to_the_uninterrupted_output(
    tiny, sets_file, reference, tmp_path, threads
):
    out = tmp_path / "out.jsonl"
    args, env = slow_summarize(tiny, sets_file, out, threads)
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # at least two batches written, not all
            if out.exists() and len(out.read_bytes().splitlines()) >= 4:
                break
            time.sleep(0.05)
        workers = children(process.pid)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert len(workers) == (2 if threads == 2 else 0)
    # the command's worker processes end with it (their batch done, nothing left to read)
    assert all_ended(workers)
    partial = out.read_text().splitlines()
    assert 4 <= len(partial) < N_ENTITIES and partial == reference[: len(partial)]
    done = run_cli(*args[3:])
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines() == reference
    assert (
        f"{N_ENTITIES - len(partial)} summaries -> {out} ({len(partial)} from before "
        "kept)" in done.stderr
    )
    # once more: nothing left to do, nothing duplicated
    again = run_cli(*args[3:])
    assert again.returncode == 0 and out.read_text().splitlines() == reference
    assert json.loads(resume.sidecar(out).read_text())["complete"] is True


def test_ctrl_c_says_how_to_continue(tiny, sets_file, reference, tmp_path):
    out = tmp_path / "out.csv"
    args, env = slow_summarize(tiny, sets_file, out)
    # a suite started in the background (nohup, `&` in a script) ignores SIGINT, and the child
    # would inherit that: give it the default disposition, as a terminal's Ctrl-C finds it
    process = subprocess.Popen(
        args,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the header and a batch
        if out.exists() and len(out.read_bytes().splitlines()) >= 3:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in stderr
    assert f"summaries of this run are in {out}; run the same command again to continue" in stderr
    done = run_cli(*args[3:])
    assert done.returncode == 0, done.stderr
    assert outputs.read_output(out) == [json.loads(line) for line in reference]


def test_a_truncated_last_line_is_dropped_and_made_again(tiny, sets_file, reference, tmp_path):
    out = tmp_path / "out.jsonl"
    first = run_cli("summarize", sets_file, "--model", tiny, "-o", out, "--batch-size", "2")
    assert first.returncode == 0, first.stderr
    text = "\n".join(reference[:5]) + "\n" + reference[5][: len(reference[5]) // 2]
    out.write_text(text)  # a kill inside the write of the sixth line
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", out, "--batch-size", "2")
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines() == reference


def test_resuming_with_other_settings_is_refused(tiny, sets_file, tmp_path):
    out = tmp_path / "out.jsonl"
    assert run_cli("summarize", sets_file, "--model", tiny, "-o", out).returncode == 0
    before = out.read_bytes()
    done = run_cli(
        "summarize", sets_file, "--model", tiny, "-o", out, "--beam", "3", "--slice", "praise"
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "was made with other settings" in done.stderr
    assert "summarize.search.beam: 2 there, 3 now" in done.stderr
    assert 'slice: "all" there, "praise" now' in done.stderr
    assert "--overwrite" in done.stderr and out.read_bytes() == before
    # a file that no resumable run made is never continued nor replaced silently
    other = tmp_path / "other.jsonl"
    other.write_text('{"entity_id": "x", "summary": "mine"}\n')
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", other)
    assert done.returncode != 0 and "has no other.jsonl.settings.json" in done.stderr
    assert other.read_text() == '{"entity_id": "x", "summary": "mine"}\n'
    # --overwrite starts over
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", out, "--beam", "3", "--overwrite")
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) == N_ENTITIES
    saved = json.loads(resume.sidecar(out).read_text())["settings"]
    assert saved["summarize"]["search"]["beam"] == 3


def test_csv_and_parquet_outputs_read_back_as_the_jsonl(tiny, sets_file, reference, tmp_path):
    expected = [json.loads(line) for line in reference]
    for name in ("out.csv", "out.parquet"):
        out = tmp_path / name
        done = run_cli("summarize", sets_file, "--model", tiny, "-o", out, "--batch-size", "2")
        assert done.returncode == 0, done.stderr
        assert outputs.read_output(out) == expected, name
        assert not outputs.spool(out).exists()
    with (tmp_path / "out.csv").open(newline="") as handle:
        assert next(csv.reader(handle)) == [
            "entity_id",
            "summary",
            "reviews_read",
            "reviews_total",
            "warnings",
        ]
    # a parquet run killed midway leaves a spool that the rerun continues
    spooled = tmp_path / "again.parquet"
    assert run_cli("summarize", sets_file, "--model", tiny, "-o", spooled).returncode == 0
    outputs.spool(spooled).write_text("\n".join(reference[:3]) + "\n" + reference[3][:10])
    spooled.unlink()
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", spooled, "--batch-size", "2")
    assert done.returncode == 0, done.stderr
    assert outputs.read_output(spooled) == expected and not outputs.spool(spooled).exists()
    # a CSV resumes by rows
    out = tmp_path / "out.csv"
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:4]) + "\n" + lines[4][:7])
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", out, "--batch-size", "2")
    assert done.returncode == 0, done.stderr
    assert outputs.read_output(out) == expected


def test_explain_and_warnings_survive_csv_and_parquet(tiny, tmp_path):
    sets = write_jsonl(
        tmp_path / "sets.jsonl",
        [*entity_sets(2), {"entity_id": "emoji", "reviews": ["😀😀🍜🍜👍", "🔥🔥 😋"]}],
    )
    runs = {}
    for name in ("out.jsonl", "out.csv", "out.parquet"):
        done = run_cli("summarize", sets, "--model", tiny, "-o", tmp_path / name, "--explain")
        assert done.returncode == 0, done.stderr
        runs[name] = outputs.read_output(tmp_path / name)
    assert runs["out.csv"] == runs["out.jsonl"] == runs["out.parquet"]
    assert runs["out.jsonl"][-1]["warnings"] and "support" in runs["out.jsonl"][0]


def test_an_unknown_extension_is_refused_before_any_work(tiny, sets_file, tmp_path):
    for name in ("out.xlsx", "predictions"):
        done = run_cli(
            "summarize", sets_file, "--model", tmp_path / "no-model", "-o", tmp_path / name
        )
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert "unknown output format" in done.stderr, done.stderr
        assert ".jsonl, .csv, .parquet, .txt" in done.stderr
        assert not (tmp_path / name).exists()
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", tmp_path / "x.jsonl", "--text")
    assert done.returncode != 0 and "--text writes readable text" in done.stderr
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", tmp_path / "x.txt", "--text")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "x.txt").read_text().startswith("biz-000\n  ")


def test_progress_lines_on_a_non_terminal_stderr(tiny, sets_file, tmp_path):
    done = run_cli(
        "summarize",
        sets_file,
        "--model",
        tiny,
        "-o",
        tmp_path / "o.jsonl",
        "--batch-size",
        "2",
        env={"DENOISESUM_PROGRESS_SECONDS": "0"},
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "entities/s" in line]
    assert "summarize: reading the input first, 1 review sets so far" in done.stderr
    assert "\r" not in done.stderr
    assert len(lines) >= N_ENTITIES // 2  # one per batch at interval 0, and the last
    assert lines[0].startswith(f"summarize: 2/{N_ENTITIES} entities (17%)")
    assert "entities/s" in lines[0] and "ETA " in lines[0]
    assert lines[-1].startswith(f"summarize: {N_ENTITIES}/{N_ENTITIES} entities (100%)")


def test_progress_counts_rate_and_eta():
    import io

    now = [0.0]
    stream = io.StringIO()
    progress = bulk.summarize_progress(
        100, skipped=20, stream=stream, every=5, clock=lambda: now[0]
    )
    now[0] = 4.0
    progress.update(8)  # before `every`: nothing said
    assert stream.getvalue() == ""
    now[0] = 10.0
    progress.update(12)
    assert stream.getvalue() == (
        "summarize: 40/100 entities (40%), 20 from before, 2.00 entities/s, ETA 30s, elapsed 10s\n"
    )


def test_a_corpus_is_grouped_in_bounded_memory(tmp_path):
    from denoisesum.data.corpus import Review

    reviews = [Review(f"e{i % 7}", f"review {i}") for i in range(100)]
    small = [(s.entity_id, s.reviews) for s in inputs.group_corpus(reviews)]
    spilled = [(s.entity_id, s.reviews) for s in inputs.group_corpus(reviews, limit=9)]
    assert small == spilled
    assert [e for e, _ in small] == [f"e{i}" for i in range(7)]
    assert small[3][1] == [f"review {i}" for i in range(3, 100, 7)]


def test_a_jsonl_corpus_is_summarized_as_the_review_sets(tiny, tmp_path):
    sets = entity_sets(3)
    rows = [
        {"entity_id": s["entity_id"], "text": t}
        for i in range(4)
        for s in sets
        for t in s["reviews"][i : i + 1]
    ]  # interleaved
    corpus = write_jsonl(tmp_path / "corpus.jsonl", rows)
    as_sets = write_jsonl(tmp_path / "sets.jsonl", sets)
    a = run_cli("summarize", corpus, "--model", tiny)
    b = run_cli("summarize", as_sets, "--model", tiny)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout and len(a.stdout.splitlines()) == 3


class CountingSummarizer:
    """Stands in for a Summarizer: a summary that names its set's first review's length."""

    path = None

    def summarize_results(
        self, sets, ratings, explain=False, *, method=None, slice, batch_size, raw=False
    ):
        from denoisesum.summarizer import SummaryResult

        assert len(sets) <= batch_size
        return [
            SummaryResult(f"Long {len(reviews[0])}", ["long", str(len(reviews[0]))])
            for reviews in sets
        ]

    def input_warnings(self, reviews):
        return []


def test_memory_is_bounded_by_the_batch_not_the_input(tmp_path, monkeypatch):
    """An 11 MB review-set file (and a corpus of the same reviews, unsorted) summarized into a
    .jsonl with far less than the input's size in memory at its peak."""
    import tracemalloc

    from denoisesum.data.corpus import Review

    review = "the pizza was great and the staff was friendly . " * 40  # 2 KB
    n = 6000
    source = tmp_path / "sets.jsonl"
    with source.open("w") as handle:
        for i in range(n):
            handle.write(json.dumps({"entity_id": f"e{i}", "reviews": [review]}) + "\n")
    assert source.stat().st_size > 11_000_000
    monkeypatch.setattr(bulk, "run_settings", lambda *a, **k: {"fake": True})
    warm = write_jsonl(tmp_path / "warm.jsonl", [{"entity_id": "w", "reviews": [review]}])
    bulk.run(CountingSummarizer(), str(warm), str(tmp_path / "warm.out.jsonl"))  # imports
    tracemalloc.start()
    try:
        written, before = bulk.run(
            CountingSummarizer(), str(source), str(tmp_path / "o.jsonl"), batch_size=8
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (written, before) == (n, 0)
    assert peak < 3_000_000, peak  # the ids seen (~150 bytes each), a batch
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == n
    # a corpus in any order: grouped with at most `limit` reviews in memory
    reviews = (Review(f"e{i % 1000}", review) for i in range(4000))
    tracemalloc.start()
    try:
        count = sum(1 for _ in inputs.group_corpus(reviews, limit=500))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 1000 and peak < 4_000_000, peak  # the corpus: 8 MB of text


def test_by_length_batches_alike_when_resumed(tiny, sets_file, reference, tmp_path):
    from types import SimpleNamespace

    sets = [SimpleNamespace(entity_id=f"e{i}", reviews=["x" * (i * 7 % 10 + 1)]) for i in range(40)]
    length = lambda s: len(s.reviews[0])  # noqa: E731
    whole = list(inputs.batches(sets, 3, by_length=length, window=4))
    assert [len(b) for b in whole] == [3, 3, 3, 3] * 3 + [3, 1]
    assert [length(s) for s in whole[0] + whole[1] + whole[2] + whole[3]] == sorted(
        length(s) for s in sets[:12]
    )
    order = [s.entity_id for b in whole for s in b]
    done = set(order[:7])  # a run killed after two batches and a truncated line
    rest = [s.entity_id for b in inputs.batches(sets, 3, done, length, window=4) for s in b]
    assert order[:7] + rest == order
    # the command: the same summaries, in the order of the windows
    out = tmp_path / "out.jsonl"
    done = run_cli("summarize", sets_file, "--model", tiny, "-o", out, "--by-length")
    assert done.returncode == 0, done.stderr
    assert sorted(out.read_text().splitlines()) == sorted(reference)
