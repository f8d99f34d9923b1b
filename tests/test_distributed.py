"""Data-parallel training (training/distributed.py): two gloo processes on CPU take the same steps
as one process on the same global batches, and only rank 0 writes."""

from __future__ import annotations

import gzip
import json
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from denoisesum.data.corpus import CorpusReader
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.models.bilm import BiLMConfig
from denoisesum.models.denoisesum import DenoiseSumConfig
from denoisesum.topics import CategoryTopics
from denoisesum.training import distributed
from denoisesum.training.denoiser import SummarizerTrainer
from denoisesum.training.denoiser_config import SummarizerRunConfig, SummarizerTrainConfig
from denoisesum.training.distributed import Distributed
from denoisesum.training.lm import LMRunConfig, LMTrainConfig, LMTrainer, VocabConfig
from denoisesum.training.pairs import PairDataConfig, PairVocabConfig

WORLD = 2
STEPS = 4  # summarizer steps; the 4th global batch holds a single pair (see test below)
LM_STEPS = 3
FOODS = ["pizza", "pasta", "burger", "salad", "soup", "steak"]
GOOD, BAD = ["great", "tasty", "fresh"], ["cold", "bland", "stale"]


def test_shard_splits_a_batch_into_disjoint_shares():
    batch = np.arange(10, 17)  # 7 items
    shares = [Distributed(rank, 3).shard(batch) for rank in range(3)]
    assert [s.tolist() for s, _ in shares] == [[10, 13, 16], [11, 14], [12, 15]]
    assert all(counted for _, counted in shares)
    # a batch smaller than the world: the rank left over runs one item, not counted
    assert [(s.tolist(), c) for s, c in (Distributed(r, 3).shard(batch[:2]) for r in range(3))] == [
        ([10], True),
        ([11], True),
        ([10], False),
    ]
    assert Distributed().shard(batch)[0] is batch  # one process: the batch itself


# ---------------------------------------------------------------------------------------------
# the runs, identical code in the test process (one process) and in each of the two ranks


def write_pairs(directory: Path) -> Path:
    """20 pairs of 8 entities; summaries of different lengths, so that the ranks' shares of a
    batch have different token counts."""
    rng = random.Random(0)
    lines = []
    for p in range(20):
        e = p % 8
        good = e % 2 == 0
        adjs = GOOD if good else BAD
        summary = (
            f"the {FOODS[e % 6]} was {rng.choice(adjs)}"
            + " and the staff was friendly" * (p % 3)
            + " ."
        )
        words = summary.split()
        lines.append(
            json.dumps(
                {
                    "pair_id": p,
                    "entity_id": f"biz-{e:02d}",
                    "summary": summary,
                    "segment_noise": [
                        " ".join(rng.sample(words, len(words) - 1)) for _ in range(2)
                    ],
                    "document_noise": [
                        f"we had the {FOODS[e % 6]} . it was {rng.choice(adjs)} ."
                        for _ in range(1 + p % 2)
                    ],
                }
            )
        )
    (directory / "shards").mkdir(parents=True)
    (directory / "shards" / "shard-00000.jsonl.gz").write_bytes(
        gzip.compress(("\n".join(lines) + "\n").encode())
    )
    return directory


def summarizer_config(topics: Path, max_steps: int) -> SummarizerRunConfig:
    return SummarizerRunConfig(
        model=DenoiseSumConfig(embed_dim=8, hidden_dim=8, dropout=0.0),
        vocab=PairVocabConfig(max_size=100, min_count=1),
        data=PairDataConfig(heldout_percent=20.0, topics=str(topics)),
        train=SummarizerTrainConfig(
            batch_size=3,
            lr=0.01,
            grad_clip=1e6,
            max_steps=max_steps,
            eval_every=2,
            save_every=2,
            log_every=1,
            patience=0,
            threads=1,
        ),
    )


def lm_config() -> LMRunConfig:
    return LMRunConfig(
        model=BiLMConfig(embed_dim=8, hidden_dim=8, proj_dim=8, cutoffs=[10], dropout=0.0),
        vocab=VocabConfig(max_size=100, min_count=1),
        train=LMTrainConfig(
            batch_tokens=120,
            max_len=12,
            lr=0.01,
            warmup_steps=2,
            max_steps=LM_STEPS,
            eval_every=LM_STEPS,
            save_every=LM_STEPS,
            heldout_percent=20.0,
            eval_reviews=20,
            threads=1,
        ),
    )


def _snapshot(model: torch.nn.Module, grads: bool = False) -> dict[str, torch.Tensor]:
    return {
        n: (p.grad if grads else p).detach().clone()
        for n, p in model.named_parameters()
        if not grads or p.grad is not None
    }


