"""`fit` on a small domain corpus (issue 61): candidate lengths fitted to the corpus and several
pairs per candidate, so that the pairs asked for exist; the run directory compacted when
training ends; the comparison with the model --from started from. (The end-to-end --from run,
with the shipped noising LM and the comparison in its report, is tests/test_adapt.py's.)"""

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from denoisesum.config import check
from denoisesum.errors import ConfigError
from denoisesum.fit import compare
from denoisesum.fit.config import preset_config
from denoisesum.fit.stages import compact_run
from denoisesum.noising import pipeline
from denoisesum.noising.candidates import CandidateConfig, preset
from denoisesum.noising.config import SynthesisConfig
from denoisesum.noising.plan import fitted_lengths, make_plan
from test_noising import read_pairs, synth_config, workspace  # noqa: F401 (a fixture)
from test_noising import synthesize as run_synthesis


def test_length_bounds_widen_to_the_corpus_within_twice_the_given_max():
    generic = preset("generic")  # 20-100 tokens
    hotels = np.arange(25, 300)  # long reviews: the 10th percentile 52, the 75th 230
    fitted = fitted_lengths(hotels, generic)
    assert (fitted.min_tokens, fitted.max_tokens) == (20, 200)  # 230 capped at 2 x 100
    assert fitted.max_symbols == generic.max_symbols
    short = fitted_lengths(np.arange(5, 60), generic)  # short reviews: only ever widened
    assert (short.min_tokens, short.max_tokens) == (10, 100)
    assert fitted_lengths(np.arange(0), generic) == generic


def test_a_plan_reuses_each_candidate_at_most_uses_times_all_before_any_twice():
    eligible = np.arange(100, 130)  # 30 candidates
    old = make_plan(eligible, 1000, 4, 0, seed=3)
    assert len(old.candidates) == 30  # one pair each, as before
    plan = make_plan(eligible, 1000, 4, 0, seed=3, uses=5)
    assert len(plan.candidates) == 150 and np.bincount(plan.candidates - 100).max() == 5
    plan = make_plan(eligible, 70, 4, 0, seed=3, uses=5)
    counts = np.bincount(plan.candidates - 100, minlength=30)
    assert len(plan.candidates) == 70 and set(counts) == {2, 3}  # two full rounds, then 10
    assert sorted(plan.candidates[:30]) == list(eligible)  # every candidate in the first round
    # with enough candidates, uses changes nothing: the same draw as one use each
    for uses in (1, 5):
        same = make_plan(eligible, 20, 4, 1, seed=3, uses=uses)
        assert np.array_equal(same.candidates, make_plan(eligible, 20, 4, 1, seed=3).candidates)
    weighted = make_plan(eligible, 70, 4, 0, seed=3, weights=np.ones(30), uses=5)
    assert len(weighted.candidates) == 70


def test_uses_per_candidate_is_checked():
    with pytest.raises(ConfigError, match="uses_per_candidate"):
        check(synth_config(uses_per_candidate=0))


def test_a_small_corpus_makes_the_pairs_asked_for(workspace, tmp_path):  # noqa: F811
    # constraints that admit few of the corpus's reviews (its reviews are 8-70 tokens)
    narrow = CandidateConfig(20, 24, 2, True, False)
    before = run_synthesis(workspace, tmp_path / "before", synth_config(candidates=narrow))
    found = before["candidate_filter"]["eligible"]
    assert before["pairs"] == found < 24
    assert "synthesize.uses_per_candidate=N" in pipeline.shortfall(before)
    after = run_synthesis(
        workspace,
        tmp_path / "after",
        synth_config(candidates=narrow, fit_lengths=True, uses_per_candidate=3, pairs=100),
    )
    report = after["candidate_filter"]
    assert report["fitted_lengths"]["given"] == [20, 24]
    assert report["fitted_lengths"]["max_tokens"] > 24 and report["eligible"] > found
    assert report["eligible"] < 100 == after["pairs"] and pipeline.shortfall(after) is None
    pairs = read_pairs(tmp_path / "after")
    by_candidate: dict[int, list] = {}
    for pair in pairs:
        by_candidate.setdefault(pair["candidate_review"], []).append(pair["segment_noise"])
    # each candidate used at most 3 times, each time with its own noise
    assert max(len(v) for v in by_candidate.values()) <= 3
    repeated = [v for v in by_candidate.values() if len(v) > 1]
    assert repeated and all(v[0] != v[1] for v in repeated)


def test_the_small_corpus_settings_keep_earlier_pairs_that_made_every_pair(
    workspace,  # noqa: F811
    tmp_path,
):
    """Pairs made before fit_lengths and uses_per_candidate existed, every one asked for: the
    presets' new values would change nothing, so the directory is not refused."""
    out = tmp_path / "pairs"
    made = run_synthesis(workspace, out, synth_config(pairs=10))
    assert made["pairs"] == 10
    again = run_synthesis(
        workspace, out, synth_config(pairs=10, fit_lengths=True, uses_per_candidate=5)
    )
    assert again["pairs"] == 10
    with pytest.raises(Exception, match="holds a run with other inputs or settings"):
        run_synthesis(workspace, out, synth_config(pairs=10, seed=4))


