"""Shared fixtures: tiny synthetic corpora written by the tests, and the optional shared data."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

needs_data = pytest.mark.skipif(
    not (SHARED_DATA / "yelp").is_dir(),
    reason=f"shared data not found at {SHARED_DATA} (it is never shipped with the project)",
)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


FOODS = ["pizza", "pasta", "burger", "salad", "soup", "steak", "sushi", "tacos"]
GOOD = ["great", "delicious", "amazing", "fresh", "tasty"]
BAD = ["cold", "bland", "soggy", "awful", "stale"]
STAFF = ["staff", "server", "waiter", "owner", "manager"]


def synthetic_reviews(n_entities: int = 30, per_entity: int = 12, seed: int = 0) -> list[dict]:
    """A corpus with learnable structure: sentiment words agree within a review."""
    rng = random.Random(seed)
    out = []
    for e in range(n_entities):
        for _ in range(per_entity):
            good = rng.random() < 0.5
            adj = GOOD if good else BAD
            text = (
                f"the {rng.choice(FOODS)} was {rng.choice(adj)} and the {rng.choice(STAFF)} "
                f"was {'friendly' if good else 'rude'} . "
                f"we {'will' if good else 'will not'} come back ."
            )
            out.append({"entity_id": f"biz-{e:03d}", "text": text, "rating": 5.0 if good else 1.0})
    return out


def grouped_reviews(n_entities: int, per_entity: int, seed: int = 0) -> dict[str, list[str]]:
    """`synthetic_reviews`' texts by entity id, in order."""
    out: dict[str, list[str]] = {}
    for r in synthetic_reviews(n_entities, per_entity, seed):
        out.setdefault(r["entity_id"], []).append(r["text"])
    return out


def synthetic_sets(n: int = 3) -> list[list[str]]:
    """n entities of 4 synthetic reviews each."""
    return list(grouped_reviews(n, 4).values())


def write_dev_sets(path: Path, n: int = 3) -> Path:
    """A dev review-set file of `synthetic_sets(n)`, each with one reference summary."""
    return write_jsonl(
        path,
        [
            {
                "entity_id": f"e{i}",
                "reviews": reviews,
                "summaries": ["the pizza was great and the staff was friendly ."],
            }
            for i, reviews in enumerate(synthetic_sets(n))
        ],
    )


def save_tiny_summarizer(directory: Path, settings) -> Path:
    """A tiny random DenoiseSum over the synthetic corpus' words, saved the way the trainer
    saves one, with `settings` (a SummarizerConfig) as its decoding settings."""
    from collections import Counter
    from dataclasses import asdict

    from denoisesum.data.tokenizer import Tokenizer
    from denoisesum.data.vocab import Vocab
    from denoisesum.models.denoisesum import DenoiseSum, DenoiseSumConfig
    from denoisesum.models.store import save_model_dir

    tokenizer = Tokenizer()
    counts = Counter(t for r in synthetic_reviews() for t in tokenizer.tokenize(r["text"]))
    counts.update({"i": 3, "my": 3, "me": 3})
    vocab = Vocab.from_counts(counts, tokenizer=tokenizer)
    torch.manual_seed(0)
    cfg = DenoiseSumConfig(vocab_size=len(vocab), embed_dim=8, hidden_dim=12, n_topics=3)
    save_model_dir(
        directory,
        DenoiseSum(cfg),
        {
            "kind": "denoisesum",
            "model": asdict(cfg),
            "summarize": asdict(settings),
            "train": {"lr": 0.001},
        },
        vocab,
    )
    return directory


