import json

import pytest
from typer.testing import CliRunner

from conftest import run_cli
from denoisesum.cli import app

runner = CliRunner()


def test_help_lists_subcommands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("stats", "tokenize", "vocab", "train-lm", "cloze"):
        assert command in result.output


def test_stats(synthetic_corpus):
    result = runner.invoke(app, ["stats", str(synthetic_corpus), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert stats["reviews"] == 360 and stats["entities"] == 30
    assert stats["reviews_per_entity"]["mean"] == 12
    assert (stats["tokens_per_review"]["min"], stats["tokens_per_review"]["max"]) == (15, 16)


def test_bad_input_is_one_clear_line_not_a_traceback(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"entity_id": "a", "text": "ok"}\n{"entity_id": "a", "text": ""}\n')
    result = run_cli("stats", path)
    assert result.returncode == 2
    assert f"error: {path}, line 2, field 'text': empty text" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("stats", path, "--skip-bad")
    assert result.returncode == 0 and "skipped 1 bad record(s)" in result.stderr


def test_bad_config_override_is_a_clear_error(synthetic_corpus, tmp_path):
    result = run_cli("train-lm", synthetic_corpus, "-o", tmp_path / "lm", "--set", "train.lrr=1")
    assert result.returncode == 2 and "unknown config key 'train.lrr'" in result.stderr


def test_tokenize_command():
    result = runner.invoke(app, ["tokenize", "It was great.The staff can't wait"])
    assert result.output.splitlines() == [
        "it was great . the staff ca n't wait",
        "It was great. The staff can't wait",
    ]


@pytest.mark.parametrize("workers", [1])
def test_vocab_train_lm_and_cloze(synthetic_corpus, tmp_path, workers):
    result = runner.invoke(
        app,
        [
            "vocab",
            str(synthetic_corpus),
            "-o",
            str(tmp_path / "v.json"),
            "--min-count",
            "2",
            "--workers",
            str(workers),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "covering 100.00%" in result.output
    out = tmp_path / "lm"
    args = [
        "train-lm",
        str(synthetic_corpus),
        "-o",
        str(out),
        "--max-steps",
        "60",
        "--set",
        "model.hidden_dim=32",
        "--set",
        "model.embed_dim=16",
        "--set",
        "model.proj_dim=16",
        "--set",
        "model.cutoffs=[10]",
        "--set",
        "train.batch_tokens=256",
        "--set",
        "train.heldout_percent=20",
        "--set",
        "train.lr=0.01",
        "--set",
        "train.eval_every=30",
        "--set",
        "train.threads=1",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "held-out perplexity" in result.output
    assert {"model.safetensors", "config.json", "vocab.json", "results.json"} <= {
        p.name for p in out.iterdir()
    }
    # more steps on top of the finished run
    result = runner.invoke(app, [*args[:5], "80", *args[6:], "--resume"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "results.json").read_text())["steps"] == 80
    result = runner.invoke(app, ["cloze", str(out), "the _ was great and the staff was friendly"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("_1: ")