def test_the_presets_fit_a_small_corpus_but_tiny_does_not():
    for name in ("cpu-small", "cpu", "paper"):
        s = preset_config(name).synthesize
        assert s.fit_lengths and s.uses_per_candidate == 5
    tiny = preset_config("tiny").synthesize
    assert not tiny.fit_lengths and tiny.uses_per_candidate == 1
    default = SynthesisConfig()  # `denoisesum synthesize`: the paper's
    assert not default.fit_lengths and default.uses_per_candidate == 1


def weights(path: Path, value: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({"w": torch.full((64,), value)}, str(path))


def trainer_run(root: Path, checkpoint_value: float) -> Path:
    run = root / "train"
    weights(run / "model.safetensors", 1.0)
    step = run / "checkpoints" / "step-000000010"
    weights(step / "model.safetensors", checkpoint_value)
    torch.save({"step": 10}, step / "state.pt")
    (run / "checkpoints" / "LATEST").write_text("step-000000010\n")
    (run / "data").mkdir()
    (run / "data" / "ids.npy").write_bytes(b"x" * 1000)
    return run


def test_a_finished_run_drops_its_pair_cache_and_links_equal_weights(tmp_path):
    run = trainer_run(tmp_path / "same", 1.0)
    copy = run / "checkpoints" / "step-000000010" / "model.safetensors"
    size = copy.stat().st_size
    assert compact_run(run) == 1000 + size
    assert not (run / "data").exists()
    assert copy.samefile(run / "model.safetensors") and os.stat(copy).st_nlink == 2
    assert (run / "checkpoints" / "step-000000010" / "state.pt").is_file()  # to continue
    assert compact_run(run) == 0  # nothing more to do
    # replacing the kept model (as the trainer does) leaves the checkpoint's weights alone
    before = copy.read_bytes()
    tmp = run / ".model.tmp"
    weights(tmp, 2.0)
    os.replace(tmp, run / "model.safetensors")
    assert copy.read_bytes() == before
    # the best model is not the last checkpoint's: both stay
    other = trainer_run(tmp_path / "other", 3.0)
    assert compact_run(other) == 1000
    checkpoint = other / "checkpoints" / "step-000000010" / "model.safetensors"
    assert not checkpoint.samefile(other / "model.safetensors")


def test_the_paired_loss_difference_and_its_interval():
    model = {"a": 3.0, "b": 3.2, "c": 2.9, "d": 3.1}
    base = {"a": 3.5, "b": 3.4, "c": 3.3, "d": 3.0}
    out = compare.paired(model, base)
    assert out["model"] == pytest.approx(3.05) and out["base"] == pytest.approx(3.3)
    assert out["difference"] == pytest.approx(-0.25)
    low, high = out["interval"]
    # a mean of resampled differences (-0.5, -0.2, -0.4, 0.1) lies within their range
    assert -0.5 <= low <= out["difference"] <= high <= 0.1
    assert out["better_businesses"] == 3 and out["businesses"] == 4
    line = compare.loss_line({**out, "reviews": 40}, "denoisesum-yelp")
    assert "40 reviews" in line and "-0.250" in line and "lower in 3 of 4" in line
    clear = compare.paired({"a": 2.0, "b": 2.1}, {"a": 3.0, "b": 3.2})
    assert "predicts this domain's reviews better" in compare.loss_line(
        {**clear, "reviews": 9}, "m"
    )


def test_few_held_out_businesses_are_said_to_be_few():
    assert compare.few_text(30) is None and compare.few_text(10) is None
    assert compare.few_text(5).startswith("only 5 businesses held out")
    assert "20% of an agreement" in compare.few_text(5)
    assert "nothing says" in compare.few_text(0)


def test_review_targets_draw_other_reviews_of_the_same_business(workspace):  # noqa: F811
    corpus = workspace["corpus"]
    targets = compare.review_targets(corpus, ["e1", "e2"], seed=0, targets=4, read=3)
    assert [t["entity_id"] for t in targets] == ["e1"] * 4 + ["e2"] * 4
    by_text = {}
    for r in range(len(corpus)):
        ids = corpus.ids[corpus.offsets[r] : corpus.offsets[r + 1]]
        by_text.setdefault(corpus.entities[corpus.entity[r]], []).append(
            [corpus.types[t] for t in ids]
        )
    for t in targets:
        own = by_text[t["entity_id"]]
        assert t["target"] in own and len(t["inputs"]) == 3
        assert all(r in own for r in t["inputs"])
    # the same draw for every model scored
    assert targets == compare.review_targets(corpus, ["e1", "e2"], seed=0, targets=4, read=3)
