"""`denoisesum summarize --dask` (issue 34 item 2): the bulk run's batches decoded on a local
Dask cluster of 2 worker processes give the single-process output byte for byte, in its order,
and resume it the same way (the entities already written are skipped)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

import conftest
from conftest import grouped_reviews, refused, save_tiny_summarizer, write_jsonl
from denoisesum.errors import DenoiseSumError
from denoisesum.execution import bulk, cluster, outputs, resume, workers

pytest.importorskip("distributed", reason="the dask extra is not installed")

N_ENTITIES = 10


run_cli = functools.partial(conftest.run_cli, timeout=180)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from denoisesum.inference.beam import SearchConfig
    from denoisesum.summarizer import SummarizerConfig

    settings = SummarizerConfig(search=SearchConfig(beam=2, min_words=2, max_words=6))
    return save_tiny_summarizer(tmp_path_factory.mktemp("m") / "tiny", settings)


@pytest.fixture(scope="module")
def sets_file(tmp_path_factory) -> Path:
    grouped = grouped_reviews(N_ENTITIES, 4, seed=5)
    grouped["unreadable"] = ["12345 67890", "!!!"]  # a warning, said by the command
    return write_jsonl(
        tmp_path_factory.mktemp("in") / "sets.jsonl",
        [{"entity_id": e, "reviews": t} for e, t in grouped.items()],
    )


def test_a_local_cluster_of_two_workers_writes_the_single_process_output(tiny, sets_file, tmp_path):
    from denoisesum.summarizer import Summarizer

    common = [sets_file, "--model", tiny, "--batch-size", "2", "--explain"]
    single, spread = tmp_path / "single.jsonl", tmp_path / "dask.jsonl"
    # the single-process run (in this process: the command's code path, without its start-up)
    bulk.run(
        Summarizer.from_pretrained(tiny),
        str(sets_file),
        str(single),
        outputs.OutputOptions(explain=True),
        batch_size=2,
    )
    assert len(single.read_text().splitlines()) == N_ENTITIES + 1
    # a run cut after 3 entities (its sidecar as the single run wrote it), continued on the
    # cluster: the rest decoded on the workers, appended in order, to the same bytes (one
    # cluster run: each costs the workers' start, 10-30 s on a loaded 2-core machine)
    spread.write_bytes(b"".join(single.read_bytes().splitlines(keepends=True)[:3]))
    resume.sidecar(spread).write_bytes(resume.sidecar(single).read_bytes())
    done = run_cli("summarize", *common, "-o", spread, "--dask", "2")
    assert done.returncode == 0, done.stderr
    assert f"{N_ENTITIES + 1 - 3} summaries -> {spread} (3 from before kept)" in done.stderr
    assert spread.read_bytes() == single.read_bytes()
    assert "warning: entity unreadable:" in done.stderr  # a worker's warning, said here
    assert json.loads(resume.sidecar(spread).read_text())["complete"] is True


def test_a_bad_dask_target_is_one_line_before_any_work(tiny, sets_file):
    done = run_cli("summarize", sets_file, "--model", tiny, "--dask", "two")
    assert refused(done, "--dask 'two': must be a number of local workers"), done.stderr


def test_a_worker_with_another_model_refuses(tiny):
    from denoisesum.summarizer import Summarizer

    spec = workers.model_spec(Summarizer.from_pretrained(tiny), None)
    assert workers.load(spec).path == tiny
    other = workers.ModelSpec(spec.model, spec.config, (("model.safetensors", "0" * 64),), None)
    with pytest.raises(DenoiseSumError, match="is not the command's"):
        workers.load(other)


def test_targets_parse():
    assert cluster.parse_target("4") == 4
    assert cluster.parse_target("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert cluster.parse_target("scheduler:8786") == "scheduler:8786"
    for bad in ("0", "http//x", ""):
        with pytest.raises(DenoiseSumError, match="--dask"):
            cluster.parse_target(bad)


def test_without_dask_the_option_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "distributed" else real(name, *a),
    )
    with pytest.raises(
        DenoiseSumError,
        match=r"--dask needs the dask extra: pip install "
        r"'denoisesum\[dask\]'",
    ):
        cluster.parse_target("2")
