"""scripts/contrast_probe.py: context-aware decoding against a null review set, and its command
line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import (
    load_script,
    save_tiny_summarizer,
    synthetic_reviews,
    synthetic_sets,
    write_dev_sets,
    write_jsonl,
)
from denoisesum.data.batch import inference_batch
from denoisesum.inference.beam import DecodeConfig, beam_search
from denoisesum.inference.summarizer import Summarizer, SummarizerConfig

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "contrast_probe.py"
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def probe():
    return load_script("contrast_probe")


def setup(tmp_path, shortlist=0):
    summarizer = Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path / "m", SummarizerConfig(shortlist=shortlist)))
    sets = [summarizer.encode_reviews(reviews) for reviews in synthetic_sets(3)]
    return summarizer, sets


def test_the_contrast_is_the_given_minus_the_generic_scaled(probe, tmp_path):
    summarizer, sets = setup(tmp_path)
    model, batch = summarizer.model, inference_batch(sets[:2])
    contrasted = probe.ContrastModel(model, sets[2], alpha=0.5, plausible=0.0)
    state = contrasted.encode(batch)
    prev = torch.full((2,), 2)
    got, _ = contrasted.decode_step(state, prev)
    given, _ = model.decode_step(model.encode(batch), prev)
    generic, _ = model.decode_step(model.encode(inference_batch([sets[2]] * 2)), prev)
    assert torch.allclose(got, torch.log_softmax(1.5 * given - 0.5 * generic, -1), atol=1e-5)
    # the null states follow the beam's reordering, as the entity's do
    moved = state.index_select(torch.tensor([1, 0]))
    again, _ = contrasted.decode_step(moved, prev)
    assert torch.allclose(again, got.flip(0), atol=1e-5)


def test_a_null_equal_to_the_input_or_alpha_zero_decodes_as_the_model(probe, tmp_path):
    summarizer, sets = setup(tmp_path)
    batch, cfg = inference_batch(sets[:1]), DecodeConfig(beam_size=3, min_length=2, max_length=8)
    plain = [h[0].tokens for h in beam_search(summarizer.model, batch, cfg)]
    for null, alpha in ((sets[0], 1.0), (sets[2], 0.0)):
        same = beam_search(probe.ContrastModel(summarizer.model, null, alpha, 0.0), batch, cfg)
        assert [h[0].tokens for h in same] == plain


def test_the_plausibility_cut_rules_out_unlikely_words(probe, tmp_path):
    summarizer, sets = setup(tmp_path)
    model, batch = summarizer.model, inference_batch(sets[:1])
    cut = probe.ContrastModel(model, sets[2], alpha=2.0, plausible=0.5)
    got, _ = cut.decode_step(cut.encode(batch), torch.full((1,), 2))
    given, _ = model.decode_step(model.encode(batch), torch.full((1,), 2))
    unlikely = given < given.max() + torch.log(torch.tensor(0.5))
    assert unlikely.any() and got[unlikely].isneginf().all() and got[~unlikely].isfinite().all()


def test_over_a_shortlist_the_nulls_other_words_read_as_unknown(probe, tmp_path):
    summarizer = probe.ProbeSummarizer.from_pretrained(
        save_tiny_summarizer(tmp_path / "m", SummarizerConfig(shortlist=5)))
    given, null = synthetic_sets(2)
    summarizer.wrap = probe.contrast({"alpha": 0.5}, summarizer.encode_reviews(null))
    assert summarizer.summarize_tokens_batch([given[:1]])[0]  # one review: a short shortlist


def test_pick_null_takes_one_review_per_business(probe, tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", synthetic_reviews())
    texts = probe.pick_null([str(corpus)], 5, words=(5, 40))
    owners = {r["text"]: r["entity_id"] for r in synthetic_reviews()}
    assert len(texts) == 5 and len({owners[t] for t in texts}) == 5
    with pytest.raises(SystemExit, match="fewer than 50 businesses"):
        probe.pick_null([str(corpus)], 50, words=(5, 40))


def test_the_command_line_pairs_every_probe_and_refuses_bad_ones(tmp_path):
    model = save_tiny_summarizer(tmp_path / "m", SummarizerConfig(shortlist=5))
    reviews = synthetic_reviews()
    corpus = write_jsonl(tmp_path / "corpus.jsonl", reviews)
    dev = write_dev_sets(tmp_path / "dev.jsonl")
    out, md, null = tmp_path / "c.json", tmp_path / "c.md", tmp_path / "null.json"
    common = [sys.executable, str(SCRIPT), str(model), str(dev), "--null-from", str(corpus),
              "--null-count", "4", "--null-words", "5", "40", "--null", str(null)]
    run = subprocess.run([*common, "--probes", "a:alpha=0.5;p:alpha=1,plausible=0.2",
                          "--json", str(out), "--markdown", str(md), "--generic"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())
    assert list(rows) == ["base", "a", "p", "generic"] and "rouge1" in rows["p"]["vs_base"]
    generic = rows["generic"]["summaries"]  # the null reviews' summary, for every entity
    assert len(generic) == 3 and len(set(generic)) == 1 and generic[0]
    assert "rouge1" in rows["generic"]["vs_base"]
    assert len(json.loads(null.read_text())) == 4 and "| p | alpha=1" in md.read_text()
    # the three references are one text: another business's summary matches it exactly
    assert "its 6 ordered pairs), has R1/R2/RL 100.00 / 100.00 / 100.00" in md.read_text()
    for probes, message in (("x:beta=2", "unknown key(s) beta"),
                            ("x:alpha=1,plausible=1", "plausible in [0, 1)")):
        bad = subprocess.run([*common, "--probes", probes, "--json", str(tmp_path / "x.json")],
                             capture_output=True, text=True)
        assert bad.returncode != 0 and message in bad.stderr and "Traceback" not in bad.stderr
    missing = subprocess.run([sys.executable, str(SCRIPT), str(model), str(dev), "--probes",
                              "a:alpha=1", "--null", str(tmp_path / "none.json"), "--json",
                              str(tmp_path / "y.json")], capture_output=True, text=True)
    assert missing.returncode != 0 and "--null-from is needed" in missing.stderr
