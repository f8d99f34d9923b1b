"""Two batches decoded at once in one process (bulk.side_by_side, bulk.in_threads; issue 34
item 3): the output is the one-at-a-time run's, byte for byte."""

import threading
import time
from pathlib import Path

import pytest
import torch

from conftest import save_tiny_summarizer, synthetic_reviews, write_jsonl
from denoisesum.inference import bulk


def test_in_threads_keeps_the_order_and_decodes_two_at_once():
    running, most = set(), [0]
    lock = threading.Lock()

    def decode(i):
        with lock:
            running.add(i)
            most[0] = max(most[0], len(running))
        time.sleep(0.05 if i % 2 else 0.01)  # odd batches finish last
        with lock:
            running.discard(i)
        return i * 10

    assert list(bulk.in_threads(decode, range(7), 2)) == [i * 10 for i in range(7)]
    assert most[0] == 2
    assert list(bulk.in_threads(decode, range(3), 1)) == [0, 10, 20]


def test_stopping_early_cancels_the_batches_not_started():
    started = []

    def decode(i):
        started.append(i)
        time.sleep(0.02)
        return i

    results = bulk.in_threads(decode, range(100), 2)
    assert next(results) == 0
    results.close()  # what an error or Ctrl-C in the writer does
    assert len(started) <= 3


def test_a_batch_that_fails_stops_the_run_with_its_error():
    def decode(i):
        if i == 2:
            raise ValueError("batch 2")
        return i

    with pytest.raises(ValueError, match="batch 2"):
        list(bulk.in_threads(decode, range(6), 2))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from denoisesum.inference.beam import DecodeConfig
    from denoisesum.inference.summarizer import SummarizerConfig

    settings = SummarizerConfig(decode=DecodeConfig(beam_size=3, min_length=2, max_length=8))
    return save_tiny_summarizer(tmp_path_factory.mktemp("m") / "tiny", settings)


def test_two_batches_at_once_write_the_one_at_a_time_output(tiny, tmp_path):
    from denoisesum.inference.summarizer import Summarizer

    grouped: dict[str, list[str]] = {}
    for r in synthetic_reviews(n_entities=9, per_entity=4, seed=3):
        grouped.setdefault(r["entity_id"], []).append(r["text"])
    sets = write_jsonl(
        tmp_path / "sets.jsonl", [{"entity_id": e, "reviews": t} for e, t in grouped.items()]
    )
    summarizer = Summarizer.from_pretrained(tiny, device="cpu")
    before = torch.get_num_threads()
    outputs = {}
    try:
        for threads in (1, 2):  # 1: one batch at a time; 2: two at once, a thread each
            torch.set_num_threads(threads)
            with bulk.side_by_side(summarizer, str(sets)) as workers:
                assert workers == threads
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == threads  # restored
            out = tmp_path / f"out{threads}.jsonl"
            bulk.run(
                summarizer, str(sets), str(out), bulk.OutputOptions(explain=True), batch_size=2
            )
            outputs[threads] = out.read_bytes()
    finally:
        torch.set_num_threads(before)
    assert len(outputs[1].splitlines()) == 9
    assert outputs[2] == outputs[1]