@pytest.fixture
def synthetic_corpus(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", synthetic_reviews())


@pytest.fixture
def one_thread():
    """Tiny tensors: threads only add overhead (and contend with other jobs)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def said_checked(monkeypatch) -> list[int]:
    """Every search step's constraints, from what the search keeps of each beam (constraints.Said),
    checked against the same read afresh from the beam's history: the bans and each Said's
    fields. Yields the list of steps checked, with the rows that restated (for coverage)."""
    from denoisesum.inference import beam, constraints

    checked: list[int] = []

    def fields(said: constraints.Said) -> tuple:
        return said.sentence, said.earlier, said.overlap, said.uses, said.capped

    def mask(history, masks, config, bounds=None, lengths=None, said=None):
        ban = constraints.constraint_mask(history, masks, config, bounds, lengths, said)
        if said is not None:
            again = constraints.Said.of_history(history, constraints.SaidRules.of(masks, config))
            assert list(map(fields, said)) == list(map(fields, again))
            assert torch.equal(
                ban, constraints.constraint_mask(history, masks, config, bounds, lengths)
            )
            share = config.restate_overlap
            checked.append(sum(s.restates(share) for s in said) if share else 0)
        return ban

    monkeypatch.setattr(beam, "constraint_mask", mask)
    return checked


def build_wheel(work: Path) -> Path:
    """A wheel of the working tree in work/dist, built without touching the checkout (its build/
    and egg-info go to work, through DIST_EXTRA_CONFIG)."""
    extra = work / "setup.cfg"
    extra.write_text(f"[build]\nbuild_base = {work / 'build'}\n[egg_info]\negg_base = {work}\n")
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--disable-pip-version-check",
        "-q",
        "-w",
        str(work / "dist"),
        str(Path(__file__).resolve().parents[1]),
    ]
    result = subprocess.run(
        command,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DIST_EXTRA_CONFIG": str(extra)},
    )
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    (found,) = (work / "dist").glob("denoisesum-*.whl")
    return found


def run_cli(
    *args, cwd: Path | None = None, timeout: float = 300, env: dict | None = None, **kwargs
) -> subprocess.CompletedProcess:
    """`python -m denoisesum.cli ARGS` in a subprocess (one torch thread, `env` added to the
    environment), output captured."""
    return subprocess.run(
        [sys.executable, "-m", "denoisesum.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
        **kwargs,
    )


def running(pid: int | str) -> bool:
    """Whether the process exists and has not exited (a zombie waits for its parent's reaper)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(pid: int) -> list[str]:
    """The process ids of a running process's children."""
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


def all_ended(pids: list[str], seconds: float = 30.0) -> bool:
    """Whether every process of `pids` has ended within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(running(p) for p in pids)


class Ran:
    """A command's outcome as its user sees it: exit code, output, and whether it was refused."""

    def __init__(self, done: subprocess.CompletedProcess) -> None:
        self.done, self.exit_code = done, done.returncode
        self.stdout, self.stderr, self.output = done.stdout, done.stderr, done.stdout + done.stderr

    def refused(self, message: str) -> bool:
        return refused(self.done, message)


def ran_cli(*args, cwd: Path | None = None) -> Ran:
    """run_cli with two minutes to finish, as a Ran."""
    return Ran(run_cli(*args, cwd=cwd, timeout=120))


# input a Yelp model cannot read: another script, another language, no words
UNREADABLE = {
    "chinese": ["这家餐厅的拉面非常好吃，服务也很周到。", "价格合理，环境干净，推荐！"],
    "french": [
        "Le restaurant était excellent, le service rapide.",
        "Très bon rapport qualité-prix, je recommande vivement ce bistrot.",
    ],
    "punctuation": ["!!! ??? ...", "--- ;;; ,,,"],
    "emoji": ["😀😀🍜🍜👍", "🔥🔥 😋"],
    "zero-width": ["\u200b\u200b\u200b", "\u200c\u200d\ufeff"],
}


def refused(done: subprocess.CompletedProcess, message: str) -> bool:
    """An error of one line holding `message`, no traceback anywhere in the output."""
    lines = done.stderr.strip().splitlines()
    return (
        done.returncode == 2
        and "Traceback" not in (done.stdout or "") + done.stderr
        and bool(lines)
        and lines[-1].startswith("error: ")
        and message in lines[-1]
    )


def study_refuses(monkeypatch, main, args: list[str], message: str) -> None:
    """A study's main(), run on args in this process (no interpreter and torch to start, as a
    subprocess would), stops with a one-line message (SystemExit's) holding `message`."""
    monkeypatch.setattr(sys, "argv", ["study", *args])
    with pytest.raises(SystemExit) as stop:
        main()
    assert isinstance(stop.value.code, str) and message in stop.value.code


# ---- the summarizer's one interface, as the tests read it ------------------------------------


def summaries(
    summarizer, review_sets, batch_size=8, warn=True, ratings=None, slice="all", **options
):
    """Readable summaries of review sets (Summarizer.summarize_results' summary of each); with
    `warn`, what each result warns is warned, as Summarizer.summarize does."""
    import warnings

    from denoisesum.inference.methods import empty_slice_message
    from denoisesum.summarizer import EmptySliceWarning, UnreadableInputWarning

    results = summarizer.summarize_results(
        review_sets, ratings, slice=slice, batch_size=batch_size, **options
    )
    if warn:
        empty = empty_slice_message(slice)
        for i, result in enumerate(results):
            for message in result.warnings:
                kind = EmptySliceWarning if message == empty else UnreadableInputWarning
                warnings.warn(f"review set {i}: {message}", kind, stacklevel=2)
    return [r.summary for r in results]


def token_summaries(summarizer, review_sets, batch_size=8, ratings=None, slice="all", **options):
    """Tokenized summaries of review sets (each SummaryResult's tokens)."""
    results = summarizer.summarize_results(
        review_sets, ratings, slice=slice, batch_size=batch_size, **options
    )
    return [r.tokens for r in results]


def token_summary(summarizer, reviews, ratings=None, slice="all", **options):
    """The tokenized summary of one review set."""
    return token_summaries(summarizer, [reviews], 1, [ratings], slice, **options)[0]