def run_summarizer(pairs: Path, topics: Path, out: Path, resume_at: int | None) -> dict:
    """Train STEPS steps (stopping at `resume_at` and resuming from its checkpoint when given);
    the gradients of step 1, the final parameters and every step's loss."""
    found: dict = {"losses": {}}

    def on_step(step: int, loss: float) -> None:
        found["losses"][step] = loss
        if step == 1:
            found["grads"] = _snapshot(trainer.model, grads=True)

    for steps, resume in [(resume_at, False), (STEPS, True)] if resume_at else [(STEPS, False)]:
        trainer = SummarizerTrainer(
            pairs,
            out,
            summarizer_config(topics, steps),
            resume=resume,
            on_step=on_step,
            progress=False,
        )
        found["summary"] = trainer.fit()
    found["params"] = _snapshot(trainer.model)
    found["batches"] = [len(b) for b in trainer._epoch_order(0)]
    return found


def run_lm(corpus: Path, out: Path) -> dict:
    found: dict = {"losses": {}}

    def on_step(step: int, loss: float) -> None:
        found["losses"][step] = loss
        if step == 1:
            found["grads"] = _snapshot(trainer.model, grads=True)

    trainer = LMTrainer(EncodedCorpus(corpus), out, lm_config(), on_step=on_step, progress=False)
    found["summary"] = trainer.fit()
    found["params"] = _snapshot(trainer.model)
    return found


def run_both(data: dict[str, Path], out: Path, resume_at: int | None) -> dict:
    return {
        "summarizer": run_summarizer(data["pairs"], data["topics"], out / "summarizer", resume_at),
        "lm": run_lm(data["corpus"], out / "lm"),
    }


WRITES = {
    "open",
    "os.mkdir",
    "os.rename",
    "os.remove",
    "os.rmdir",
    "shutil.rmtree",
    "os.truncate",
    "os.link",
    "os.symlink",
}


def _worker(rank: int, port: int, data: dict[str, Path], out: Path) -> None:
    """One of the ranks torchrun would start: the same environment variables."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(WORLD),
    )
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)  # so that "equal" can mean within 1e-9
    watched, writes = str(out.resolve()), []

    def audit(event: str, args: tuple) -> None:  # every file this process writes under `out`
        if event not in WRITES:
            return
        target = args[1] if event == "os.rename" else args[0]  # a rename: where to
        if not isinstance(target, (str, bytes, os.PathLike)):
            return
        if event == "open":
            mode, flags = args[1], args[2]
            writing = (
                any(c in mode for c in "wax+")
                if mode
                else bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
            )
            if not writing:
                return
        path = os.path.abspath(os.fsdecode(target))
        if path.startswith(watched):
            writes.append((event, path))

    sys.addaudithook(audit)
    found = run_both(data, out, resume_at=2)
    found["dist"] = distributed.setup()
    distributed.shutdown()
    torch.save({**found, "writes": writes}, out.parent / f"rank-{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The same training on one process (here) and on two gloo processes (spawned)."""
    root = tmp_path_factory.mktemp("distributed")
    write_pairs(root / "pairs")
    CategoryTopics(
        ["bad", "good"], {f"biz-{e:02d}": {"good" if e % 2 == 0 else "bad": 1.0} for e in range(8)}
    ).save(root / "topics")
    rng = random.Random(1)
    reviews = [
        {
            "entity_id": f"biz-{e}",
            "text": f"the {rng.choice(FOODS)} was "
            + " and ".join(rng.choice(GOOD + BAD) for _ in range(1 + i % 4))
            + " .",
        }
        for e in range(10)
        for i in range(4)
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reviews))
    EncodedCorpus.build(CorpusReader(root / "corpus.jsonl"), root / "encoded", Tokenizer())
    data = {"pairs": root / "pairs", "topics": root / "topics", "corpus": root / "encoded"}

    context = mp.start_processes(
        _worker,
        args=(_free_port(), data, root / "two"),
        nprocs=WORLD,
        join=False,
        start_method="spawn",
    )
    threads, dtype = torch.get_num_threads(), torch.get_default_dtype()
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    try:  # the single-process run meanwhile
        single = run_both(data, root / "one", resume_at=None)
    finally:
        torch.set_num_threads(threads)
        torch.set_default_dtype(dtype)
    deadline = time.monotonic() + 240
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("the two training processes did not finish in time")
    ranks = [torch.load(root / f"rank-{r}.pt", weights_only=False) for r in range(WORLD)]
    return {"root": root, "one": single, "ranks": ranks}


