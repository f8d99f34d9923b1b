"""Decoding over a vocabulary shortlist (inference/shortlist.py)."""

import copy
import json
from dataclasses import replace

import pytest
import torch
from typer.testing import CliRunner

from conftest import (
    grouped_reviews,
    save_tiny_summarizer,
    summaries,
    token_summaries,
)
from denoisesum.cli import app
from denoisesum.data.batch import inference_batch
from denoisesum.data.vocab import BOS_ID, SPECIALS
from denoisesum.inference.beam import SearchConfig
from denoisesum.inference.shortlist import ShortlistModel, shortlist_rows
from denoisesum.summarizer import Summarizer, SummarizerConfig

pytestmark = pytest.mark.usefixtures("one_thread")
SETTINGS = SummarizerConfig(
    max_review_tokens=12,
    max_reviews=4,
    search=SearchConfig(beam=3, min_words=4, max_words=10),
)


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    path = save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", SETTINGS)
    return Summarizer.from_pretrained(path)


def review_sets(n: int = 3) -> list[list[str]]:
    return list(grouped_reviews(n, 5, seed=1).values())


def test_rows_are_specials_frequent_words_and_the_input():
    reviews = torch.tensor([[40, 7, 0], [9, 40, 41]])
    rows = shortlist_rows(reviews, top=3, vocab_size=50)
    assert rows.tolist() == [*range(len(SPECIALS) + 3), 7, 9, 40, 41]
    assert shortlist_rows(reviews, top=100, vocab_size=50).tolist() == list(range(50))


def test_equals_full_decoding_when_left_out_words_cannot_win(summarizer):
    """Where every word outside the shortlist has (numerically) zero probability, the full
    distribution restricted to the shortlist is exactly the shortlist's distribution."""
    model = copy.deepcopy(summarizer.model)
    batch = inference_batch([summarizer.encode_reviews(r) for r in review_sets(2)])
    rows = shortlist_rows(batch.reviews, 2, model.config.vocab_size)
    outside = torch.ones(model.config.vocab_size, dtype=torch.bool)
    outside[rows] = False
    with torch.no_grad():
        for branch in model.branches().values():
            branch.decoder.out.bias[outside] = -1e4
    short = ShortlistModel(model, rows)
    state_full, state_short = model.encode(batch), short.encode(batch)
    prev = torch.full((2,), BOS_ID)
    for word in (BOS_ID, int(rows[-1]), int(rows[5])):
        prev.fill_(word)
        full, state_full = model.decode_step(state_full, prev)
        part, state_short = short.decode_step(state_short, short.position[prev])
        torch.testing.assert_close(part, full[:, rows], atol=1e-5, rtol=1e-5)


def test_a_shortlist_of_every_word_gives_the_same_summaries(summarizer):
    sets = review_sets()
    expected = summaries(summarizer, sets, batch_size=2)
    fast = Summarizer(
        summarizer.model, summarizer.vocab, replace(SETTINGS, shortlist=len(summarizer.vocab))
    )
    assert summaries(fast, sets, batch_size=2) == expected


def test_summaries_use_only_shortlisted_words(summarizer):
    sets = review_sets()
    fast = Summarizer(summarizer.model, summarizer.vocab, replace(SETTINGS, shortlist=3))
    fast.config = fast.config.with_settings(first_person=False)
    for reviews, tokens in zip(sets, token_summaries(fast, sets), strict=True):
        allowed = set(summarizer.vocab.tokens[len(SPECIALS) : len(SPECIALS) + 3])
        allowed |= {t for r in reviews for t in summarizer.vocab.tokenizer.tokenize(r)}
        assert tokens and set(tokens) <= allowed
        assert not set(tokens) & {"i", "me", "my"}


def test_cli_option(tmp_path, summarizer):
    source = tmp_path / "sets.jsonl"
    source.write_text(
        "".join(
            json.dumps({"entity_id": f"e{i}", "reviews": r}) + "\n"
            for i, r in enumerate(review_sets(2))
        )
    )
    result = CliRunner().invoke(
        app,
        ["summarize", str(source), "--model", str(summarizer.path), "--shortlist", "3", "--raw"],
    )
    assert result.exit_code == 0, result.output
    assert len([json.loads(line) for line in result.stdout.splitlines()]) == 2
    result = CliRunner().invoke(
        app, ["summarize", str(source), "--model", str(summarizer.path), "--shortlist", "-1"]
    )
    assert result.exit_code != 0 and "greater than or equal to 0" in result.output
