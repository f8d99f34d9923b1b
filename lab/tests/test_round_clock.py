"""lab/benchmarks/round_clock.py: the service's decoding rounds of a process and of those it forks,
logged and summarized within a window (service_load.py --clock
lab.benchmarks.round_clock)."""

import os
import threading
import time

import pytest

from denoisesum.serving.continuous import Stepper
from lab.benchmarks import round_clock


@pytest.fixture
def stepper(monkeypatch, tmp_path):
    """A Stepper whose rounds step 7 rows when told to, clocked into a log."""

    def fake_round(self):
        self.rows += self.next_rows
        time.sleep(0.001)

    monkeypatch.setattr(Stepper, "round", fake_round)  # (restored after the test)
    log = tmp_path / "rounds.log"
    round_clock.clock(str(log))
    s = Stepper(threading.Condition())
    s.next_rows = 7
    return s, log


def test_each_round_that_stepped_rows_is_one_line_per_process(stepper):
    s, log = stepper
    s.round()
    s.next_rows = 0
    s.round()  # stepped nothing: not logged
    s.next_rows = 3
    pid = os.fork()
    if pid == 0:  # a forked worker writes to the same log through its own descriptor
        try:
            s.round()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    lines = [line.split() for line in log.read_text().splitlines()]
    assert [(p, rows) for p, _, rows, *_ in lines] == [(str(os.getpid()), "7"), (str(pid), "3")]
    for _, _, _, wall, cpu, waits, preempted in lines:
        assert float(wall) >= 1.0 and 0 <= float(cpu) <= float(wall) + 1
        assert int(waits) >= 0 and int(preempted) >= 0


def test_rounds_are_summarized_per_process_and_second_within_the_window(tmp_path):
    log = tmp_path / "rounds.log"
    lines = []
    for second, (a, b) in enumerate([(3.0, 4.0), (6.0, 8.0), (3.0, 4.5)]):
        for i in range(round_clock.MIN_ROUNDS):
            began = 100 + second + i / 100
            lines.append(f"11 {began} 17 5.0 {a} 1 2")
            lines.append(f"22 {began} 18 6.0 {b} 0 3")
    lines.append("11 98.5 17 5.0 50.0 1 2")  # before the window: left out
    lines.append("11 103.5 17 5.0 1.0 1 2")  # the last, partial second: counted, not a second
    log.write_text("\n".join(lines) + "\n")
    found = round_clock.read(str(log), 99.0, 103.9)
    first, second = found["workers"]
    assert first["rounds"] == 3 * round_clock.MIN_ROUNDS + 1
    assert (first["rows_a_round"], first["wall_ms_a_round"]) == (17, 5)
    assert (first["waits_a_round"], first["preempted_a_round"]) == (1, 2)
    assert first["cpu_ms_a_round_by_second"] == {
        "fastest": 3.0, "median": 3.0, "slowest": 6.0, "seconds": 3
    }  # fmt: skip
    assert second["cpu_ms_a_round_by_second"]["slowest"] == 8.0
    assert found["cpu_seconds_together_r"] > 0.9  # their slow second is the same one


def test_a_second_of_few_rounds_does_not_count(tmp_path):
    log = tmp_path / "rounds.log"
    log.write_text("11 101.2 17 5.0 3.0 0 0\n11 101.4 17 5.0 9.0 0 0\n")
    found = round_clock.read(str(log), 100.0, 103.0)
    assert found["workers"][0]["rounds"] == 2
    assert found["workers"][0]["cpu_ms_a_round_by_second"] == {
        "fastest": None, "median": None, "slowest": None, "seconds": 0
    }  # fmt: skip
    assert found["cpu_seconds_together_r"] is None  # one process
