"""scripts/report_yelp.py on a run directory laid out as scripts/train_yelp.sh leaves it (a fit
directory with yelp/ beside work/).

The predictions are real systems' outputs on the MeanSum sets (so the scores are known), the
training files are small stand-ins written here."""

import json
import shutil
from pathlib import Path

from conftest import SHARED_DATA, needs_data, write_jsonl
from scripts import report_yelp


def lever(changes: dict, r1: float, p: float | None = None) -> dict:
    row = {
        "changes": changes,
        "rouge1": r1,
        "rouge2": 8.0,
        "rougeL": 19.0,
        "mean": (r1 + 27.0) / 3,
        "words": 70.0,
    }
    if p is not None:
        row["vs_base"] = {
            m: {"difference": r1 - 34.0 if m == "rouge1" else 0.0, "p_value": p}
            for m in ("rouge1", "rouge2", "rougeL")
        }
    return row


def fake_run(run: Path) -> None:
    """A fit directory as train_yelp.sh leaves it: work/ (fit's stages), the exported config,
    fit-report.json, and yelp/ (the summaries to compare, the leaderboard)."""
    yelp, work, out = SHARED_DATA / "yelp", run / "work", run / "yelp"
    for folder in (work / "train", work / "pairs", out):
        folder.mkdir(parents=True)
    (run / "fit-report.json").write_text(
        json.dumps(
            {
                "stages": [
                    {
                        "stage": "synthesize",
                        "status": "skipped",
                        "seconds": 0.0,
                        "seconds_when_done": 1800.0,
                    },
                    {"stage": "train", "status": "ran", "seconds": 6000.0},
                ]
            }
        )
    )
    (out / "stage-seconds.tsv").write_text("fit\t7800\ncompare\t40\ncompare\t50\n")
    (work / "pairs" / "manifest.json").write_text(
        json.dumps({"pairs": 100000, "settings": {"preset": "yelp", "n_mean": 8.0}})
    )
    (work / "train" / "results.json").write_text(
        json.dumps(
            {
                "steps": 2000,
                "epochs": 0.16,
                "train_pairs": 99000,
                "pairs_per_second": 12.5,
                "train_seconds": 1280.0,
                "best_step": 1000,
                "device": "cpu",
            }
        )
    )
    (run / "config.json").write_text(
        json.dumps(
            {
                "model": {"hidden_dim": 256},
                "train": {"batch_size": 8, "dev_entities": 50, "init_lm": "lms/bilm-yelp-256"},
                "summarize": {"decode": {"block_first_person": True, "min_length": 65}},
            }
        )
    )
    (work / "train" / "lm-init.json").write_text(
        json.dumps(
            {
                "embedding_rows": 30000,
                "vocab_size": 30000,
                "copied": ["encoder forward LSTM"],
                "skipped": [],
            }
        )
    )
    write_jsonl(
        work / "train" / "metrics.jsonl",
        [
            {"step": 1000, "loss": 5.0, "pairs": 8000},
            {
                "step": 500,
                "val_nll": 4.40,
                "dev_rouge1": 33.0,
                "dev_rouge2": 7.0,
                "dev_rougeL": 19.0,
                "dev_mean": 19.7,
                "best": True,
            },  # an earlier best: not kept
            {
                "step": 1000,
                "val_nll": 4.25,
                "dev_rouge1": 34.0,
                "dev_rouge2": 8.0,
                "dev_rougeL": 19.5,
                "dev_mean": 20.5,
                "best": True,
            },
            {"step": 2000, "loss": 4.8, "pairs": 16000},
            {
                "step": 2000,
                "val_nll": 4.10,
                "dev_rouge1": 33.0,
                "dev_rouge2": 7.5,
                "dev_rougeL": 19.0,
                "dev_mean": 19.8,
                "best": False,
            },
        ],
    )
    search = [{**lever({}, r1), "min_length": length} for length, r1 in ((55, 33.5), (65, 34.0))]
    levers = {
        "base": lever({}, 34.0),
        "first-person": lever({"block_first_person": False}, 34.2, 0.41),
        "restate": lever({"restate_overlap": 0.5}, 33.8, 0.62),
    }
    (work / "decode.stage.json").write_text(
        json.dumps(
            {
                "result": {
                    "min_length": 65,
                    "how": "dev-rouge",
                    "search": search,
                    "levers": levers,
                    "lever": "base",
                    "changes": {},
                }
            }
        )
    )
    dev = [json.loads(line) for line in (yelp / "meansum_dev.jsonl").read_text().splitlines()]
    for name, review in (("new", 0), ("previous", 1)):  # a review as the "summary"
        write_jsonl(
            out / f"dev.{name}.jsonl",
            [{"entity_id": s["entity_id"], "summary": s["reviews"][review]} for s in dev],
        )
    shutil.copy(yelp / "systems" / "plansum.test.jsonl", out / "test.new.jsonl")
    shutil.copy(yelp / "systems" / "denoisesum.test.jsonl", out / "test.previous.jsonl")
    (out / "leaderboard.md").write_text("# board\n\n| system | R1 |\n|---|--:|\n| plansum | 34 |\n")


