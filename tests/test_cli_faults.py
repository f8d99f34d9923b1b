"""Faults found by auditing every command's file options (issue 16, "the same class of fault in
the commands not named"): an output that would overwrite an input, an output checked only after
the work, a traceback or a misleading message for a bad input. Each through the real command."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ran_cli, synthetic_reviews, write_jsonl


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", synthetic_reviews(3, 4))


@pytest.fixture
def sets(tmp_path) -> Path:
    return write_jsonl(
        tmp_path / "sets.jsonl",
        [
            {
                "entity_id": "a",
                "reviews": ["good food here", "nice staff"],
                "summaries": ["good food"],
            },
            {"entity_id": "b", "reviews": ["cold soup", "rude waiter"], "summaries": ["cold soup"]},
        ],
    )


@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("not a directory\n")
    return path


# ---- outputs that would overwrite an input --------------------------------------------------


def test_vocab_refuses_to_overwrite_a_corpus_file(corpus, tmp_path):
    before = corpus.read_text()
    result = ran_cli("vocab", "*.jsonl", "-o", "corpus.jsonl", cwd=tmp_path)  # a glob names it
    assert result.refused("corpus.jsonl: is also an input"), result.output
    assert corpus.read_text() == before


def test_baseline_refuses_to_overwrite_its_corpus(corpus, sets):
    before = corpus.read_text()
    result = ran_cli("baseline", "word2vec", sets, "--corpus", corpus, "-o", corpus)
    assert result.refused("is also an input"), result.output
    assert corpus.read_text() == before and "sampled" not in result.stderr  # before training


def test_leaderboard_refuses_to_overwrite_a_system_or_corpus_file(corpus, sets, tmp_path):
    systems = tmp_path / "systems"
    systems.mkdir()
    released = write_jsonl(
        systems / "first.jsonl", [{"entity_id": e, "summary": "good"} for e in "ab"]
    )
    before = {p: p.read_text() for p in (released, corpus)}
    base = ("leaderboard", sets, "--metrics", "rouge", "--baselines", "first")
    for args in (
        ("--systems", systems, "-o", released),
        ("--baselines", "word2vec", "--corpus", corpus, "-o", corpus),
        (
            "--systems",
            systems,
            "--save-predictions",
            systems,  # would write first.jsonl
            "-o",
            tmp_path / "board.md",
        ),
    ):
        result = ran_cli(*base, *args)
        assert result.refused("is also an input"), (args, result.output)
        assert "first:" not in result.stderr  # refused before any baseline ran
    assert {p: p.read_text() for p in before} == before
    assert not (tmp_path / "board.md").exists()


def test_leaderboard_refuses_a_save_predictions_file_before_any_baseline(sets, a_file, tmp_path):
    result = ran_cli(
        "leaderboard",
        sets,
        "--metrics",
        "rouge",
        "--baselines",
        "first",
        "--save-predictions",
        a_file,
        "-o",
        tmp_path / "board.md",
    )
    assert result.refused(f"{a_file}: is a file; the output must be a directory"), result.output
    assert "first:" not in result.stderr and not (tmp_path / "board.md").exists()


def test_a_word2vec_folder_that_is_a_file_is_refused_before_training(
    corpus, sets, a_file, tmp_path
):
    for args in (
        ("baseline", "word2vec", sets, "--corpus", corpus, "--model", a_file),
        (
            "leaderboard",
            sets,
            "--metrics",
            "rouge",
            "--baselines",
            "word2vec",
            "--corpus",
            corpus,
            "--word2vec-model",
            a_file,
            "-o",
            tmp_path / "b.md",
        ),
    ):
        result = ran_cli(*args)
        assert result.refused(f"{a_file}: is a file; the output must be a directory"), (
            args,
            result.output,
        )
        assert "fitted" not in result.stderr  # not trained, then refused


# ---- bad inputs: one line naming the problem ------------------------------------------------


def test_leaderboard_notes_that_are_a_directory_missing_or_not_text(sets, tmp_path):
    (tmp_path / "notes_dir").mkdir()
    (tmp_path / "latin1.md").write_bytes("Caf\xe9 notes".encode("latin-1"))
    for notes, message in (
        ("notes_dir", "is a directory, not a file"),
        ("missing.md", "no such file"),
        ("latin1.md", "not UTF-8 text (byte 3)"),
    ):
        result = ran_cli(
            "leaderboard",
            sets,
            "--metrics",
            "rouge",
            "--baselines",
            "first",
            "--notes",
            tmp_path / notes,
            "-o",
            tmp_path / "board.md",
        )
        assert result.refused(f"{notes}, field '--notes': {message}"), result.output


def test_leaderboard_predictions_without_a_name_is_one_line_when_the_page_exists(sets, tmp_path):
    page = tmp_path / "board.md"
    page.write_text("# an earlier page\n")
    result = ran_cli(
        "leaderboard",
        sets,
        "--baselines",
        "",
        "--metrics",
        "rouge",
        "--predictions",
        "nofile",
        "-o",
        page,
    )
    assert result.refused("field '--predictions': expected NAME=FILE, got 'nofile'"), result.output
    assert page.read_text() == "# an earlier page\n"
    assert result.stdout == ""


def test_a_config_that_is_a_directory_missing_or_not_utf8_is_one_line(corpus, tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "latin1.toml").write_bytes("# caf\xe9\n".encode("latin-1"))
    for args, message in (
        (
            ("train-lm", corpus, "-o", tmp_path / "lm", "--config", tmp_path / "configs"),
            "configs, field '--config': is a directory, not a file",
        ),
        (
            (
                "synthesize",
                corpus,
                "--lm",
                tmp_path / "lm",
                "-o",
                tmp_path / "pairs",
                "--config",
                tmp_path / "none.toml",
            ),
            "none.toml, field '--config': no such file",
        ),
        (
            ("train", tmp_path, "-o", tmp_path / "run", "--config", tmp_path / "latin1.toml"),
            "latin1.toml, field '--config': not UTF-8 text (byte 5)",
        ),
    ):
        result = ran_cli(*args)
        assert result.refused(message), (args, result.output)


def test_a_cache_that_is_a_file_is_refused_before_tokenizing(corpus, a_file, tmp_path):
    for args in (
        ("vocab", corpus, "-o", tmp_path / "vocab.json"),
        ("train-lm", corpus, "-o", tmp_path / "lm"),
        ("synthesize", corpus, "--lm", tmp_path / "lm", "-o", tmp_path / "pairs"),
        ("train", tmp_path, "-o", tmp_path / "run"),
    ):
        result = ran_cli(*args, "--cache", a_file)
        assert result.refused(f"{a_file}: is a file; the output must be a directory"), (
            args,
            result.output,
        )
        assert "tokenizing" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "corpus.jsonl"]


def test_synthesize_checks_its_language_model_before_tokenizing(corpus, tmp_path):
    (tmp_path / "empty").mkdir()
    for lm, message in (
        ("missing", "no such model directory"),
        ("empty", "not a model directory: model.safetensors is missing"),
    ):
        result = ran_cli(
            "synthesize", corpus, "--lm", tmp_path / lm, "-o", tmp_path / "pairs", "--workers", "0"
        )
        assert result.refused(f"{lm}: {message}"), result.output
        assert "tokenizing" not in result.stderr and not (tmp_path / "pairs").exists()


def test_synthesize_dev_and_excluded_entities_are_named_not_called_corrupt(corpus, tmp_path):
    (tmp_path / "dev").mkdir()
    for option, path, message in (
        ("--dev", "dev", "is a directory, not a file"),
        ("--exclude-entities", "ids.txt", "no such file"),
    ):
        result = ran_cli(
            "synthesize",
            corpus,
            "--lm",
            tmp_path / "lm",
            "-o",
            tmp_path / "out",
            option,
            tmp_path / path,
        )
        assert result.refused(f"{path}, field '{option}': {message}"), result.output
        assert "corrupt" not in result.output


def test_train_checks_its_vocab_and_topic_model_before_the_caches(a_file, tmp_path):
    (tmp_path / "pairs").mkdir()
    (tmp_path / "vocab_dir").mkdir()
    for args, message in (
        (
            ("--vocab", tmp_path / "vocab_dir"),
            "vocab_dir, field '--vocab': is a directory, not a file",
        ),
        (("--topics", a_file), f"{a_file}: not a topic model directory (topics.json is missing"),
    ):
        result = ran_cli("train", tmp_path / "pairs", "-o", tmp_path / "run", *args)
        assert result.refused(message), (args, result.output)
        assert not (tmp_path / "run").exists()  # refused before the run directory is made


def test_fit_names_a_config_or_dev_that_is_a_directory(corpus, tmp_path):
    (tmp_path / "folder").mkdir()
    for option in ("--config", "--dev"):
        result = ran_cli(
            "fit", corpus, "-o", tmp_path / "model", "--preset", "tiny", option, tmp_path / "folder"
        )
        assert result.refused(f"folder, field '{option}': is a directory, not a file"), (
            result.output
        )
        assert not (tmp_path / "model").exists()
