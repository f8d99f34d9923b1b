"""Continuous batching (serving/continuous.py): beam searches that join one merged search at any
step, with shortlists and lengths of their own, get the hypotheses each gets alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import torch

from conftest import save_tiny_summarizer, summaries
from denoisesum.inference import beam
from denoisesum.serving import continuous
from denoisesum.summarizer import Summarizer
from test_serving_api import OTHER, REVIEWS, SETTINGS

pytestmark = pytest.mark.usefixtures("one_thread")
SETS = [REVIEWS, OTHER, REVIEWS[1:], [OTHER[0], REVIEWS[2]]]


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    """The tiny model with a shortlist of 8 common words: each set decodes over its own."""
    settings = dataclasses.replace(SETTINGS, shortlist=8)
    return Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", settings)
    )


@pytest.fixture(scope="module")
def constrained(summarizer) -> Summarizer:
    """The same model with the constraints that read each beam's sentences (constraints.Said)."""
    rules = {"no_repeat_in_sentence": True, "max_word_repeats": 2, "restate_overlap": 0.5}
    constrained = Summarizer.from_pretrained(summarizer.path)
    constrained.config = summarizer.config.with_settings(**rules)
    return constrained


@pytest.fixture(params=["plain", "constrained"])
def either(request, summarizer, constrained, said_checked):
    """Each test twice: with the sentence constraints, what the merged search keeps of each
    beam (constraints.Said) is checked every step as it joins, moves to other columns and
    loses entities (conftest.said_checked)."""
    yield summarizer if request.param == "plain" else constrained
    assert bool(said_checked) == (request.param == "constrained")


class Caught(Exception):
    pass


def started(summarize: Callable[[], object]) -> continuous.Entry:
    """The beam search a summarize call starts (encoded, not stepped), as the stepper gets it."""
    caught = []

    def catch(search):
        caught.append(search)
        raise Caught

    with pytest.raises(Caught), beam.stepped_by(catch):
        summarize()
    return continuous.Entry(caught[0], lambda: False, (False, torch.bfloat16))


def fresh(summarizer: Summarizer, reviews: list[str], **options) -> continuous.Entry:
    """The beam search summarize starts for `reviews`."""
    return started(lambda: summarizer.summarize(reviews, **options))


def grouped(summarizer: Summarizer, sets: list[list[str]]) -> continuous.Entry:
    """The one beam search summarize_batch starts for several sets (a request's group)."""
    return started(lambda: summaries(summarizer, sets))


def alone(summarizer: Summarizer, reviews: list[str], **options) -> list[list[tuple]]:
    with torch.inference_mode():  # as summarize runs it
        found = fresh(summarizer, reviews, **options).search.run()
    return [[(h.tokens, round(h.score, 4)) for h in hyps] for hyps in found]


def delivered(merged: continuous.Merged, entry: continuous.Entry) -> list[list[tuple]]:
    assert not merged.running(entry)
    return [[(h.tokens, round(h.score, 4)) for h in hyps] for hyps in merged.results(entry)]


def steps(merged: continuous.Merged, n: int = 1000) -> None:
    with torch.inference_mode():  # as Stepper.round: the searches were made in it
        for _ in range(n):
            if not len(merged.search.entity):
                return
            merged.search.step()


def test_searches_that_join_at_other_steps_get_what_each_gets_alone(either):
    summarizer = either
    lengths = [{}, {"max_words": 6}, {"max_words": 9, "min_words": 3}, {}]
    options = [dict(o, first_person=False) for o in lengths]  # only lengths differ...
    entries = [fresh(summarizer, s, **o) for s, o in zip(SETS, options, strict=True)]
    keys = {continuous._group_key(e) for e in entries}
    assert len(keys) == 2  # ...but max_words also ends summaries at a sentence
    entries = [fresh(summarizer, s, max_words=10 - i) for i, s in enumerate(SETS)]
    assert len({continuous._group_key(e) for e in entries}) == 1
    rows = [set(continuous._vocab_rows(e.search).tolist()) for e in entries]
    assert len(set(map(frozenset, rows))) >= 3  # shortlists of their own
    merged = continuous.Merged(entries[0])
    for entry, wait in zip(entries[1:], (2, 0, 3), strict=True):
        steps(merged, wait)
        assert merged.admit(entry)
    assert len(merged.rows) == len(set().union(*rows))  # the union of the shortlists
    steps(merged)
    for reviews, i, entry in zip(SETS, range(len(SETS)), entries, strict=True):
        assert delivered(merged, entry) == alone(summarizer, reviews, max_words=10 - i)