@needs_data
def test_the_report_is_computed_from_the_run_files(tmp_path):
    fake_run(tmp_path / "run")
    text = report_yelp.report(tmp_path / "run")
    # PlanSum's outputs (as "this model") against the target and the released DenoiseSum ones
    assert "this model **34.95/7.12/19.82**" in text
    assert "**The target is not reached** on pooled R1, pooled R2, pooled RL." in text
    assert "| test: this model vs PlanSum (released outputs) | R1 | 34.37 | 34.37 | +0.00 |" in text
    previous = next(
        line
        for line in text.splitlines()
        if line.startswith("| test: this model vs previous default | R1 |")
    )
    assert "| 34.37 | 29.77 | +4.60 |" in previous
    assert "dev (50 unseen)" in text and "dev (all 100)" in text
    # learning curve (kept: the exported step only), levers and the choice, the LM start
    assert "| 1,000 | 8,000 | 4.250 | 34.00 | 8.00 | 19.50 | 20.50 | yes |" in text
    assert "| 500 | 4,000 | 4.400 | 33.00 | 7.00 | 19.00 | 19.70 |  |" in text
    assert (
        "peaked at step 1,000 (20.50); at the last evaluation, step 2,000, it was 19.80 "
        "(-0.70) while the validation NLL went from 4.250 to 4.100."
    ) in text
    assert "| base | `{}` | 34.00 | 8.00 | 19.00 | 20.33 | 70.0 |" in text
    assert '| first-person | `{"block_first_person": false}` | 34.20 |' in text
    assert "+0.20 (p 0.410) | +0.00 (p 0.410)" in text
    assert "| 55 | 33.50 | 8.00 | 19.00 | 20.17 | 70.0 |" in text  # the length search
    assert "Kept: min_length 65 (the best mean)." in text
    assert (
        "Kept: **base** (the decoding the model was trained and selected with); dropped: "
        "first-person, restate." in text
    )
    assert "copied 30,000 embedding rows and the LSTMs encoder forward LSTM" in text
    assert "| compare | 1.5 min |" in text  # a stage run twice is summed
    assert "| synthesize | 30.0 min |" in text and "| train | 100.0 min |" in text
    assert "| fit |" not in text  # its stages are counted one by one
    assert text.count("- **this model:**") == 5
    assert '"min_length": 65}`, over the whole vocabulary.' in text  # no shortlist in config


@needs_data
def test_the_shipped_lever_and_a_selection_on_every_dev_business(tmp_path):
    run = tmp_path / "run"
    fake_run(run)
    config = json.loads((run / "config.json").read_text())
    config["train"]["dev_entities"] = 0  # selection saw every dev business
    (run / "config.json").write_text(json.dumps(config))
    record = json.loads((run / "work" / "decode.stage.json").read_text())
    record["result"]["lever"] = "restate"  # fit kept it
    (run / "work" / "decode.stage.json").write_text(json.dumps(record))
    text = report_yelp.report(run)
    assert "Kept: **restate**; dropped: first-person." in text
    record["result"] = {"min_length": 65, "how": "set"}
    (run / "work" / "decode.stage.json").write_text(json.dumps(record))
    fixed = report_yelp.report(run)
    assert "min_length 65 (set): no search on dev." in fixed
    assert "No decoding levers in this run's config" in fixed
    assert "no dev row is free of it" in text and "unseen" not in text
    assert "dev (all 100): this model vs previous default" in text


