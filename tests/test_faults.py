"""Hostile input and faults (issue 16): outputs that cannot or must not be written, file
modes, damaged models, incomplete checkpoints."""

import json
import os
import stat

import pytest
import torch

from conftest import UNREADABLE, ran_cli
from denoisesum.errors import InputError
from denoisesum.io import atomic_write, check_output, write_json


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_atomic_writes_honour_the_umask_and_keep_an_overwritten_files_mode(tmp_path):
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "new.json", {"a": 1})
        assert mode(tmp_path / "new.json") == 0o644  # not mkstemp's 0o600
        os.umask(0o077)
        write_json(tmp_path / "private.json", {})
        assert mode(tmp_path / "private.json") == 0o600
        (tmp_path / "shared.txt").write_text("x")
        os.chmod(tmp_path / "shared.txt", 0o664)
        with atomic_write(tmp_path / "shared.txt") as handle:
            handle.write("y")
        assert mode(tmp_path / "shared.txt") == 0o664
    finally:
        os.umask(old)


def test_an_output_that_is_a_directory_or_under_a_file_is_refused_before_writing(tmp_path):
    (tmp_path / "somedir").mkdir()
    with pytest.raises(InputError, match="somedir: is a directory"):
        check_output(tmp_path / "somedir")
    with pytest.raises(InputError, match="is a directory"), atomic_write(tmp_path / "somedir"):
        raise AssertionError("must not get here")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file, not a directory"):
        check_output(tmp_path / "file" / "out.jsonl")


def test_an_output_that_is_an_input_is_refused_whatever_path_names_it(tmp_path):
    source = tmp_path / "sets.jsonl"
    source.write_text("{}\n")
    os.link(source, tmp_path / "hardlink.jsonl")
    for same in (source, tmp_path / "." / "sets.jsonl", tmp_path / "hardlink.jsonl"):
        with pytest.raises(InputError, match="is also an input"):
            check_output(same, [source])
    check_output(tmp_path / "other.jsonl", [source])  # fine
    check_output(tmp_path / "new.jsonl", ["-"])


def test_resume_falls_back_to_the_newest_complete_checkpoint(tmp_path, capsys):
    from denoisesum.data.vocab import Vocab
    from denoisesum.training.checkpoint import STATE, latest_checkpoint, save_checkpoint

    vocab = Vocab.from_counts({"a": 2})
    model = torch.nn.Linear(2, 2)
    for step in (10, 20):
        save_checkpoint(tmp_path, step, model, {"kind": "x"}, vocab, {"step": step}, keep=3)
    assert latest_checkpoint(tmp_path).name == "step-000000020"
    (tmp_path / "checkpoints" / "step-000000020" / STATE).unlink()  # cut off mid-write
    assert latest_checkpoint(tmp_path).name == "step-000000010"
    assert "step-000000020 is incomplete" in capsys.readouterr().err
    (tmp_path / "checkpoints" / "step-000000010" / STATE).unlink()
    assert latest_checkpoint(tmp_path) is None


def test_a_damaged_model_file_is_one_error_naming_the_file(tmp_path):
    from conftest import save_tiny_summarizer
    from denoisesum.summarizer import Summarizer, SummarizerConfig

    directory = save_tiny_summarizer(tmp_path / "model", SummarizerConfig())
    weights = directory / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])  # truncated
    with pytest.raises(InputError, match=r"model\.safetensors: unreadable weights"):
        Summarizer.from_pretrained(directory)
    directory = save_tiny_summarizer(tmp_path / "model2", SummarizerConfig())
    (directory / "config.json").write_text("{not json")
    with pytest.raises(InputError, match=r"config\.json.*invalid JSON"):
        Summarizer.from_pretrained(directory)
    directory = save_tiny_summarizer(tmp_path / "model3", SummarizerConfig())
    (directory / "vocab.json").write_text(json.dumps([1, 2]))
    with pytest.raises(InputError, match=r"vocab\.json: not a denoisesum vocabulary"):
        Summarizer.from_pretrained(directory)


# ---- through the command line -----------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from conftest import save_tiny_summarizer
    from denoisesum.inference.beam import SearchConfig
    from denoisesum.summarizer import SummarizerConfig

    settings = SummarizerConfig(search=SearchConfig(beam=2, min_words=2, max_words=6))
    return save_tiny_summarizer(tmp_path_factory.mktemp("m") / "tiny", settings)


@pytest.fixture
def sets_file(tmp_path):
    path = tmp_path / "sets.jsonl"
    path.write_text(
        json.dumps(
            {
                "entity_id": "a",
                "reviews": ["good food", "nice staff"],
                "summaries": ["good food and staff"],
            }
        )
        + "\n"
    )
    return path


