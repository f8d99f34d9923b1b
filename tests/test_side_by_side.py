"""Two batches decoded at once (issue 34 item 3), on two threads of one process
(executors.side_by_side, executors.Inline) or in two worker processes (executors.worker_processes,
workers.BatchPool, forked or spawned): the output is the one-at-a-time run's, byte for byte."""

import os
import threading
import time
from pathlib import Path

import pytest
import torch

from conftest import grouped_reviews, save_tiny_summarizer, write_jsonl
from denoisesum.execution import bulk, executors, outputs, pool, workers


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

    assert list(executors.in_order(executors.Inline(decode, 2).submit, range(7), 2)) == [
        i * 10 for i in range(7)
    ]
    assert most[0] == 2
    assert list(executors.in_order(executors.Inline(decode, 1).submit, range(3), 1)) == [0, 10, 20]


def test_stopping_early_cancels_the_batches_not_started():
    started = []

    def decode(i):
        started.append(i)
        time.sleep(0.02)
        return i

    results = executors.in_order(executors.Inline(decode, 2).submit, range(100), 2)
    assert next(results) == 0
    results.close()  # what an error or Ctrl-C in the writer does
    assert len(started) <= 3


def test_a_batch_that_fails_stops_the_run_with_its_error():
    def decode(i):
        if i == 2:
            raise ValueError("batch 2")
        return i

    with pytest.raises(ValueError, match="batch 2"):
        list(executors.in_order(executors.Inline(decode, 2).submit, range(6), 2))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from denoisesum.inference.beam import SearchConfig
    from denoisesum.summarizer import SummarizerConfig

    settings = SummarizerConfig(search=SearchConfig(beam=3, min_words=2, max_words=8))
    return save_tiny_summarizer(tmp_path_factory.mktemp("m") / "tiny", settings)


@pytest.fixture()
def sets_file(tmp_path) -> Path:
    grouped = grouped_reviews(9, 4, seed=3)
    return write_jsonl(
        tmp_path / "sets.jsonl", [{"entity_id": e, "reviews": t} for e, t in grouped.items()]
    )


def _run(tiny, sets_file, out: Path, threads: int) -> bytes:
    from denoisesum.summarizer import Summarizer

    summarizer = Summarizer.from_pretrained(tiny, device="cpu")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        bulk.run(
            summarizer, str(sets_file), str(out), outputs.OutputOptions(explain=True), batch_size=2
        )
        assert torch.get_num_threads() == threads  # restored
    finally:
        torch.set_num_threads(before)
    return out.read_bytes()


def test_two_batches_at_once_write_the_one_at_a_time_output(tiny, sets_file, tmp_path, monkeypatch):
    from denoisesum.summarizer import Summarizer

    summarizer = Summarizer.from_pretrained(tiny, device="cpu")
    before = torch.get_num_threads()
    try:
        for threads in (1, 2):  # 1: one batch at a time; 2: two at once, a thread each
            torch.set_num_threads(threads)
            with executors.side_by_side(summarizer, str(sets_file)) as workers:
                assert workers == threads
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == threads  # restored
    finally:
        torch.set_num_threads(before)
    one = _run(tiny, sets_file, tmp_path / "one.jsonl", 1)
    assert len(one.splitlines()) == 9
    monkeypatch.setattr(executors, "POOL_BATCHES", {"fork": 99, "spawn": 99})  # 5 batches: threads
    pools = pools_made(monkeypatch)
    assert _run(tiny, sets_file, tmp_path / "threads.jsonl", 2) == one
    assert pools == [], "worker processes where two threads were expected"


def pools_made(monkeypatch) -> list:
    """The ProcessPools that bulk runs enter from now on, as they are entered."""
    made: list = []
    monkeypatch.setattr(pool.ProcessPool, "__enter__", lambda pool: made.append(pool) or pool)
    return made


@pytest.mark.parametrize(("start", "threads"), [("fork", 2), ("fork", 4), ("spawn", 2)])
def test_worker_processes_write_the_one_at_a_time_output(
    tiny, sets_file, tmp_path, monkeypatch, start, threads
):
    import multiprocessing

    if start not in multiprocessing.get_all_start_methods():
        pytest.skip(f"this system cannot {start} processes")
    one = _run(tiny, sets_file, tmp_path / "one.jsonl", 1)
    monkeypatch.setattr(workers, "pool_start", lambda: start)
    monkeypatch.setattr(executors, "POOL_BATCHES", {start: 2})  # spawned for 5 batches too
    made = pools_made(monkeypatch)
    assert _run(tiny, sets_file, tmp_path / "processes.jsonl", threads) == one
    # a worker per torch thread, one thread each (5 batches of 2: every worker had one)
    assert len(made) == 1 and made[0].workers == threads and made[0].spec.threads == 1


def _die(*args, **kwargs):
    os._exit(3)  # a worker killed mid-batch


def test_a_worker_that_dies_stops_the_run_with_one_line(tiny, sets_file, tmp_path, monkeypatch):
    import multiprocessing

    from denoisesum.errors import DenoiseSumError

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the dying worker is made by forking this test's process")
    monkeypatch.setattr(workers, "pool_start", lambda: "fork")
    monkeypatch.setattr(executors, "POOL_BATCHES", {"fork": 2})
    monkeypatch.setattr(workers, "summarize_partition", _die)  # what the forked workers run
    with pytest.raises(DenoiseSumError, match="a worker process decoding the batches stopped"):
        _run(tiny, sets_file, tmp_path / "out.jsonl", 2)


def test_more_threads_mean_more_workers_of_one_thread_each(tmp_path):
    """The command with 4 torch threads (worker processes of one thread each: never parallel
    work on a forked worker's main thread, which can hang in OpenMP once the parent has used
    it) and the packaged model writes the one-process output."""
    from conftest import run_cli

    sets = Path(__file__).resolve().parents[1] / "examples" / "review_sets.jsonl"
    outputs = {}
    for threads in ("1", "4"):
        out = tmp_path / f"out{threads}.jsonl"
        done = run_cli(
            "summarize", sets, "--batch-size", "1", "-o", out,
            env={"OMP_NUM_THREADS": threads}, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs[threads] = out.read_bytes()
    assert len(outputs["1"].splitlines()) == 5 and outputs["4"] == outputs["1"]
