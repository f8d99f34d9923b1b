"""progress.py (issue 35): ETAs that honour a time budget; plain periodic lines, never
carriage-return frames, when the output is not a terminal."""

import io

from denoisesum.progress import BudgetBar, LineProgress, clock, progress_bar, remaining


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_eta_is_the_time_budget_when_it_ends_first():
    # 197 of 2500 steps in 49 s (4 steps/s: 9.6 more minutes of steps), 130 s of budget left
    assert remaining(197, 2500, 197 / 49, 130.0) == (130.0, True)
    left, by_budget = remaining(197, 2500, 197 / 49, None)
    assert not by_budget and round(left) == 573
    assert remaining(2400, 2500, 4.0, 130.0) == (25.0, False)  # the steps end first


def test_a_pipe_gets_plain_lines_with_stage_rate_and_eta():
    stream = io.StringIO()
    bar = progress_bar(
        total=2500, desc="train", unit="step", stream=stream, interval=0, time_left=lambda: 130.0
    )
    assert isinstance(bar, LineProgress)
    bar.start -= 49  # as if started 49 s ago
    bar.set_postfix(loss="3.210")
    bar.update(197)
    bar.close()
    text = stream.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0] == (
        "train: 0/2,500 step, 0.0 step/s, 00:00 elapsed, ETA 02:10 (time budget) [started]"
    )
    assert lines[1].startswith(
        "train: 197/2,500 step, 4.0 step/s, 00:49 elapsed, ETA 02:10 (time budget), loss=3.210"
    )
    assert lines[-1].endswith("[done]") and "ETA" not in lines[-1]


def test_lines_come_every_interval_not_every_update():
    stream = io.StringIO()
    bar = LineProgress(total=100, desc="synthesize", unit="pairs", stream=stream, interval=3600)
    for _ in range(100):
        bar.update(1)
    bar.close()
    assert len(stream.getvalue().splitlines()) == 2  # started, done: never silent, never flooded


def test_iterating_counts_and_an_unknown_total_has_no_eta():
    stream = io.StringIO()
    items = list(
        progress_bar(iter(range(5)), desc="reading", unit="shard", stream=stream, interval=0)
    )
    assert items == list(range(5))
    last = stream.getvalue().splitlines()[-2]
    assert last.startswith("reading: 5 shard,") and "ETA" not in last


def test_on_a_terminal_the_bars_total_is_where_the_budget_stops_it():
    stream = Terminal()
    bar = progress_bar(
        total=2500, desc="train", unit="step", stream=stream, time_left=lambda: 130.0
    )
    assert isinstance(bar, BudgetBar)
    bar.start_t -= 49
    bar.update(197)
    # 4 steps/s for 130 more seconds: it stops near step 720, not at 2500
    assert 700 <= bar.total <= 740
    bar.close()
    unlimited = progress_bar(total=2500, desc="train", stream=Terminal())
    unlimited.update(10)
    assert unlimited.total == 2500
    unlimited.close()


def test_a_disabled_bar_writes_nothing():
    stream = io.StringIO()
    bar = progress_bar(total=10, desc="x", enabled=False, stream=stream)
    bar.update(5)
    bar.close()
    assert stream.getvalue() == ""


def test_clock():
    assert [clock(49), clock(1971), clock(7418)] == ["00:49", "32:51", "2:03:38"]