def test_the_union_drops_the_words_of_answered_requests_to_take_more(either, monkeypatch):
    summarizer = either
    first, second = fresh(summarizer, SETS[0], max_words=4), fresh(summarizer, SETS[1])
    merged = continuous.Merged(first)
    assert merged.admit(second)
    while merged.running(first):
        steps(merged, 1)
    assert merged.running(second)
    answer = delivered(merged, first)
    assert answer == alone(summarizer, SETS[0], max_words=4)
    third = fresh(summarizer, [OTHER[1], "the staff was friendly ."])
    first_rows, second_rows, third_rows = (
        set(continuous._vocab_rows(e.search).tolist()) for e in (first, second, third)
    )
    only_first = first_rows - second_rows - third_rows
    assert only_first and only_first <= set(merged.rows.tolist())
    # room for the third's words only once the first's have gone
    merged.limit = len(second_rows | third_rows)
    assert merged.admit(third)
    assert not only_first & set(merged.rows.tolist())
    steps(merged)
    assert delivered(merged, second) == alone(summarizer, SETS[1])
    assert delivered(merged, third) == alone(summarizer, [OTHER[1], "the staff was friendly ."])


def test_a_full_merged_search_refuses_newcomers(summarizer, monkeypatch):
    monkeypatch.setattr(continuous, "MAX_ENTITIES", 2)
    merged = continuous.Merged(fresh(summarizer, SETS[0]))
    assert merged.admit(fresh(summarizer, SETS[1]))
    assert not merged.admit(fresh(summarizer, SETS[2]))


def test_a_join_that_fails_leaves_the_merged_search_as_it_was(summarizer, monkeypatch):
    from denoisesum.models.denoisesum_parts import DecodeState

    first = fresh(summarizer, SETS[0])
    merged = continuous.Merged(first)
    steps(merged, 2)
    before = (len(merged.search.finished), merged.search.tokens.shape, len(merged.search.prev))

    def broken(self, other):
        raise RuntimeError("no memory for the joined state")

    monkeypatch.setattr(DecodeState, "joined", broken)
    with pytest.raises(RuntimeError):
        merged.admit(fresh(summarizer, SETS[1]))
    after = (len(merged.search.finished), merged.search.tokens.shape, len(merged.search.prev))
    assert after == before and merged.entries == [first]
    monkeypatch.undo()
    steps(merged)
    assert delivered(merged, first) == alone(summarizer, SETS[0])


def test_the_stepper_fails_what_it_cannot_place_or_finish_not_its_thread(summarizer):
    import threading

    from denoisesum.errors import DenoiseSumError

    stepper = continuous.Stepper(threading.Condition())
    late = fresh(summarizer, SETS[0])
    late.late = lambda: True
    running = fresh(summarizer, SETS[1])
    stepper._entries = [late, running]
    stepper.round()
    assert late.merged is None and late.done.is_set()  # past its limit: never joined
    assert running.merged is not None and not running.done.is_set()
    stepper.cancel_all()  # shutting down: an error, not a merged search's positions
    assert running.done.is_set() and isinstance(running.error, DenoiseSumError)


def test_sets_of_one_group_get_what_each_gets_alone(summarizer):
    # a group shares one search over the union of its sets' shortlists, each set kept to its own
    def words(rows: torch.Tensor, found: list[list[tuple]]) -> list[list[tuple]]:
        return [[(rows[tokens].tolist(), score) for tokens, score in hyps] for hyps in found]

    entry = grouped(summarizer, SETS[:2])
    union = continuous._vocab_rows(entry.search)
    own = [continuous._vocab_rows(fresh(summarizer, s).search) for s in SETS[:2]]
    assert not torch.equal(own[0], own[1])
    merged = continuous.Merged(entry)
    assert merged.admit(fresh(summarizer, SETS[2]))
    steps(merged)
    expected = [words(r, alone(summarizer, s)) for r, s in zip(own, SETS[:2], strict=True)]
    assert words(union, delivered(merged, entry)) == expected[0] + expected[1]