def test_summarize_refuses_a_directory_output_before_decoding(tiny_model, sets_file, tmp_path):
    (tmp_path / "somedir").mkdir()
    result = ran_cli("summarize", sets_file, "--model", tiny_model, "-o", tmp_path / "somedir")
    assert result.exit_code != 0 and "somedir: is a directory" in result.output
    assert "Traceback" not in result.output and not list((tmp_path / "somedir").iterdir())


def test_no_command_overwrites_its_input(tiny_model, sets_file, tmp_path):
    before = sets_file.read_text()
    result = ran_cli("summarize", sets_file, "--model", tiny_model, "-o", sets_file)
    assert result.exit_code != 0 and "is also an input" in result.output
    assert sets_file.read_text() == before
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"entity_id": "a", "summary": "good food"}) + "\n")
    kept = predictions.read_text()
    result = ran_cli(
        "evaluate", predictions, sets_file, "--metrics", "rouge", "--per-entity", predictions
    )
    assert result.exit_code != 0 and "is also an input" in result.output
    assert predictions.read_text() == kept
    result = ran_cli("baseline", "first", sets_file, "-o", sets_file)
    assert result.exit_code != 0 and sets_file.read_text() == before
    result = ran_cli(
        "leaderboard",
        sets_file,
        "--predictions",
        f"p={predictions}",
        "--metrics",
        "rouge",
        "--baselines",
        "first",
        "-o",
        predictions,
    )
    assert result.exit_code != 0 and predictions.read_text() == kept


def test_a_directory_given_as_an_input_file_is_named_as_one(tiny_model, tmp_path):
    (tmp_path / "d").mkdir()
    for args in (
        ("summarize", tmp_path / "d", "--model", tiny_model),
        ("evaluate", tmp_path / "d", tmp_path / "d", "--metrics", "rouge"),
        ("stats", tmp_path / "d"),
    ):
        result = ran_cli(*args)
        assert result.exit_code != 0 and "is a directory" in result.output, args
        assert "no such file" not in result.output


def test_an_output_directory_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "run").write_text("not a directory")
    result = ran_cli("train", tmp_path, "-o", tmp_path / "run")
    assert result.exit_code != 0 and "is a file; the output must be a directory" in result.output


def test_unreadable_input_is_flagged_and_refused_under_strict(tiny_model, tmp_path):
    from conftest import synthetic_reviews

    english = [r["text"] for r in synthetic_reviews(1, 4)]
    sets = tmp_path / "sets.jsonl"
    sets.write_text(
        "".join(
            json.dumps({"entity_id": name, "reviews": reviews}) + "\n"
            for name, reviews in [*UNREADABLE.items(), ("en", english)]
        )
    )
    out = tmp_path / "out.jsonl"
    result = ran_cli("summarize", sets, "--model", tiny_model, "-o", out)
    assert result.exit_code == 0, result.output
    records = {r["entity_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    for name in UNREADABLE:
        assert records[name]["warnings"], name
        assert f"warning: entity {name}:" in result.output
    assert "warnings" not in records["en"]
    strict = ran_cli(
        "summarize", sets, "--model", tiny_model, "-o", tmp_path / "s.jsonl", "--strict"
    )
    assert (
        strict.exit_code != 0
        and "--strict: 5 review set(s) the model cannot read" in strict.output
        and not (tmp_path / "s.jsonl").exists()
    )


def test_the_python_api_warns_on_unreadable_input(tiny_model):
    from denoisesum.summarizer import Summarizer, UnreadableInputWarning

    summarizer = Summarizer.from_pretrained(tiny_model)
    for name, reviews in UNREADABLE.items():
        with pytest.warns(UnreadableInputWarning):
            summarizer.summarize(reviews)
        assert summarizer.input_warnings(reviews), name


def test_resume_falls_back_when_the_newest_state_is_truncated(tmp_path, capsys):
    from denoisesum.data.vocab import Vocab
    from denoisesum.training.checkpoint import STATE, latest_checkpoint, save_checkpoint

    vocab = Vocab.from_counts({"a": 2})
    model = torch.nn.Linear(2, 2)
    for step in (10, 20):
        save_checkpoint(tmp_path, step, model, {"kind": "x"}, vocab, {"step": step}, keep=3)
    state = tmp_path / "checkpoints" / "step-000000020" / STATE
    state.write_bytes(state.read_bytes()[:100])  # a damaged disk, a copy cut short
    assert latest_checkpoint(tmp_path).name == "step-000000010"
    assert "step-000000020 is incomplete" in capsys.readouterr().err
