"""The torch threads a decode uses (denoisesum/threads.py): the CPUs available, the load others
put on them, an explicit setting, and a count someone else set left alone."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from conftest import save_tiny_summarizer, synthetic_sets
from denoisesum import threads as th
from denoisesum.errors import DenoiseSumError
from denoisesum.summarizer import Summarizer, SummarizerConfig


@pytest.fixture(autouse=True)
def torch_count():
    """Every test starts at torch's count as denoisesum saw it at import, and ends restored."""
    found = torch.get_num_threads()
    torch.set_num_threads(th.TORCH_THREADS)
    yield
    torch.set_num_threads(found)


@pytest.fixture
def four_cores(monkeypatch):
    """torch's count taken as 4, and a Governor for 4 cores whose load the test sets."""
    monkeypatch.setattr(th, "TORCH_THREADS", 4)
    for name in th.ENV_THREADS:
        monkeypatch.delenv(name, raising=False)
    torch.set_num_threads(4)
    clock = {"t": 0.0, "busy": 0.0, "own": 0.0}
    gov = th.Governor(
        4, 4, busy=lambda: clock["busy"], own=lambda: clock["own"], clock=lambda: clock["t"]
    )
    monkeypatch.setattr(th, "_governor", gov)
    return clock


def load(clock: dict, seconds: float, others: float, own: float = 0.0) -> None:
    """`seconds` pass while other processes use `others` cores and this one `own`."""
    clock["t"] += seconds
    clock["busy"] += (others + own) * seconds
    clock["own"] += own * seconds


def test_available_cpus_is_the_affinity_set_within_a_cgroup_quota(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(th.os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert th.available_cpus(tmp_path) == 3  # no cpu.max: the affinity set
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert th.available_cpus(tmp_path) == 3
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # 1.5 CPUs: 2
    assert th.available_cpus(tmp_path) == 2
    (tmp_path / "cpu.max").write_text("20000 100000\n")
    assert th.available_cpus(tmp_path) == 1


def test_busy_seconds_counts_only_this_process_cpus(tmp_path: Path):
    stat = tmp_path / "stat"
    hz = th.os.sysconf("SC_CLK_TCK")
    stat.write_text(
        "cpu  999 0 999 999 0 0 0 0 0 0\n"
        "cpu0 100 10 20 500 30 1 2 3 0 0\n"  # busy: 100+10+20+1+2+3 (idle, iowait left out)
        "cpu1 7000 0 0 0 0 0 0 0 0 0\n"
        "cpu2 50 0 0 10 0 0 0 0 0 0\n"
        "intr 12345\n"
    )
    assert th.busy_seconds({0, 2}, stat) == pytest.approx((136 + 50) / hz)
    assert th.busy_seconds({0}, tmp_path / "missing") is None


@pytest.mark.parametrize(
    "ceiling, cpus, others, want",
    [
        (2, 2, 0.0, 2),
        (2, 2, 0.2, 2),  # a little load: still both cores
        (2, 2, 0.3, 1),
        (2, 2, 1.0, 1),
        (2, 2, 5.0, 1),  # never fewer than 1
        (16, 16, 3.0, 13),
        (4, 16, 0.0, 4),  # never more than the ceiling
    ],
)
def test_choose_takes_the_cores_others_leave(ceiling, cpus, others, want):
    assert th.choose(ceiling, cpus, others) == want


def test_governor_measures_the_others_load_without_its_own(four_cores):
    gov = th.governor()
    load(four_cores, 1.0, others=0.0, own=4.0)  # this process alone on every core
    assert gov.current() == 4 and gov.others == pytest.approx(0.0)
    load(four_cores, 1.0, others=2.5, own=1.5)
    assert gov.current() == 1 and gov.others == pytest.approx(2.5)
    load(four_cores, th.SAMPLE_S / 2, others=0.0)  # too soon to measure again
    assert gov.current() == 1
    load(four_cores, 1.0, others=0.0)
    assert gov.current() == 4


def test_an_explicit_count_holds_inside_and_is_restored_after():
    before = torch.get_num_threads()
    with th.governing(1):
        assert torch.get_num_threads() == 1
        th.pace()  # a fixed count does not follow the load
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_auto_follows_the_load_between_steps(four_cores):
    load(four_cores, 1.0, others=1.0)
    with th.governing():
        assert torch.get_num_threads() == 3
        load(four_cores, 1.0, others=3.0)
        th.pace()
        assert torch.get_num_threads() == 1
        with th.governing():  # nested: the outer block decides
            assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 4


def test_a_count_someone_else_set_is_left_alone(four_cores):
    load(four_cores, 1.0, others=3.0)  # auto would take 1
    torch.set_num_threads(2)  # the user's
    with th.governing():
        th.pace()
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == 2


def test_omp_num_threads_leaves_torch_alone(four_cores, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    load(four_cores, 1.0, others=3.0)
    with th.governing():
        assert torch.get_num_threads() == 4


def test_a_thread_started_during_a_block_is_governed(four_cores):
    """torch.set_num_threads also sets the count threads started later begin with: one started
    while a block has set 1 starts at 1, which is the governor's, not a user's."""
    load(four_cores, 1.0, others=3.0)
    seen = []

    def other() -> None:
        seen.append(torch.get_num_threads())
        load(four_cores, 1.0, others=1.0)
        with th.governing():
            seen.append(torch.get_num_threads())

    with th.governing():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == [1, 3]


def test_summarizer_decodes_on_its_threads(tmp_path: Path, monkeypatch):
    directory = save_tiny_summarizer(tmp_path / "model", SummarizerConfig())
    with pytest.raises(DenoiseSumError, match="at least 1"):
        Summarizer.from_pretrained(directory, device="cpu", threads=0)
    summarizer = Summarizer.from_pretrained(directory, device="cpu", threads=1)
    method = summarizer.method()
    seen = []
    decode = method.summarize_sets
    monkeypatch.setattr(
        method, "summarize_sets", lambda *a: seen.append(torch.get_num_threads()) or decode(*a)
    )
    summarizer.summarize_results(synthetic_sets(2))
    assert seen == [1]
    assert torch.get_num_threads() == th.TORCH_THREADS
    free = replace(summarizer.config)
    assert Summarizer(summarizer.model, summarizer.vocab, free).threads is None
