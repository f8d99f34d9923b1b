"""lab/benchmarks/host_probe.py: the machine's own speed second by second, one process per core."""

import pytest

from lab.benchmarks import host_probe


@pytest.mark.parametrize("kind", ["memory", "compute"])
def test_each_core_reports_its_rate_every_second(kind):
    found = host_probe.main(["--seconds", "2", "--kind", kind])
    assert len(found["processes"]) == found["machine"]["cpus"]
    for process in found["processes"]:
        assert len(process["per_second"]) == 2
        assert 0 < process["lowest"] <= process["median"] <= process["fast"]
    assert set(found["slow_together_s"]) <= {0, 1}  # (a slow host, or none)


def test_decode_repeats_the_service_work_on_each_core():
    found = host_probe.main(["--seconds", "1", "--kind", "decode"])
    assert found["unit"] == "passes/s"
    assert all(p["lowest"] > 0 for p in found["processes"])
    assert len(found["processes"]) == found["machine"]["cpus"]


def test_slow_seconds_are_those_every_process_ran_slow_in():
    each = [[10.0, 4.0, 10.0, 10.0], [10.0, 5.0, 4.0, 10.0]]
    assert host_probe.together_slow(each, 0.8) == [1]


def test_a_setting_out_of_range_is_one_line(capsys):
    with pytest.raises(SystemExit):
        host_probe.main(["--seconds", "0"])
    assert "--seconds 0: must be 1-3600" in capsys.readouterr().err
