"""scripts/report_yelp.py on a run directory laid out as scripts/train_yelp.sh leaves it.

The predictions are real systems' outputs on the MeanSum sets (so the scores are known), the
training files are small stand-ins written here."""

import json
import shutil
from pathlib import Path

from conftest import SHARED_DATA, load_script, needs_data, write_jsonl


def style(first_person: float) -> dict:
    return {"summaries": 100, "with_repeated_words": 0.02, "repeated_words": 0.02,
            "with_restated_sentence": 0.5, "restated_sentences": 0.6,
            "first_person": first_person}


def lever(changes: dict, r1: float, first_person: float) -> dict:
    return {"changes": changes, "scores": {"rouge1": r1, "rouge2": 8.0, "rougeL": 19.0},
            "style": style(first_person)}


def fake_run(run: Path) -> None:
    yelp = SHARED_DATA / "yelp"
    (run / "model").mkdir(parents=True)
    (run / "pairs").mkdir()
    (run / "stage-seconds.tsv").write_text("synthesize\t1800\ntrain\t6000\ncompare\t40\n"
                                           "compare\t50\n")
    (run / "pairs" / "manifest.json").write_text(json.dumps(
        {"pairs": 100000, "settings": {"preset": "yelp", "n_mean": 8.0}}))
    (run / "model" / "results.json").write_text(json.dumps(
        {"steps": 2000, "epochs": 0.16, "train_pairs": 99000, "pairs_per_second": 12.5,
         "train_seconds": 1280.0, "best_step": 1000, "device": "cpu"}))
    (run / "model" / "config.json").write_text(json.dumps(
        {"model": {"hidden_dim": 256}, "train": {"batch_size": 8, "dev_entities": 50,
                                                "init_lm": "models/bilm-yelp-256"},
         "summarize": {"decode": {"block_first_person": True, "min_length": 65}}}))
    (run / "model" / "lm-init.json").write_text(json.dumps(
        {"embedding_rows": 30000, "vocab_size": 30000, "copied": ["encoder forward LSTM"],
         "skipped": []}))
    write_jsonl(run / "model" / "metrics.jsonl", [
        {"step": 1000, "loss": 5.0, "pairs": 8000},
        {"step": 500, "val_nll": 4.40, "dev_rouge1": 33.0, "dev_rouge2": 7.0,
         "dev_rougeL": 19.0, "dev_mean": 19.7, "best": True},  # an earlier best: not kept
        {"step": 1000, "val_nll": 4.25, "dev_rouge1": 34.0, "dev_rouge2": 8.0,
         "dev_rougeL": 19.5, "dev_mean": 20.5, "best": True},
        {"step": 2000, "loss": 4.8, "pairs": 16000},
        {"step": 2000, "val_nll": 4.10, "dev_rouge1": 33.0, "dev_rouge2": 7.5,
         "dev_rougeL": 19.0, "dev_mean": 19.8, "best": False}])
    (run / "decoding-dev.md").write_text("| min_length | R1 |\n|--:|--:|\n| 65 | 34.0 |\n")
    levers = {"base": lever({}, 34.0, 0.0),
              "first-person": lever({"block_first_person": False}, 34.2, 0.98),
              "restate": lever({"restate_overlap": 0.5}, 33.8, 0.0)}
    (run / "levers-dev.json").write_text(json.dumps(levers))
    (run / "levers-dev.md").write_text("# Decoding levers (dev set)\n\n| variant | R1 |\n"
                                       "|---|--:|\n| base | 34.00 |\n")
    dev = [json.loads(line) for line in (yelp / "meansum_dev.jsonl").read_text().splitlines()]
    for name, review in (("new", 0), ("previous", 1)):  # a review as the "summary"
        write_jsonl(run / f"dev.{name}.jsonl", [
            {"entity_id": s["entity_id"], "summary": s["reviews"][review]} for s in dev])
    shutil.copy(yelp / "systems" / "plansum.test.jsonl", run / "test.new.jsonl")
    shutil.copy(yelp / "systems" / "denoisesum.test.jsonl", run / "test.previous.jsonl")
    (run / "leaderboard.md").write_text("# board\n\n| system | R1 |\n|---|--:|\n| plansum | 34 |\n")


@needs_data
def test_the_report_is_computed_from_the_run_files(tmp_path):
    fake_run(tmp_path / "run")
    text = load_script("report_yelp").report(tmp_path / "run")
    # PlanSum's outputs (as "this model") against the target and the released DenoiseSum ones
    assert "this model **34.95/7.12/19.82**" in text
    assert "**The target is not reached** on pooled R1, pooled R2, pooled RL." in text
    assert "| test: this model vs PlanSum (released outputs) | R1 | 34.37 | 34.37 | +0.00 |" in text
    previous = next(line for line in text.splitlines()
                    if line.startswith("| test: this model vs previous default | R1 |"))
    assert "| 34.37 | 29.77 | +4.60 |" in previous
    assert "dev (50 unseen)" in text and "dev (all 100)" in text
    # learning curve (kept: the exported step only), levers and the choice, the LM start
    assert "| 1,000 | 8,000 | 4.250 | 34.00 | 8.00 | 19.50 | 20.50 | yes |" in text
    assert "| 500 | 4,000 | 4.400 | 33.00 | 7.00 | 19.00 | 19.70 |  |" in text
    assert ("peaked at step 1,000 (20.50); at the last evaluation, step 2,000, it was 19.80 "
            "(-0.70) while the validation NLL went from 4.250 to 4.100.") in text
    assert "| base | 34.00 |" in text and "# Decoding levers" not in text
    assert "Kept: **base** (the decoding the model was trained and selected with); dropped: " \
        "first-person, restate." in text
    assert "copied 30,000 embedding rows and the LSTMs encoder forward LSTM" in text
    assert "| compare | 1.5 min |" in text  # a stage run twice is summed
    assert text.count("- **this model:**") == 5


@needs_data
def test_the_shipped_lever_and_a_selection_on_every_dev_business(tmp_path):
    run = tmp_path / "run"
    fake_run(run)
    config = json.loads((run / "model" / "config.json").read_text())
    config["train"]["dev_entities"] = 0  # selection saw every dev business
    config["summarize"]["decode"]["restate_overlap"] = 0.5  # --write chose "restate"
    (run / "model" / "config.json").write_text(json.dumps(config))
    text = load_script("report_yelp").report(run)
    assert "Kept: **restate**; dropped: first-person." in text
    assert "| 65 | 34.0 |" in text  # the length search
    (run / "decoding-dev.md").unlink()
    assert "No length search in this run (MIN_LENGTHS empty): min_length 65" in \
        load_script("report_yelp").report(run)
    assert "no dev row is free of it" in text and "unseen" not in text
    assert "dev (all 100): this model vs previous default" in text


@needs_data
def test_a_model_not_shipped_is_reported_on_dev_only(tmp_path):
    run = tmp_path / "run"
    fake_run(run)
    for name in ("test.new.jsonl", "test.previous.jsonl", "leaderboard.md"):
        (run / name).unlink()
    text = load_script("report_yelp").report(run)
    assert "**Not scored on the test set**" in text and "test:" not in text
    assert "## 5 dev businesses" in text and text.count("- **this model:**") == 5
    assert "| dev, this model |" in text and "| test, this model |" not in text
