"""Decoding and scoring review sets (evaluation/decoded.py), and the decoding settings the
summarize command takes as flags."""

import pytest

from conftest import save_tiny_summarizer, token_summary
from denoisesum.inference.beam import SearchConfig
from denoisesum.summarizer import Summarizer, SummarizerConfig

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    settings = SummarizerConfig(
        max_review_tokens=12,
        max_reviews=8,
        search=SearchConfig(beam=3, min_words=4, max_words=10),
    )
    return Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", settings)
    )


def test_decode_and_score_summarizes_and_scores_every_set(summarizer):
    from denoisesum.data.reviewsets import ReviewSet
    from denoisesum.evaluation.decoded import decode_and_score

    sets = [
        ReviewSet(
            entity_id=f"e{i}",
            reviews=["great pizza and friendly staff", "slow staff"],
            summaries=["great pizza , slow staff"],
        )
        for i in range(3)
    ]
    run = decode_and_score(summarizer, sets, "rouge", batch_size=2)
    assert len(run.summaries) == 3 and run.seconds > 0
    assert run.report.entity_ids == ["e0", "e1", "e2"]
    assert set(run.means) == {"rouge1", "rouge2", "rougeL"}
    assert run.rouge_mean == pytest.approx(sum(run.means.values()) / 3)
    assert run.words == pytest.approx(sum(len(s.split()) for s in run.summaries) / 3)
    assert run.summaries[0] == " ".join(token_summary(summarizer, sets[0].reviews))


def test_the_decoding_levers_are_command_line_options(summarizer, tmp_path):
    import json
    import subprocess
    import sys

    sets = tmp_path / "sets.jsonl"
    sets.write_text(
        json.dumps(
            {
                "entity_id": "a",
                "reviews": [
                    "the pizza was great",
                    "great pizza , slow staff",
                    "the staff was slow",
                ],
            }
        )
        + "\n"
    )
    model = summarizer.path
    args = [
        sys.executable,
        "-m",
        "denoisesum.cli",
        "summarize",
        str(sets),
        "--model",
        str(model),
        "--no-repeat-in-sentence",
        "--max-word-repeats",
        "1",
        "--restate-overlap",
        "0.5",
        "--length-penalty",
        "0.8",
        "--opinion-weight",
        "1.5",
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]
    bad = subprocess.run(
        [*args[:7], "--restate-overlap", "2"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode != 0 and "--restate-overlap 2.0 must be between 0 and 1" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_recipe_picks_the_best_mean_and_the_first_among_equals():
    from denoisesum.evaluation.decoded import choose_variant

    means = {"base": 17.0, "restate": 17.2, "words": 17.1}  # mean of R1/R2/RL
    assert choose_variant(means) == "restate"
    means["words"] = 17.2
    assert choose_variant(means) == "restate"
