"""Hostile input, round two (issue 33): no silent data loss. Each case through the real
command: a compressed file cut short, a CSV quote never closed, an output that is not a
regular file, a fit stage whose output was damaged after it ran."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import zstandard

from conftest import refused, run_cli, synthetic_reviews


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def cut_in_half(data: bytes) -> bytes:
    return data[: len(data) // 2]


# ---- silent data loss: a truncated compressed file -----------------------------------------


def test_stats_on_a_zst_cut_in_half_is_an_error(tmp_path):
    path = tmp_path / "corpus.jsonl.zst"
    path.write_bytes(
        cut_in_half(zstandard.ZstdCompressor().compress(jsonl(synthetic_reviews(30, 12))))
    )
    done = run_cli("stats", path)
    assert refused(done, "corpus.jsonl.zst, line 1: cannot read (corrupt or truncated file?)"), (
        done.stdout + done.stderr
    )


def test_summarize_on_a_zst_cut_in_half_is_an_error_not_0_summaries(tmp_path):
    sets = [
        {"entity_id": f"e{i}", "reviews": ["good pizza here", "nice staff and food"]}
        for i in range(300)
    ]
    path = tmp_path / "sets.jsonl.zst"
    path.write_bytes(cut_in_half(zstandard.ZstdCompressor().compress(jsonl(sets))))
    done = run_cli("summarize", path, "-o", tmp_path / "out.jsonl")
    assert refused(done, "sets.jsonl.zst, line 1: cannot read (corrupt or truncated"), (
        done.stdout + done.stderr
    )
    assert not (tmp_path / "out.jsonl").exists()


# ---- silent data loss: a CSV quote never closed --------------------------------------------


def test_stats_on_a_csv_with_an_unterminated_quote_names_its_line(tmp_path):
    rows = ["entity_id,text", *(f"e{i % 3},review {i} was fine" for i in range(100))]
    rows[3] = 'e1,"this quote is never closed'
    path = tmp_path / "corpus.csv"
    path.write_text("\n".join(rows) + "\n")
    for skip in ([], ["--skip-bad"]):
        done = run_cli("stats", path, *skip)
        assert refused(done, "corpus.csv, line 4: unterminated quote"), done.stdout + done.stderr


# ---- an output that is not a regular file is written through, never replaced ---------------


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(jsonl(synthetic_reviews(3, 4)))
    return path


def written_vocab(text: str) -> dict:
    """The vocabulary JSON at the start of `text` (the command's own message may follow)."""
    return json.JSONDecoder().raw_decode(text)[0]


def test_output_onto_a_fifo_writes_into_it(corpus, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()  # a reader waiting, as `cat fifo` would be
    done = run_cli("vocab", corpus, "-o", fifo, "--min-count", "1")
    if reader.is_alive():  # never opened for writing: let the reader go
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    reader.join(10)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode), "the FIFO was replaced by a regular file"
    assert "the" in written_vocab(got[0].decode())["tokens"]


def test_output_onto_a_symlink_to_a_device_or_stdout_writes_through(corpus, tmp_path):
    null, stdout = tmp_path / "null", tmp_path / "stdout"
    null.symlink_to("/dev/null")
    stdout.symlink_to("/proc/self/fd/1")
    done = run_cli("vocab", corpus, "-o", null, "--min-count", "1")
    assert done.returncode == 0, done.stderr
    assert null.is_symlink() and stat.S_ISCHR(null.stat().st_mode)
    done = run_cli("vocab", corpus, "-o", stdout, "--min-count", "1")
    assert done.returncode == 0, done.stderr
    assert stdout.is_symlink()
    assert "the" in written_vocab(done.stdout)["tokens"]


def test_output_onto_a_symlink_to_a_file_replaces_the_file_keeps_the_link(corpus, tmp_path):
    target, link = tmp_path / "vocab.json", tmp_path / "link.json"
    target.write_text("old\n")
    link.symlink_to(target)
    done = run_cli("vocab", corpus, "-o", link, "--min-count", "1")
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and "the" in json.loads(target.read_text())["tokens"]


def test_output_onto_a_socket_is_refused_in_one_line(corpus, tmp_path):
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        done = run_cli("vocab", corpus, "-o", path, "--min-count", "1")
    assert refused(done, "sock: is not a regular file and cannot be written"), done.stderr
    assert stat.S_ISSOCK(path.lstat().st_mode)


# ---- files the system does not control: one line naming the file, never a traceback --------


@pytest.fixture
def sets(tmp_path) -> Path:
    path = tmp_path / "sets.jsonl"
    path.write_bytes(jsonl([{"entity_id": "e1", "reviews": ["good pizza", "nice staff"]}]))
    return path


def test_output_under_proc_is_refused_before_any_work(corpus, sets):
    done = run_cli("vocab", corpus, "-o", "/proc/vocab.json", "--min-count", "1")
    assert refused(done, "/proc/vocab.json: cannot be written (/proc:"), done.stderr
    done = run_cli("baseline", "first", sets, "-o", "/proc/x/predictions.jsonl")
    assert refused(done, "/proc/x/predictions.jsonl: cannot be written (/proc:"), done.stderr


@pytest.mark.parametrize("command", [["baseline", "first"], ["summarize"]])
def test_stdout_onto_dev_full_is_one_line(command, sets):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "denoisesum.cli", *command, str(sets)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
    assert refused(done, "standard output: cannot write: No space left on device"), done.stderr
    assert done.stderr.strip().count("\n") <= 1 or "summarize:" in done.stderr, done.stderr


def test_output_onto_dev_full_is_one_line(corpus):
    done = run_cli("vocab", corpus, "-o", "/dev/full", "--min-count", "1")
    assert refused(done, "/dev/full: cannot write: No space left on device"), done.stderr


def in_process(monkeypatch, *args):
    """The command run by main() in this process (so the system's answers can be faked):
    (exit code, stderr)."""
    import contextlib
    import io

    from denoisesum import cli

    monkeypatch.setattr(sys, "argv", ["denoisesum", *map(str, args)])
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        cli.main()
    return stop.value.code, err.getvalue()


def fail_with(errno_: int):
    def fail(*args, **kwargs):
        raise OSError(errno_, os.strerror(errno_))

    return fail


def test_output_into_a_directory_without_write_permission_is_one_line(monkeypatch, sets, tmp_path):
    import errno
    import tempfile

    # root may write anywhere: the system's refusal is faked
    monkeypatch.setattr(tempfile, "mkstemp", fail_with(errno.EACCES))
    code, err = in_process(monkeypatch, "baseline", "first", sets, "-o", tmp_path / "p.jsonl")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "p.jsonl: cannot be written" in err and "Permission denied" in err, err


def test_output_onto_a_file_owned_by_someone_else_is_one_line(monkeypatch, sets, tmp_path):
    import errno

    out = tmp_path / "p.jsonl"
    out.write_text("theirs\n")
    # in a sticky directory (/tmp) renaming over another user's file is refused
    monkeypatch.setattr(os, "replace", fail_with(errno.EPERM))
    code, err = in_process(monkeypatch, "baseline", "first", sets, "-o", out)
    assert code == 2 and err.count("\n") == 1, err
    assert f"error: {out}: cannot write: Operation not permitted" in err, err
    assert out.read_text() == "theirs\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".p.jsonl")] == []


def test_a_full_disk_keeps_the_old_file_leaves_no_temp_file_one_line(monkeypatch, sets, tmp_path):
    import errno

    out = tmp_path / "p.jsonl"
    out.write_text("old\n")
    monkeypatch.setattr(os, "fsync", fail_with(errno.ENOSPC))
    code, err = in_process(monkeypatch, "baseline", "first", sets, "-o", out)
    assert code == 2 and err.count("\n") == 1, err
    assert f"error: {out}: cannot write: No space left on device" in err, err
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl", "sets.jsonl"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from conftest import save_tiny_summarizer
    from denoisesum.summarizer import SummarizerConfig

    return save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", SummarizerConfig())


def model_copy(tiny_model: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(tiny_model, tmp_path / "model"))


DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize("name", ["config.json", "vocab.json"])
@pytest.mark.parametrize(
    "content, message",
    [(b'{"a": "\xff\xfe"}', "undecodable bytes (not UTF-8)"), (DEEP, "nested too deeply")],
    ids=["not-utf8", "deep"],
)
def test_a_model_file_not_utf8_or_nested_deep_is_one_line_naming_it(
    name, content, message, tiny_model, sets, tmp_path
):
    model = model_copy(tiny_model, tmp_path)
    (model / name).write_bytes(content)
    done = run_cli("summarize", sets, "--model", model)
    assert refused(
        done,
        f"{model / name}: {message}"
        if message[0] == "u"
        else f"{model / name}: invalid JSON: {message}",
    ), done.stderr


def test_a_vocabulary_whose_token_is_a_number_names_the_file_and_entry(tiny_model, sets, tmp_path):
    model = model_copy(tiny_model, tmp_path)
    vocab = json.loads((model / "vocab.json").read_text())
    vocab["tokens"][7] = 5
    (model / "vocab.json").write_text(json.dumps(vocab))
    done = run_cli("summarize", sets, "--model", model)
    assert refused(
        done,
        f"{model / 'vocab.json'}: malformed vocabulary: entry 7 of 'tokens' is 5, not a string",
    ), done.stderr


def test_a_fit_stage_record_not_utf8_or_nested_deep_is_one_line_naming_it(tmp_path):
    from denoisesum.errors import InputError
    from denoisesum.fit.ledger import read_record, record_path

    for content, message in ((b"\xff{}", "not UTF-8"), (DEEP, "nested too deeply")):
        record_path(tmp_path, "lm").write_bytes(content)
        with pytest.raises(InputError, match=message) as caught:
            read_record(tmp_path, "lm")
        assert str(record_path(tmp_path, "lm")) in str(caught.value)


# ---- wording: the validation library's phrases never reach users ---------------------------


@pytest.mark.parametrize(
    "line, message",
    [
        ("[1,2,3]", "sets.jsonl, line 1: must be a JSON object with entity_id and reviews"),
        (
            '{"entity_id": "e1", "reviews": [" "]}',
            "sets.jsonl, line 1, field 'reviews': review 0 is empty",
        ),
        (
            '{"entity_id": "e1", "reviews": []}',
            "sets.jsonl, line 1, field 'reviews': must hold at least 1 review (it holds 0)",
        ),
    ],
    ids=["array", "blank-review", "no-review"],
)
def test_a_bad_review_set_line_reads_plainly(line, message, tmp_path):
    path = tmp_path / "sets.jsonl"
    path.write_text(line + "\n")
    done = run_cli("baseline", "first", path)
    assert refused(done, message), done.stderr
    for words in ("valid dictionary", "instance of", "Value error", "after validation"):
        assert words not in done.stderr, done.stderr


def test_a_mistyped_setting_reads_plainly(corpus, tmp_path):
    done = run_cli("train-lm", corpus, "-o", tmp_path / "lm", "--set", "train.lr=abc")
    assert refused(done, "config key 'train.lr': must be a number (got 'abc')"), done.stderr
    assert "Input should be" not in done.stderr
