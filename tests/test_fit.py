"""`denoisesum fit`: the whole chain on a tiny corpus with the `tiny` preset; a rerun skips every
stage; a changed setting is refused; a run killed in the middle of training finishes, when run
again, with the same model as an uninterrupted run."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from conftest import synthetic_reviews, write_jsonl
from denoisesum.cli import app
from denoisesum.data.reviewsets import ReviewSet
from denoisesum.errors import ConfigError, DenoiseSumError
from denoisesum.fit.config import apply_budget, flatten, preset_config
from denoisesum.fit.decoding import search_min_length
from denoisesum.fit.presets import PRESETS
from denoisesum.fit.request import FitRequest, fit_config
from denoisesum.noising.pipeline import shortfall

STAGES = ["tokenize", "lm", "synthesize", "topics", "train", "decode", "aspects", "export"]


def fit_args(corpus: Path, model: Path, *extra: str) -> list[str]:
    return ["fit", str(corpus), "-o", str(model), "--preset", "tiny", *extra]


def report(model: Path) -> dict:
    return json.loads((model / "fit-report.json").read_text())


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """One uninterrupted run of the whole chain (the reference of the other tests)."""
    root = tmp_path_factory.mktemp("fit")
    corpus = write_jsonl(root / "corpus.jsonl", synthetic_reviews())
    model = root / "model"
    threads = torch.get_num_threads()
    result = CliRunner().invoke(app, fit_args(corpus, model))
    torch.set_num_threads(threads)
    assert result.exit_code == 0, result.output
    return {"root": root, "corpus": corpus, "model": model, "output": result.output}


def test_fit_runs_every_stage_into_one_directory(fitted):
    model, output = fitted["model"], fitted["output"]
    for number, stage in enumerate(STAGES, 1):  # each stage says its name, then one summary line
        assert f"[{number}/8] {stage}: " in output
        assert (
            sum(line.startswith(f"[{number}/8] {stage}: done in ") for line in output.splitlines())
            == 1
        )
    assert "24 pairs of the 24 asked for; 360 of 360 reviews qualify" in output
    saved = report(model)
    assert saved["finished"] and [s["stage"] for s in saved["stages"]] == STAGES
    assert {s["status"] for s in saved["stages"]} == {"ran"}
    for sub in ("encoded", "lm", "pairs", "topics", "train"):
        assert (model / "work" / sub).is_dir()
    # the model at the root is the trained one, with the chosen decoding
    config = json.loads((model / "config.json").read_text())
    decode = json.loads((model / "work" / "decode.stage.json").read_text())["result"]
    assert decode["how"] == "candidate-median" and decode["min_length"] in (15, 16)
    assert config["summarize"]["search"]["min_words"] == decode["min_length"]
    assert config["train"]["select_on"] == "synthetic-loss"
    weights, trained = (
        load_file(str(d / "model.safetensors")) for d in (model, model / "work" / "train")
    )
    # stored as fp16 (export.fp16_weights): the trained weights rounded
    for k, v in trained.items():
        assert torch.equal(weights[k], v.half() if v.is_floating_point() else v)
        assert weights[k].dtype == (torch.float16 if v.is_floating_point() else v.dtype)
    # the LM had the summarizer's sizes: every LSTM was copied
    init = json.loads((model / "work" / "train" / "lm-init.json").read_text())
    assert init["skipped"] == [] and len(init["copied"]) == 4
    sets = write_jsonl(
        fitted["root"] / "sets.jsonl",
        [{"entity_id": "a", "reviews": ["the pizza was great and the staff was friendly ."]}],
    )
    result = CliRunner().invoke(app, ["summarize", str(sets), "--model", str(model)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[0])["summary"]


def test_a_rerun_skips_every_stage(fitted):
    model = fitted["model"]
    before = (model / "model.safetensors").stat().st_mtime_ns
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert result.exit_code == 0, result.output
    assert [s["status"] for s in report(model)["stages"]] == ["skipped"] * 8
    assert result.output.count(": skipped (done earlier") == 8
    assert "fit: 8 skipped" in result.output
    assert (model / "model.safetensors").stat().st_mtime_ns == before


def test_a_truncated_exported_model_is_made_again(fitted, tmp_path):
    """It used to be skipped ("7 skipped", exit 0), the broken model left as the result."""
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    os.truncate(model / "model.safetensors", 100)
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert result.exit_code == 0, result.output
    assert (
        "[8/8] export: its output changed since it ran (model.safetensors: 100 bytes, "
        in result.output
    )
    assert [s["status"] for s in report(model)["stages"]] == ["skipped"] * 7 + ["ran"]
    assert (model / "model.safetensors").read_bytes() == (
        fitted["model"] / "model.safetensors"
    ).read_bytes()


@pytest.mark.parametrize(
    ("damage", "stage", "says"),
    [
        (
            lambda p: os.truncate(p / "train" / "model.safetensors", 100),
            "train",
            "work/train/model.safetensors: 100 bytes, ",
        ),
        (lambda p: (p / "lm" / "vocab.json").unlink(), "lm", "work/lm/vocab.json: missing"),
        (
            lambda p: (p / "pairs" / "manifest.json").write_text(
                (p / "pairs" / "manifest.json").read_text().replace("1", "2", 1)
            ),
            "synthesize",
            "work/pairs/manifest.json: changed since made (another SHA-256)",
        ),
    ],
    ids=["truncated", "deleted", "edited"],
)
def test_a_damaged_output_of_a_long_stage_is_refused_before_any_work(
    fitted, tmp_path, damage, stage, says
):
    """A stage that cannot make its output again refuses to be skipped over a damaged one."""
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    damage(model / "work")
    before = (model / "fit-report.json").read_bytes()
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert isinstance(result.exception, DenoiseSumError)
    assert str(result.exception).startswith(
        f"stage '{stage}' (work/{'pairs' if stage == 'synthesize' else stage}): its output "
        f"changed since it ran ({says}"
    )
    assert "delete work/" in str(result.exception)
    assert (model / "fit-report.json").read_bytes() == before  # nothing ran
    if stage == "train":  # as the message says: its output deleted, the stage is made again
        shutil.rmtree(model / "work" / "train")
        result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
        assert result.exit_code == 0, result.output
        assert [s["status"] for s in report(model)["stages"]][4] == "ran"


def test_the_same_corpus_copied_elsewhere_is_reused_and_another_refused(fitted, tmp_path):
    """The corpus is known by its bytes, not its place or time: a copy (new mtime, another
    folder) skips every stage; one review changed refuses the tokenized corpus."""
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    copy = tmp_path / "elsewhere" / fitted["corpus"].name
    copy.parent.mkdir()
    shutil.copy(fitted["corpus"], copy)
    os.utime(copy, (time.time() + 3600, time.time() + 3600))
    result = CliRunner().invoke(app, fit_args(copy, model))
    assert result.exit_code == 0, result.output
    assert [s["status"] for s in report(model)["stages"]] == ["skipped"] * 8
    copy.write_text(copy.read_text().replace("great", "grand", 1))
    result = CliRunner().invoke(app, fit_args(copy, model))
    assert isinstance(result.exception, DenoiseSumError)
    assert str(result.exception).startswith("stage 'tokenize' (work/encoded) was run with corpus")


def test_a_run_made_before_the_content_fingerprint_is_upgraded(fitted, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    path = model / "work" / "tokenize.stage.json"
    record = json.loads(path.read_text())
    corpus = fitted["corpus"]
    old = [{"path": str(corpus.resolve()), "bytes": corpus.stat().st_size, "mtime": 1}]
    record["settings"]["corpus"] = old
    path.write_text(json.dumps(record))
    result = CliRunner().invoke(app, fit_args(corpus, model))
    assert result.exit_code == 0, result.output
    assert [s["status"] for s in report(model)["stages"]] == ["skipped"] * 8
    assert "sha256" in json.loads(path.read_text())["settings"]["corpus"][0]
    record["settings"]["corpus"] = [{**old[0], "bytes": old[0]["bytes"] + 1}]  # another corpus
    path.write_text(json.dumps(record))
    result = CliRunner().invoke(app, fit_args(corpus, model))
    assert isinstance(result.exception, DenoiseSumError)
    assert str(result.exception).startswith("stage 'tokenize' (work/encoded) was run with corpus")


@pytest.mark.parametrize(
    ("override", "stage"), [("train.train.lr=0.02", "train"), ("synthesize.pairs=30", "synthesize")]
)
def test_a_changed_setting_is_refused_before_any_work(fitted, override, stage):
    model = fitted["model"]
    records = {p.name: p.read_bytes() for p in (model / "work").glob("*.stage.json")}
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model, "--set", override))
    assert isinstance(result.exception, DenoiseSumError)
    key, value = override.split("=")
    message = str(result.exception)
    assert message.startswith(f"stage '{stage}' (work/") and f"{key} = " in message
    assert f"now {value}" in message
    assert {p.name: p.read_bytes() for p in (model / "work").glob("*.stage.json")} == records


def test_a_changed_decoding_setting_remakes_the_last_stages_only(fitted, tmp_path):
    """decode.* settings (here the exported shortlist) make the decoding choice and the export
    again, from the trained summarizer: nothing is refused and no training is redone."""
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    weights = (model / "model.safetensors").read_bytes()
    assert json.loads((model / "config.json").read_text())["summarize"]["shortlist"] == 0
    result = CliRunner().invoke(
        app, fit_args(fitted["corpus"], model, "--set", "decode.shortlist=3")
    )
    assert result.exit_code == 0, result.output
    assert "decode: decode.shortlist changed since it ran: making it again" in result.output
    assert [s["status"] for s in report(model)["stages"]] == ["skipped"] * 5 + [
        "ran",
        "skipped",
        "ran",
    ]
    assert json.loads((model / "config.json").read_text())["summarize"]["shortlist"] == 3
    assert (model / "model.safetensors").read_bytes() == weights
    again = CliRunner().invoke(
        app, fit_args(fitted["corpus"], model, "--set", "decode.shortlist=3")
    )
    assert again.exit_code == 0 and "fit: 8 skipped" in again.output
    bad = CliRunner().invoke(app, fit_args(fitted["corpus"], model, "--set", "decode.shortlist=-1"))
    assert "'decode.shortlist': -1 must be at least 0" in str(bad.exception)


def test_fp16_weights_false_exports_the_trained_weights_as_they_are(fitted, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    result = CliRunner().invoke(
        app, fit_args(fitted["corpus"], model, "--set", "export.fp16_weights=false")
    )
    assert result.exit_code == 0, result.output
    assert "parameters (fp32)" in result.output
    assert [s["status"] for s in report(model)["stages"]] == ["skipped"] * 7 + ["ran"]
    assert (model / "model.safetensors").read_bytes() == (
        model / "work" / "train" / "model.safetensors"
    ).read_bytes()


def test_an_fp32_export_made_before_fp16_weights_existed_is_made_again_in_fp16(fitted, tmp_path):
    """Its record has no export.fp16_weights: it wrote fp32, which the default no longer does."""
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    fp32 = (model / "work" / "train" / "model.safetensors").read_bytes()
    (model / "model.safetensors").write_bytes(fp32)
    path = model / "work" / "export.stage.json"
    record = json.loads(path.read_text())
    record["settings"] = {}
    made = {"bytes": len(fp32), "sha256": hashlib.sha256(fp32).hexdigest()}
    record["made"]["model.safetensors"] = made
    path.write_text(json.dumps(record))
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert result.exit_code == 0, result.output
    assert "export: export.fp16_weights changed since it ran: making it again" in result.output
    assert (model / "model.safetensors").read_bytes() == (
        fitted["model"] / "model.safetensors"
    ).read_bytes()


def test_a_setting_added_since_a_stage_ran_is_no_change_at_its_default():
    from denoisesum.fit.ledger import changed_settings

    assert changed_settings({"a": 1}, {"a": 1, "new": None}) == []
    assert changed_settings({"a": 1}, {"a": 1, "new": 0.0}, {"new": 0.0}) == []
    assert changed_settings({"a": 1}, {"a": 1, "new": 5}, {"new": 0.0}) == ["new"]
    assert changed_settings({"a": 1, "gone": 2}, {"a": 1}) == ["gone"]


def test_a_run_recorded_before_a_new_decoding_setting_is_not_refused(fitted, tmp_path):
    """As after an upgrade that added SummaryPolicy.opinion_reach: the train record lacks it."""
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    path = model / "work" / "train.stage.json"
    record = json.loads(path.read_text())
    assert record["settings"].pop("train.summarize.policy.opinion_reach") == 0.0
    path.write_text(json.dumps(record))
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert result.exit_code == 0 and "fit: 8 skipped" in result.output, result.output
    record["settings"]["train.train.lr"] = 0.5  # a recorded setting still counts
    path.write_text(json.dumps(record))
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert "was run with train.train.lr = 0.5" in str(result.exception)


def test_changed_inputs_remake_a_cheap_stage_and_refuse_the_others(fitted, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    record_path = model / "work" / "decode.stage.json"
    record = json.loads(record_path.read_text())
    record["inputs"]["train"] = "0" * 64  # as if made from another summarizer
    record_path.write_text(json.dumps(record))
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert result.exit_code == 0, result.output
    assert "[6/8] decode: train changed since it ran: making it again" in result.output
    # the same choice again: the export, made from it, is still up to date
    assert [s["status"] for s in report(model)["stages"]][-3:] == ["ran", "skipped", "skipped"]
    # another LM: the pairs made with the old one cannot be reused
    weights = load_file(str(model / "work" / "lm" / "model.safetensors"))
    weights["embed.weight"] = weights["embed.weight"] + 1
    other = tmp_path / "other-lm"
    shutil.copytree(model / "work" / "lm", other)
    save_file(weights, str(other / "model.safetensors"))
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model, "--lm", str(other)))
    assert isinstance(result.exception, DenoiseSumError)
    assert str(result.exception).startswith(
        "stage 'synthesize' (work/pairs) was run on other inputs (lm changed since)"
    )


def test_a_separate_lm_noises_the_pairs(fitted, tmp_path):
    # the summarizer starts from the fitted LM (--lm); the pairs are noised with another one
    lm = fitted["model"] / "work" / "lm"
    weights = load_file(str(lm / "model.safetensors"))
    weights["embed.weight"] = weights["embed.weight"] * -1
    other = tmp_path / "noise-lm"
    shutil.copytree(lm, other)
    save_file(weights, str(other / "model.safetensors"))
    model = tmp_path / "model"
    args = fit_args(fitted["corpus"], model, "--lm", str(lm), "--noise-lm", str(other))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"; noised with the LM in {other}" in result.output
    shard = Path("work", "pairs", "shards", "shard-00000.jsonl.gz")
    assert (model / shard).read_bytes() != (fitted["model"] / shard).read_bytes()
    init = json.loads((model / "work" / "train" / "lm-init.json").read_text())
    assert init["skipped"] == [] and len(init["copied"]) == 4  # from --lm, not the noising LM
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "fit: 7 skipped" in again.output  # (+ the given LM)
    # without --noise-lm the pairs would be noised by --lm: those on disk are not theirs
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model, "--lm", str(lm)))
    assert str(result.exception).startswith(
        "stage 'synthesize' (work/pairs) was run on other inputs (lm changed since)"
    )


def test_settings_fit_owns_are_refused(fitted, tmp_path):
    result = CliRunner().invoke(
        app, fit_args(fitted["corpus"], tmp_path / "m", "--set", 'train.train.init_lm="x"')
    )
    assert isinstance(result.exception, ConfigError)
    assert "'train.train.init_lm' is set by 'fit" in str(result.exception)
    dev = write_jsonl(
        tmp_path / "dev.jsonl",
        [
            {"entity_id": f"d{i}", "reviews": ["good ."] * (3 + i), "summaries": ["good ."]}
            for i in range(2)
        ],
    )

    def config(*overrides: str, **request):
        """fit's settings for the tiny preset into tmp_path / "m" with `overrides`."""
        return fit_config(
            FitRequest(
                [str(fitted["corpus"])],
                tmp_path / "m",
                preset="tiny",
                overrides=list(overrides),
                **request,
            )
        )

    cfg = config("synthesize.n_std=0.25", dev=dev, budget_hours=1)
    assert (cfg.synthesize.n_mean, cfg.synthesize.n_std) == (3.5, 0.25)  # --set wins over --dev
    assert cfg.train.train.select_on == "dev-rouge" and cfg.train.train.max_minutes == 48
    with pytest.raises(ConfigError, match="needs --dev"):
        config('train.train.select_on="dev-rouge"')
    with pytest.raises(ConfigError, match="levers are chosen on dev ROUGE: they need --dev"):
        config("decode.levers.greedy.beam=1")
    with pytest.raises(ConfigError, match=r"'decode\.levers\.x\.restate_overlap': 2\.0 must be"):
        config("decode.levers.x.restate_overlap=2", dev=dev)


