"""lab/studies/contrast_probe.py: context-aware decoding against a null review set, and its command
line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import (
    save_tiny_summarizer,
    study_refuses,
    synthetic_reviews,
    synthetic_sets,
    write_dev_sets,
    write_jsonl,
)
from denoisesum.data.batch import inference_batch
from denoisesum.data.vocab import EOS_ID, SPECIALS, UNK_ID
from denoisesum.inference.beam import DecodeConfig, beam_search
from denoisesum.inference.shortlist import ShortlistModel
from denoisesum.summarizer import Summarizer, SummarizerConfig
from lab.studies import contrast_probe

ROOT = Path(__file__).resolve().parents[2]
STUDY = [sys.executable, "-m", "lab.studies.contrast_probe"]  # run from ROOT
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def probe():
    return contrast_probe


def setup(tmp_path):
    summarizer = Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path / "m", SummarizerConfig())
    )
    sets = [summarizer.encode_reviews(reviews) for reviews in synthetic_sets(3)]
    return summarizer, sets


def test_the_contrast_is_the_given_minus_the_generic_scaled(probe, tmp_path):
    summarizer, sets = setup(tmp_path)
    model, batch = summarizer.model, inference_batch(sets[:2])
    contrasted = probe.ContrastModel(model, sets[2], alpha=0.5, plausible=0.0)
    prev = torch.tensor([5, 6])
    got, state = contrasted.decode_step(contrasted.encode(batch), prev)
    given, _ = model.decode_step(model.encode(batch), prev)
    generic, _ = model.decode_step(model.encode(inference_batch([sets[2]] * 2)), prev)
    assert torch.allclose(got, torch.log_softmax(1.5 * given - 0.5 * generic, -1), atol=1e-5)
    # after a step the null rows differ (they read other words); they follow the beam's
    # reordering as the entity's rows do: swapped rows step as the swapped history would
    swapped = contrasted.encode(inference_batch([sets[1], sets[0]]))
    _, swapped = contrasted.decode_step(swapped, prev.flip(0))
    again, _ = contrasted.decode_step(state.index_select(torch.tensor([1, 0])), prev)
    expected, _ = contrasted.decode_step(swapped, prev)
    assert torch.allclose(again, expected, atol=1e-5)


def test_a_null_equal_to_the_input_or_alpha_zero_decodes_as_the_model(probe, tmp_path):
    summarizer, sets = setup(tmp_path)
    cfg = DecodeConfig(beam_size=3, min_length=2, max_length=8)

    def best(model, batch):
        return [h[0].tokens for h in beam_search(model, batch, cfg)]

    one, two = inference_batch(sets[:1]), inference_batch(sets[:2])
    assert best(probe.ContrastModel(summarizer.model, sets[0], 1.0, 0.0), one) == best(
        summarizer.model, one
    )
    assert best(probe.ContrastModel(summarizer.model, sets[2], 0.0, 0.0), two) == best(
        summarizer.model, two
    )
    # entities decoded together decode as each alone, the null's rows following theirs
    contrasted = probe.ContrastModel(summarizer.model, sets[2], 1.0, 0.0)
    assert best(contrasted, two) == [best(contrasted, inference_batch([s]))[0] for s in sets[:2]]


def test_the_plausibility_cut_rules_out_unlikely_words(probe, tmp_path):
    summarizer, sets = setup(tmp_path)
    model, batch = summarizer.model, inference_batch(sets[:1])
    cut = probe.ContrastModel(model, sets[2], alpha=2.0, plausible=0.5)
    got, _ = cut.decode_step(cut.encode(batch), torch.full((1,), 2))
    given, _ = model.decode_step(model.encode(batch), torch.full((1,), 2))
    producible = torch.cat([given[:, EOS_ID], given[:, len(SPECIALS) :].flatten()])
    unlikely = given < producible.max() + torch.log(torch.tensor(0.5))
    assert unlikely.any() and got[unlikely].isneginf().all() and got[~unlikely].isfinite().all()
    alone = probe.ContrastModel(model, sets[2], alpha=0.0, plausible=0.5)  # the cut, no null
    state = alone.encode(batch)
    assert state.null is None
    assert torch.equal(alone.decode_step(state, torch.full((1,), 2))[0].isneginf(), unlikely)


def test_over_a_shortlist_the_null_is_read_whole_and_copies_off_it_are_unknown(probe, tmp_path):
    summarizer, sets = setup(tmp_path)
    batch = inference_batch(sets[:1])
    rows = torch.unique(torch.cat([torch.arange(len(SPECIALS)), batch.reviews.flatten()]))
    short = ShortlistModel(summarizer.model, rows)
    null = sorted({w for review in sets[2] for w in review} - set(rows.tolist()))
    assert null, "the test needs null words off the shortlist"
    state = probe.ContrastModel(short, sets[2] + [null], 1.0, 0.0).encode(batch)
    whole = summarizer.model.encode(inference_batch([sets[2] + [null]]))
    assert torch.equal(state.null.doc.values, whole.doc.values)  # the encoder read every word
    off = short.position[whole.doc.ids] < 0
    assert off.any() and (state.null.doc.ids[off] == UNK_ID).all()
    assert torch.equal(state.null.doc.ids[~off], short.position[whole.doc.ids][~off])
    log_probs, _ = probe.ContrastModel(short, sets[2], 1.0, 0.0).decode_step(
        state, torch.full((1,), 2)
    )
    assert log_probs.shape == (1, len(rows)) and log_probs.isfinite().all()


def test_pick_null_takes_one_review_per_business(probe, tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", synthetic_reviews())
    texts = probe.pick_null([str(corpus)], 5, words=(5, 40))
    owners = {r["text"]: r["entity_id"] for r in synthetic_reviews()}
    assert len(texts) == 5 and len({owners[t] for t in texts}) == 5
    with pytest.raises(SystemExit, match="fewer than 50 businesses"):
        probe.pick_null([str(corpus)], 50, words=(5, 40))


def test_the_command_line_pairs_every_probe_and_refuses_bad_ones(tmp_path, monkeypatch):
    model = save_tiny_summarizer(tmp_path / "m", SummarizerConfig(shortlist=5))
    reviews = synthetic_reviews()
    corpus = write_jsonl(tmp_path / "corpus.jsonl", reviews)
    dev = write_dev_sets(tmp_path / "dev.jsonl")
    out, md, null = tmp_path / "c.json", tmp_path / "c.md", tmp_path / "null.json"
    flags = [
        str(model),
        str(dev),
        "--null-from",
        str(corpus),
        "--null-count",
        "4",
        "--null-words",
        "5",
        "40",
        "--null",
        str(null),
    ]
    common = [*STUDY, *flags]
    run = subprocess.run(
        [
            *common,
            "--probes",
            "a:alpha=0.5;p:alpha=1,plausible=0.2",
            "--json",
            str(out),
            "--markdown",
            str(md),
            "--generic",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())
    assert list(rows) == ["base", "a", "p", "generic"] and "rouge1" in rows["p"]["vs_base"]
    generic = rows["generic"]["summaries"]  # the null reviews' summary, for every entity
    assert len(generic) == 3 and len(set(generic)) == 1 and generic[0]
    assert "rouge1" in rows["generic"]["vs_base"]
    assert len(json.loads(null.read_text())) == 4 and "| p | alpha=1" in md.read_text()
    # the three references are one text: another business's summary matches it exactly
    assert "its 6 ordered pairs), has R1/R2/RL 100.00 / 100.00 / 100.00" in md.read_text()
    # refusals are one line (SystemExit with a message), before any decoding: run in-process
    refusals = [
        (["--probes", "x:beta=2"], "unknown key(s) beta"),
        (["--probes", "x:alpha=1,plausible=1"], "plausible in [0, 1)"),
        (["--probes", "x:alpha='x'"], "must be numbers"),
        (["--probes", "x:alpha=nan"], "alpha must be"),
    ]
    for extra, message in refusals:
        study_refuses(
            monkeypatch,
            contrast_probe.main,
            [*flags, *extra, "--json", str(tmp_path / "x.json")],
            message,
        )
    assert not (tmp_path / "x.json").exists()  # refused before the base row was decoded
    # rows decoded against other null reviews are decoded again
    first = rows["a"]["null"]
    null.write_text(json.dumps(json.loads(null.read_text())[:3]))
    again = subprocess.run(
        [*common, "--probes", "a:alpha=0.5", "--json", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(out.read_text())["a"]["null"] not in (first, None)
    null.write_text("[1, 2]")
    args = [*flags, "--probes", "a:alpha=0.5", "--json", str(out)]
    study_refuses(monkeypatch, contrast_probe.main, args, "not a JSON list of review texts")
    args = [str(model), str(dev), "--probes", "a:alpha=1", "--null", str(tmp_path / "none.json")]
    study_refuses(
        monkeypatch,
        contrast_probe.main,
        [*args, "--json", str(tmp_path / "y.json")],
        "--null-from is needed",
    )