@needs_data
def test_a_model_not_shipped_is_reported_on_dev_only(tmp_path):
    run = tmp_path / "run"
    fake_run(run)
    for name in ("test.new.jsonl", "test.previous.jsonl", "leaderboard.md"):
        (run / "yelp" / name).unlink()
    text = report_yelp.report(run, title="A run not shipped", markdown="docs/results/other.md")
    assert text.startswith("# A run not shipped\n")
    assert '--title "A run not shipped" --markdown docs/results/other.md`' in text
    assert "**Not scored on the test set**" in text and "test:" not in text
    assert "## 5 dev businesses" in text and text.count("- **this model:**") == 5
    assert "| dev, this model |" in text and "| test, this model |" not in text


@needs_data
def test_training_levers_are_paired_against_the_previous_default(tmp_path):
    run = tmp_path / "run"
    fake_run(run)
    script = report_yelp
    assert "No other training runs to compare" in script.report(run)
    (run / "yelp" / "levers").mkdir()
    shutil.copy(run / "yelp" / "dev.previous.jsonl", run / "yelp" / "levers" / "same.dev.jsonl")
    text = script.report(run)
    same = next(line for line in text.splitlines() if line.startswith("| same (dropped) |"))
    assert same.endswith("| +0.00 (p 1.000) | +0.00 (p 1.000) | +0.00 (p 1.000) |")
    kept = next(line for line in text.splitlines() if line.startswith("| this model (kept) |"))
    paired = next(
        line
        for line in text.splitlines()
        if line.startswith("| dev (all 100): this model vs previous default | R1 |")
    )
    assert paired.split(" | ")[4] == kept.split(" | ")[5].split(" ")[0]  # the same A-B


def test_the_curve_reading_says_whether_the_run_peaked(tmp_path):
    script = report_yelp
    evals = [
        {"step": s, "dev_mean": m, "val_nll": n}
        for s, m, n in ((250, 21.0, 4.3), (500, 21.5, 4.2), (750, 21.2, 4.1))
    ]
    write_jsonl(tmp_path / "metrics.jsonl", evals)
    assert script.curve_reading(tmp_path) == (
        "Dev ROUGE (mean of R1/R2/RL) peaked at step 500 (21.50); at the last evaluation, "
        "step 750, it was 21.20 (-0.30) while the validation NLL went from 4.200 to 4.100."
    )
    write_jsonl(tmp_path / "metrics.jsonl", evals[:2])
    assert script.curve_reading(tmp_path) == (
        "Dev ROUGE (mean of R1/R2/RL) was highest at the last evaluation, step 500 (21.50, "
        "+0.50 since step 250), while the validation NLL went from 4.300 to 4.200; no later "
        "evaluation shows whether it had peaked."
    )


def test_the_shortlist_is_named():
    shortlist_text = report_yelp.shortlist_text
    assert (
        shortlist_text(2000) == "a shortlist of the 2,000 most frequent words and the input's words"
    )
    assert shortlist_text(0) == "the whole vocabulary"


def test_the_start_names_the_lm_or_the_model_continued():
    script = report_yelp
    assert script.lm_start({"train": {"init_model": "runs/a"}}, {}) == [
        "Continued from every weight of the model `runs/a`."
    ]
    assert script.lm_start({"train": {}}, {}) == ["Not started from a language model."]
    copied = script.lm_start(
        {"train": {"init_lm": "models/lm"}},
        {"embedding_rows": 30000, "copied": ["encoder"], "skipped": []},
    )
    assert copied == [
        "Started from the language model `models/lm`: copied 30,000 embedding "
        "rows and the LSTMs encoder; skipped: nothing."
    ]