def test_a_run_killed_while_training_finishes_with_the_same_model(fitted, tmp_path):
    """SIGKILL once the summarizer has written a checkpoint, then the same command again."""
    source, model = fitted["model"] / "work", tmp_path / "model"
    redo = {"train", "train.stage.json", "decode.stage.json", "export.stage.json"}
    shutil.copytree(
        source,
        model / "work",  # the earlier stages' outputs, done: skipped
        ignore=lambda d, names: redo & set(names) if Path(d) == source else set(),
    )
    command = [sys.executable, "-m", "denoisesum.cli", *fit_args(fitted["corpus"], model)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    latest = model / "work" / "train" / "checkpoints" / "LATEST"
    with open(tmp_path / "log", "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=log, env=env)
        deadline = time.monotonic() + 120
        while not latest.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL, (tmp_path / "log").read_text()
    record = json.loads((model / "work" / "train.stage.json").read_text())
    assert record["done"] is False  # cut off in the middle of the stage
    assert not (model / "model.safetensors").exists()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "(resuming: cut off in an earlier run)" in done.stderr
    assert "continuing from the checkpoint of step" in done.stderr
    statuses = {s["stage"]: s["status"] for s in report(model)["stages"]}
    assert statuses == {
        "tokenize": "skipped",
        "lm": "skipped",
        "synthesize": "skipped",
        "topics": "skipped",
        "train": "resumed",
        "decode": "ran",
        "aspects": "skipped",
        "export": "ran",
    }
    resumed, reference = (load_file(str(d / "model.safetensors")) for d in (model, fitted["model"]))
    assert resumed.keys() == reference.keys()
    assert all(torch.equal(resumed[k], reference[k]) for k in reference)


def test_decoding_min_length_on_dev_rouge(fitted):
    sets = [
        ReviewSet(
            entity_id=f"e{i}", reviews=[r["text"] for r in group], summaries=[group[0]["text"]]
        )
        for i, group in enumerate([synthetic_reviews(1, 4, seed=s) for s in (1, 2)])
    ]
    logged = []
    rows = search_min_length(fitted["model"] / "work" / "train", sets, [5, 12], logged.append)
    assert [r["min_length"] for r in rows] == [5, 12] and len(logged) == 2
    assert all(0 <= r["mean"] <= 100 and r["words"] >= r["min_length"] for r in rows)


def test_fit_decodes_on_its_training_device(fitted, monkeypatch):
    """The decode stage's search summarizes on the device it is given (the recipe passes
    train.train.device, set by --device), not always on the CPU."""
    import denoisesum.inference.denoisesum_method as summarizer_module

    asked = []
    real = summarizer_module.resolve_device
    monkeypatch.setattr(
        summarizer_module, "resolve_device", lambda name, *a: asked.append(name) or real("cpu")
    )
    reviews = [r["text"] for r in synthetic_reviews(1, 4, seed=1)]
    sets = [ReviewSet(entity_id="e", reviews=reviews, summaries=[reviews[0]])]
    search_min_length(fitted["model"] / "work" / "train", sets, [5], lambda _: None, None, "auto")
    assert asked == ["auto"]


def test_presets_give_the_lm_the_summarizers_lstm_sizes():
    for name in PRESETS:
        cfg = preset_config(name)
        lm, model = cfg.lm.model, cfg.train.model
        assert lm.hidden_dim == model.hidden_dim == model.encoder_dim, name
        assert lm.embed_dim == model.embed_dim, name


def test_budget_splits_training_time_between_lm_and_summarizer():
    cfg = preset_config("cpu")
    assert apply_budget(cfg, 10, train_lm=True) == {"lm": 60.0, "train": 540.0}
    assert (cfg.lm.train.max_minutes, cfg.train.train.max_minutes) == (60.0, 540.0)
    assert apply_budget(cfg, 2, train_lm=False) == {"lm": 0.0, "train": 120.0}
    with pytest.raises(ConfigError):
        apply_budget(cfg, 0, train_lm=True)
    assert flatten({"a": {"b": (1, 2)}, "c": 3}) == {"a.b": [1, 2], "c": 3}


def test_too_few_candidates_is_a_warning_with_the_counts():
    manifest = {
        "settings": {"pairs": 12},
        "pairs": 9,
        "candidate_filter": {
            "reviews": 40,
            "rejected_length": 30,
            "rejected_symbols": 1,
            "eligible": 9,
        },
    }
    warning = shortfall(manifest)
    assert warning.startswith("9 pairs made of the 12 asked for: only 9 of 40 reviews qualify")
    assert "length 30, symbols 1" in warning
    assert shortfall({**manifest, "pairs": 12}) is None


def test_decoding_levers_chosen_on_dev_go_into_the_exported_model(fitted, tmp_path):
    """With --dev and decode.levers: each lever is decoded and tested against the chosen
    min_length; the best is written into the model's config."""
    dev = write_jsonl(
        tmp_path / "dev.jsonl",
        [
            {
                "entity_id": f"d{i}",
                "reviews": [r["text"] for r in group],
                "summaries": [group[0]["text"]],
            }
            for i, group in enumerate(synthetic_reviews(1, 4, seed=s) for s in (1, 2, 3))
        ],
    )
    config = tmp_path / "fit.toml"
    config.write_text(
        "[decode]\nmin_lengths = [8]\n[decode.levers]\n"
        "wide = {beam = 4}\nrestate = {restate_overlap = 0.5}\n"
    )
    model = tmp_path / "model"
    result = CliRunner().invoke(
        app,
        fit_args(
            fitted["corpus"],
            model,
            "--dev",
            str(dev),
            "--lm",
            str(fitted["model"] / "work" / "lm"),
            "--config",
            str(config),
        ),
    )
    assert result.exit_code == 0, result.output
    choice = json.loads((model / "work" / "decode.stage.json").read_text())["result"]
    assert list(choice["levers"]) == ["base", "wide", "restate"]
    assert set(choice["levers"]["wide"]["vs_base"]) == {"rouge1", "rouge2", "rougeL"}
    means = {name: row["mean"] for name, row in choice["levers"].items() if name != "rerank"}
    assert choice["lever"] == max(means, key=means.get)  # the first among equals
    assert f"levers: {choice['lever']} kept" in result.output
    summarize = json.loads((model / "config.json").read_text())["summarize"]
    decode = {**summarize["search"], **summarize["policy"]}
    assert decode["min_words"] == 8
    assert all(decode[k] == v for k, v in choice["changes"].items())
    assert "rerank" not in decode


def test_fit_can_continue_a_trained_summarizer(fitted, tmp_path):
    """train.train.init_model: the summarizer starts from those weights, not from the LM."""
    start = fitted["model"] / "work" / "train"
    model = tmp_path / "model"
    result = CliRunner().invoke(
        app,
        fit_args(
            fitted["corpus"],
            model,
            "--lm",
            str(fitted["model"] / "work" / "lm"),
            "--set",
            f'train.train.init_model="{start}"',
            "--set",
            "train.train.max_steps=2",
        ),
    )
    assert result.exit_code == 0, result.output
    assert not (model / "work" / "train" / "lm-init.json").exists()
    assert "from the LM" not in result.output
    before, after = (load_file(str(d / "model.safetensors")) for d in (start, model))
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    # two Adam steps on from those weights (lr 0.01): close to them, not to an LM start
    assert changed and max((before[k] - after[k]).abs().max().item() for k in changed) < 0.1


def test_the_summarizer_can_take_the_lms_vocabulary(fitted, tmp_path):
    """train.vocab.source = "lm": the LM's vocabulary (every embedding row starts from the LM),
    not one built from the pairs."""
    lm = fitted["model"] / "work" / "lm"
    model = tmp_path / "model"
    result = CliRunner().invoke(
        app,
        fit_args(
            fitted["corpus"],
            model,
            "--lm",
            str(lm),
            "--set",
            'train.vocab.source="lm"',
            "--set",
            "train.train.max_steps=2",
        ),
    )
    assert result.exit_code == 0, result.output
    assert (model / "vocab.json").read_bytes() == (lm / "vocab.json").read_bytes()
    assert (fitted["model"] / "vocab.json").read_bytes() != (lm / "vocab.json").read_bytes()
    init = json.loads((model / "work" / "train" / "lm-init.json").read_text())
    assert init["embedding_rows"] == len(json.loads((lm / "vocab.json").read_text())["tokens"])
    # continuing a trained summarizer (train_yelp.sh's INIT_MODEL with fit-yelp.toml): its own
    # vocabulary, with no LM start (fit then sets no train.init_lm)
    start, again = fitted["model"] / "work" / "train", tmp_path / "again"
    result = CliRunner().invoke(
        app,
        fit_args(
            fitted["corpus"],
            again,
            "--lm",
            str(lm),
            "--set",
            'train.vocab.source="lm"',
            "--set",
            f'train.train.init_model="{start}"',
            "--set",
            "train.train.max_steps=2",
        ),
    )
    assert result.exit_code == 0, result.output
    assert (again / "vocab.json").read_bytes() == (start / "vocab.json").read_bytes()


def test_a_new_time_or_step_limit_continues_training(fitted, tmp_path):
    """A later session gives the summarizer more steps (or minutes): the finished train stage
    continues from its checkpoint, not refused as a changed setting, and the model is the one an
    uninterrupted run with the larger limit makes."""
    source, model = fitted["model"] / "work", tmp_path / "model"
    redo = {"train", "train.stage.json", "decode.stage.json", "export.stage.json"}
    shutil.copytree(
        source,
        model / "work",
        ignore=lambda d, names: redo & set(names) if Path(d) == source else set(),
    )
    short = CliRunner().invoke(
        app, fit_args(fitted["corpus"], model, "--set", "train.train.max_steps=20")
    )
    assert short.exit_code == 0, short.output
    assert json.loads((model / "work" / "train" / "results.json").read_text())["steps"] == 20
    longer = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert longer.exit_code == 0, longer.output
    assert (
        "[5/8] train: its limits changed since it ran (max_minutes 0, max_steps 20 -> "
        "max_minutes 0, max_steps 30): continuing from its checkpoint"
    ) in longer.output
    statuses = [s["status"] for s in report(model)["stages"]]
    assert statuses == ["skipped"] * 4 + ["continued", "ran", "skipped", "ran"]
    continued, reference = (
        load_file(str(d / "model.safetensors")) for d in (model, fitted["model"])
    )
    assert all(torch.equal(continued[k], reference[k]) for k in reference)
    # a record written before limits were kept apart holds them among its settings
    path = model / "work" / "train.stage.json"
    record = json.loads(path.read_text())
    record["settings"].update(record.pop("limits"))
    path.write_text(json.dumps(record))
    again = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert again.exit_code == 0 and "fit: 8 skipped" in again.output
    shutil.rmtree(model / "work" / "train" / "checkpoints")
    refused = CliRunner().invoke(
        app, fit_args(fitted["corpus"], model, "--set", "train.train.max_steps=40")
    )
    assert "has no checkpoint to continue from" in str(refused.exception)


@pytest.mark.parametrize("name", ["fit-yelp", "fit-yelp-third-person"])
def test_the_yelp_recipes_fit_configs_load(tmp_path, name):
    """scripts/train_yelp.sh's configs: valid under the cpu preset with a dev set, the LM's
    vocabulary, the levers known DecodeConfig settings."""
    dev = write_jsonl(
        tmp_path / "dev.jsonl",
        [{"entity_id": "a", "reviews": ["good food .", "bad service ."], "summary": "mixed ."}],
    )
    config = Path(__file__).resolve().parents[1] / "configs" / f"{name}.toml"
    cfg = fit_config(
        FitRequest(["corpus.jsonl"], tmp_path / "m", preset="cpu", dev=dev, config=config)
    )
    assert cfg.train.vocab.source == "lm" and cfg.train.train.select_on == "dev-rouge"
    assert cfg.train.model.hidden_dim == cfg.lm.model.hidden_dim == 256
    assert cfg.decode.levers and cfg.decode.min_lengths == [55, 65, 75]
    third_person = name.endswith("third-person")
    assert cfg.synthesize.candidate_config().allow_first_person is not third_person


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"stage": "\xff"}', "undecodable bytes (not UTF-8) at byte 11"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nested too deeply"),
    ],
    ids=["not-utf8", "deep"],
)
def test_a_stage_record_not_utf8_or_nested_deep_is_one_line_naming_it(
    fitted, tmp_path, content, says
):
    """Issue 33: it was a UnicodeDecodeError or RecursionError traceback."""
    model = tmp_path / "model"
    shutil.copytree(fitted["model"], model)
    record = model / "work" / "lm.stage.json"
    assert record.is_file()
    record.write_bytes(content)
    result = CliRunner().invoke(app, fit_args(fitted["corpus"], model))
    assert isinstance(result.exception, DenoiseSumError), result.output
    assert str(result.exception) == f"{record}: {says}"


def test_fit_makes_what_the_opinions_method_reads(fitted):
    """A corpus with stars and no --from: fit learns its aspects and a rating model of its own,
    so the exported model summarizes by opinions, its default."""
    from denoisesum.summarizer import Summarizer

    model = fitted["model"]
    assert (model / "aspects.json").is_file() and (model / "rating.npz").is_file()
    assert json.loads((model / "config.json").read_text())["method"] == "opinions"
    summarizer = Summarizer.from_pretrained(model, device="cpu")
    reviews = [
        "the steak was delicious and the waiter was friendly .",
        "the steak was delicious . we will come back .",
        "the soup was awful and the owner was rude .",
    ]
    [result] = summarizer.summarize_results([reviews])
    assert result.attribution is not None and result.attribution[0].total == 3