def _close(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys() and a
    for name in a:
        assert a[name].dtype == torch.float64
        torch.testing.assert_close(a[name], b[name], rtol=1e-9, atol=1e-12, msg=name)


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_summarizer_on_two_processes_takes_the_single_process_steps(runs):
    one, ranks = runs["one"]["summarizer"], [r["summarizer"] for r in runs["ranks"]]
    assert [r["dist"] for r in runs["ranks"]] == [Distributed(0, 2, 0), Distributed(1, 2, 1)]
    # the batches of the first epoch are 3, 3, 3 pairs and then 1: the shares are uneven
    # (2 and 1 pairs), and at step 4 rank 1 has none (it runs a pair with weight 0)
    assert one["batches"] == [3, 3, 3, 1]
    for rank in ranks:
        _close(rank["grads"], one["grads"])  # (a) step 1: the same gradient
        _close(rank["params"], one["params"])  # (b) after 4 steps (and a resume at step 2)
        assert rank["losses"].keys() == {1, 2, 3, 4}
        np.testing.assert_allclose(
            [rank["losses"][s] for s in range(1, 5)],
            [one["losses"][s] for s in range(1, 5)],
            rtol=1e-9,
        )
        assert rank["summary"]["processes"] == 2 and one["summary"]["processes"] == 1
        assert rank["summary"]["best_val_loss"] == pytest.approx(
            one["summary"]["best_val_loss"], rel=1e-9
        )
    assert all(
        torch.equal(ranks[0]["params"][k], ranks[1]["params"][k]) for k in ranks[0]["params"]
    )
    # rank 0 logged every step once, with the whole batch's loss and the sharded validation
    logged = {name: _metrics(runs["root"] / name / "summarizer") for name in ("one", "two")}
    assert [m["step"] for m in logged["two"] if "loss" in m] == [1, 2, 3, 4]
    for key in ("loss", "nll", "kl", "val_loss"):
        got = [m[key] for m in logged["two"] if key in m]
        assert got == pytest.approx([m[key] for m in logged["one"] if key in m], rel=1e-9)
        assert got


def test_lm_on_two_processes_takes_the_single_process_steps(runs):
    one, ranks = runs["one"]["lm"], [r["lm"] for r in runs["ranks"]]
    for rank in ranks:
        _close(rank["grads"], one["grads"])
        _close(rank["params"], one["params"])
        np.testing.assert_allclose(
            list(rank["losses"].values()), list(one["losses"].values()), rtol=1e-9
        )
        assert rank["summary"]["heldout"]["tokens"] == one["summary"]["heldout"]["tokens"] > 0
        assert rank["summary"]["heldout"]["nll"] == pytest.approx(
            one["summary"]["heldout"]["nll"], rel=1e-9
        )
    assert len(one["losses"]) == LM_STEPS


def test_only_rank_zero_writes(runs):
    two = runs["root"] / "two"
    first, second = (r["writes"] for r in runs["ranks"])
    assert second == []
    written = {Path(path).relative_to(two).parts[:2] for _, path in first}
    assert {
        ("summarizer", "checkpoints"),
        ("summarizer", "data"),
        ("summarizer", "metrics.jsonl"),
        ("summarizer", "results.json"),
        ("summarizer", "model.safetensors"),
        ("lm", "checkpoints"),
        ("lm", "results.json"),
    } <= written
    latest = (two / "summarizer" / "checkpoints" / "LATEST").read_text().strip()
    assert latest == f"step-{STEPS:09d}"
    saved = torch.load(two / "summarizer" / "checkpoints" / latest / "state.pt", weights_only=False)
    assert len(saved["rank_rng"]) == WORLD  # each rank's random state, for an exact resume
    assert not list(two.rglob("*.tmp"))


def test_torchrun_runs_the_command_line(tmp_path):
    """The documented entry point: torchrun -m denoisesum.cli; one tokenizer, one report."""
    rng = random.Random(2)
    reviews = [
        {"entity_id": f"biz-{e}", "text": f"the {rng.choice(FOODS)} was {rng.choice(GOOD + BAD)} ."}
        for e in range(10)
        for _ in range(3)
    ]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reviews))
    tiny = [
        f"--set={k}"
        for k in (
            "model.embed_dim=8",
            "model.hidden_dim=8",
            "model.proj_dim=8",
            "model.cutoffs=[10]",
            "vocab.min_count=1",
            "train.heldout_percent=20",
            "train.eval_every=2",
        )
    ]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "denoisesum.cli",
            "train-lm",
            str(tmp_path / "corpus.jsonl"),
            "-o",
            str(tmp_path / "lm"),
            "--max-steps",
            "2",
            *tiny,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("held-out perplexity") == 1, result.stdout  # rank 0 reports
    assert result.stderr.count("training segments; starting at step 0") == 1
    results = json.loads((tmp_path / "lm" / "results.json").read_text())
    assert results["steps"] == 2 and results["processes"] == 2
