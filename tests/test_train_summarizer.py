"""The summarizer's training: pair shards -> cache -> batches -> Trainer; topic models; the CLI."""

import gzip
import json
import math
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from denoisesum.cli import app
from denoisesum.config import check
from denoisesum.data.batch import DOCUMENT, SEGMENT, SummaryBatch
from denoisesum.data.vocab import BOS_ID, EOS_ID
from denoisesum.errors import ConfigError, DenoiseSumError, InputError
from denoisesum.models import precision
from denoisesum.models.denoisesum import DenoiseSum, DenoiseSumConfig
from denoisesum.models.precision import bf16_supported
from denoisesum.models.store import read_model_dir
from denoisesum.topics import (
    CategoryTopics,
    LDAConfig,
    load_topics,
    topic_distributions,
    train_lda,
)
from denoisesum.training.denoiser import SummarizerTrainer, supported_targets
from denoisesum.training.denoiser_config import SummarizerRunConfig, SummarizerTrainConfig
from denoisesum.training.pairs import PairCorpus, PairDataConfig, PairVocabConfig, collate

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "denoisesum-yelp.toml"
FOODS = ["pizza", "pasta", "burger", "salad", "soup", "steak"]
GOOD, BAD = ["great", "tasty", "fresh"], ["cold", "bland", "stale"]


def make_pairs(n_pairs=40, n_entities=10, seed=0):
    """Pairs in the `denoisesum synthesize` format, with a learnable summary: each entity has a
    food and a polarity that its reviews (document noise) and the summary agree on."""
    rng = random.Random(seed)
    out = []
    for p in range(n_pairs):
        e = p % n_entities
        food, good = FOODS[e % len(FOODS)], e % 2 == 0
        adjs = GOOD if good else BAD
        staff = "friendly" if good else "rude"
        summary = f"the {food} was {rng.choice(adjs)} and the staff was {staff} ."
        words = summary.split()
        segment = [" ".join(rng.sample(words, len(words) - 2)) for _ in range(3)]
        document = [
            f"we had the {food} . it was {rng.choice(adjs)} . staff {staff} ." for _ in range(3)
        ]
        out.append(
            {
                "pair_id": p,
                "entity_id": f"biz-{e:02d}",
                "summary": summary,
                "segment_noise": segment,
                "document_noise": document,
                "n": 3,
                "document_noise_short": False,
                "candidate_review": p,
            }
        )
    return out


def write_shards(directory, pairs, per_shard=20):
    shards = directory / "shards"
    shards.mkdir(parents=True, exist_ok=True)
    for k in range(0, len(pairs), per_shard):
        lines = "".join(json.dumps(p) + "\n" for p in pairs[k : k + per_shard])
        (shards / f"shard-{k // per_shard:05d}.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    return directory


@pytest.fixture
def pairs_dir(tmp_path):
    return write_shards(tmp_path / "pairs", make_pairs())


@pytest.fixture
def topics_dir(tmp_path):
    """A human-category topic model (good/bad places): cheap, and exact."""
    entities = {f"biz-{e:02d}": {"good" if e % 2 == 0 else "bad": 1.0} for e in range(10)}
    CategoryTopics(["bad", "good"], entities).save(tmp_path / "topics")
    return tmp_path / "topics"


def tiny_config(topics=None, **train) -> SummarizerRunConfig:
    defaults = dict(
        lr=0.01,
        max_steps=20,
        eval_every=10,
        save_every=5,
        log_every=1,
        patience=0,
        threads=1,
        batch_size=4,
    )
    defaults.update(train)
    return SummarizerRunConfig(
        model=DenoiseSumConfig(
            embed_dim=16, hidden_dim=16, dropout=0.1, discriminator=topics is not None
        ),
        vocab=PairVocabConfig(max_size=200, min_count=1),
        data=PairDataConfig(heldout_percent=20.0, topics=str(topics or "")),
        train=SummarizerTrainConfig(**defaults),
    )


def trainer(pairs_dir, run_dir, cfg, **kwargs) -> SummarizerTrainer:
    return SummarizerTrainer(pairs_dir, run_dir, cfg, progress=False, **kwargs)


# ---------------------------------------------------------------------------------------------
# data


def test_pair_cache_batches_and_truncation(tmp_path):
    pairs = make_pairs(6, 3)
    pairs[0]["document_noise"][0] = " ".join(["word"] * 40)  # long: cut
    pairs[1]["segment_noise"] = ["", "the"]  # an empty review (dropped)
    pairs[2]["segment_noise"], pairs[2]["document_noise"] = [""], []  # nothing left: skipped
    directory = write_shards(tmp_path / "pairs", pairs)
    corpus = PairCorpus.build(directory, tmp_path / "cache", max_review_tokens=10, progress=False)
    assert len(corpus) == 5 and corpus.meta["pairs_without_reviews"] == 1
    assert corpus.meta["empty_reviews_dropped"] == 2
    assert corpus.n_segment.tolist() == [3, 1, 3, 3, 3] and corpus.n_document.tolist() == [3] * 5
    assert corpus.pair_id.tolist() == [0, 1, 3, 4, 5]
    assert corpus.summary_tokens(0) == pairs[0]["summary"].split()
    vocab = corpus.build_vocab(max_size=None)
    table = corpus.vocab_table(vocab)
    cfg = PairDataConfig(max_review_tokens=10, max_reviews=2)
    topics = np.full((len(corpus), 4), 0.25)
    batch = collate(corpus, table, np.array([0, 1]), cfg, topics)
    assert batch.n_pairs == 2 and batch.topics.shape == (2, 4)
    assert batch.review_pair.tolist() == [0, 0, 0, 0, 1, 1, 1]  # 2 + 2, then 1 + 2
    assert batch.review_kind.tolist() == [
        SEGMENT,
        SEGMENT,
        DOCUMENT,
        DOCUMENT,
        SEGMENT,
        DOCUMENT,
        DOCUMENT,
    ]
    # cut once, when cached: the batch has what the cache has
    assert int(batch.review_lengths.max()) == 10
    assert vocab.decode(batch.reviews[2, :10].tolist()) == ["word"] * 10
    assert (
        vocab.decode(batch.summary[0, : batch.summary_lengths[0]].tolist())
        == pairs[0]["summary"].split()
    )
    no_seg = collate(corpus, table, np.array([0]), cfg, None, segment=False)
    assert no_seg.review_kind.tolist() == [DOCUMENT, DOCUMENT] and no_seg.topics is None
    again = PairCorpus.build(directory, tmp_path / "cache", max_review_tokens=10, progress=False)
    assert again.meta == corpus.meta  # reused
    for shard in directory.rglob("*.jsonl.gz"):
        os.utime(shard, (1, 1))  # touched (a copy): known by content, still reused
    touched = PairCorpus.build(directory, tmp_path / "cache", max_review_tokens=10, progress=False)
    assert touched.meta == corpus.meta


def test_fraction_uses_the_right_number_of_pairs(pairs_dir, tmp_path):
    full = trainer(pairs_dir, tmp_path / "full", tiny_config())
    cfg = tiny_config()
    cfg.data.fraction = 0.25
    part = trainer(pairs_dir, tmp_path / "part", cfg)
    assert len(full.train_pairs) + len(full.held_pairs) == 40 and len(full.held_pairs) > 0
    assert len(part.train_pairs) == round(0.25 * len(full.train_pairs))
    assert set(part.train_pairs) <= set(full.train_pairs)
    assert part.held_pairs.tolist() == full.held_pairs.tolist()  # validation unchanged
    held_entities = {part.corpus.entity[p] for p in part.held_pairs}
    assert not held_entities & {part.corpus.entity[p] for p in full.train_pairs}
    n_batches = -(-len(part.train_pairs) // cfg.train.batch_size)
    epoch = np.concatenate([b for _, b in zip(range(n_batches), part._batches(), strict=False)])
    assert sorted(epoch.tolist()) == part.train_pairs.tolist()  # each kept pair once an epoch


# ---------------------------------------------------------------------------------------------
# training


def test_loss_falls_and_best_model_is_exported(pairs_dir, topics_dir, tmp_path):
    losses = []
    run = trainer(
        pairs_dir,
        tmp_path / "run",
        tiny_config(topics_dir, max_steps=60, eval_every=20),
        on_step=lambda s, x: losses.append(x),
    )
    assert run.topics.shape == (40, 2) and np.allclose(run.topics.sum(1), 1)
    summary = run.fit()
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:5]), losses
    weights, config, vocab = read_model_dir(tmp_path / "run")
    assert config["kind"] == "denoisesum" and config["model"]["n_topics"] == 2
    assert set(config["model"]) == set(DenoiseSumConfig().__dict__)
    assert config["train"]["lr"] == 0.01 and config["model"]["vocab_size"] == len(vocab)
    model = DenoiseSum(DenoiseSumConfig(**config["model"]))
    model.load_state_dict(weights)
    assert summary["best_val_loss"] is not None and summary["pairs_per_second"] > 0
    assert config["summarize"]["max_review_tokens"] == 150  # reviews cut as in training
    assert config["summarize"]["search"]["no_repeat_ngram"] == 3  # the default decoding
    metrics = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "val_loss" in m] == [20, 40, 60]


def test_supported_targets_are_the_words_some_input_review_holds():
    # pair 0's reviews hold 10, 11, 12; pair 1's hold 11 and 13 (0 is padding)
    batch = SummaryBatch(
        reviews=torch.tensor([[10, 11, 0], [12, 0, 0], [11, 13, 0]]),
        review_lengths=torch.tensor([2, 1, 2]),
        review_pair=torch.tensor([0, 0, 1]),
        review_kind=torch.tensor([SEGMENT, DOCUMENT, SEGMENT]),
        n_pairs=2,
        summary=torch.tensor([[10, 13, 12], [13, 10, 0]]),
        summary_lengths=torch.tensor([3, 2]),
    )
    # targets: the words, then </s>, then padding
    assert supported_targets(batch).tolist() == [
        [True, False, True, True],  # 13 is in no review of pair 0
        [True, False, True, False],  # 10 is in no review of pair 1; then </s> and padding
    ]


def test_unsupported_weight_leaves_those_words_out_of_the_nll(tmp_path):
    pairs = make_pairs()
    for pair in pairs:  # a word the summary says and no input holds
        pair["summary"] = pair["summary"].replace(" .", " yesterday .")
    pairs_dir = write_shards(tmp_path / "pairs", pairs)
    run = trainer(pairs_dir, tmp_path / "run", tiny_config(unsupported_weight=0.0))
    batch = run.batch(np.arange(4))
    run.model.eval()  # no dropout: the two passes below see the same probabilities
    with torch.no_grad():
        plain = run._forward(batch)
        weighted = run._forward(batch, weighted=True)
    held = supported_targets(batch)
    assert 0 < int(held.sum()) < plain["n_tokens"]  # the toy pairs have some of each
    expected = (plain["token_nll"] * held).sum() / plain["n_tokens"]
    assert float(weighted["nll"]) == pytest.approx(float(expected), rel=1e-5)
    assert float(weighted["nll"]) < float(plain["nll"])
    run.fit()  # and it trains
    with pytest.raises(ConfigError, match="unsupported_weight"):
        check(SummarizerTrainConfig(unsupported_weight=1.5), "train")


def greedy(model, batch, max_len=20):
    state = model.encode(batch)
    prev, out = torch.tensor([BOS_ID]), []
    for _ in range(max_len):
        log_p, state = model.decode_step(state, prev)
        prev = log_p.argmax(-1)
        if int(prev) == EOS_ID:
            break
        out.append(int(prev))
    return out


def test_overfits_one_pair_and_greedy_decoding_reproduces_it(tmp_path):
    pair = make_pairs(1, 1)
    directory = write_shards(tmp_path / "pairs", pair)
    cfg = tiny_config(max_steps=120, lr=0.02, eval_every=120)
    cfg.model.dropout, cfg.data.heldout_percent = 0.0, 0.0
    run = trainer(directory, tmp_path / "run", cfg)
    run.fit()
    model = run.model.eval()
    decoded = run.vocab.decode(greedy(model, run.batch(np.array([0]))))
    assert decoded == pair[0]["summary"].split()


def test_the_exported_model_loads_for_summarizing(pairs_dir, tmp_path):
    inference = pytest.importorskip("denoisesum.summarizer")
    trainer(pairs_dir, tmp_path / "run", tiny_config(max_steps=2)).fit()
    model, vocab, settings = inference.load_model(tmp_path / "run")
    assert len(vocab) == model.config.vocab_size and settings.max_review_tokens == 150


def _weights(run_dir, step):
    weights, _, _ = read_model_dir(run_dir / "checkpoints" / f"step-{step:09d}")
    return weights


def test_resume_after_interrupt_equals_uninterrupted_run(pairs_dir, topics_dir, tmp_path):
    cfg = lambda: tiny_config(topics_dir, max_steps=24, eval_every=8)  # noqa: E731
    losses: dict[str, list] = {"full": [], "cut": []}
    trainer(
        pairs_dir, tmp_path / "full", cfg(), on_step=lambda s, x: losses["full"].append((s, x))
    ).fit()

    def ctrl_c_at_8(step, loss):
        losses["cut"].append((step, loss))
        if step == 8:  # an evaluation step
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # graceful: checkpoint written at step 8
        trainer(pairs_dir, tmp_path / "cut", cfg(), on_step=ctrl_c_at_8).fit()

    def crash_at_13(step, loss):
        losses["cut"].append((step, loss))
        if step == 13:
            raise RuntimeError("power cut")  # hard: nothing saved after step 10

    with pytest.raises(RuntimeError):
        trainer(pairs_dir, tmp_path / "cut", cfg(), resume=True, on_step=crash_at_13).fit()
    resumed = trainer(
        pairs_dir,
        tmp_path / "cut",
        cfg(),
        resume=True,
        on_step=lambda s, x: losses["cut"].append((s, x)),
    )
    assert resumed.state["step"] == 10
    resumed.fit()
    final = dict(losses["cut"])  # later (resumed) values overwrite the replayed steps
    assert [final[s] for s in range(1, 25)] == [x for _, x in losses["full"]]
    full, cut = _weights(tmp_path / "full", 24), _weights(tmp_path / "cut", 24)
    assert all(torch.equal(full[k], cut[k]) for k in full)
    best_full, _, _ = read_model_dir(tmp_path / "full")
    best_cut, _, _ = read_model_dir(tmp_path / "cut")
    assert all(torch.equal(best_full[k], best_cut[k]) for k in best_full)
    metrics = {
        name: [json.loads(x) for x in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
        for name in ("full", "cut")
    }
    steps = [m["step"] for m in metrics["cut"]]
    assert steps == sorted(steps)
    validations = {
        name: [(m["step"], m["val_loss"]) for m in found if "val_loss" in m]
        for name, found in metrics.items()
    }
    assert validations["cut"] == validations["full"] and len(validations["full"]) == 3


def test_ctrl_c_finishes_the_step_then_saves(pairs_dir, tmp_path):
    def ctrl_c_at_4(step, loss):
        if step == 4:  # a real SIGINT, as the terminal sends it
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when pytest runs as a background job
    run = trainer(pairs_dir, tmp_path / "run", tiny_config(), on_step=ctrl_c_at_4)
    with pytest.raises(KeyboardInterrupt):
        run.fit()
    assert run.state["step"] == 4
    assert (tmp_path / "run" / "checkpoints" / "LATEST").read_text().strip() == "step-000000004"
    assert signal.getsignal(signal.SIGINT) is before  # the caller's handler is restored


@pytest.mark.parametrize(
    "switch", ["segment_noise", "document_noise", "explicit_denoising", "copy", "discriminator"]
)
def test_each_ablation_switch_trains(pairs_dir, topics_dir, tmp_path, switch):
    cfg = tiny_config(topics_dir, max_steps=3, eval_every=3)
    setattr(cfg.model, switch, False)
    run = trainer(pairs_dir, tmp_path / "run", cfg)
    summary = run.fit()
    assert math.isfinite(summary["best_val_loss"])
    _, config, _ = read_model_dir(tmp_path / "run")
    assert config["model"][switch] is False
    names = {n for n, _ in run.model.named_parameters()}
    removed = {
        "segment_noise": "seg.",
        "document_noise": "doc.",
        "explicit_denoising": "seg.denoise",
        "copy": "doc.decoder.copy_gate",
        "discriminator": "discriminator",
    }[switch]
    assert not any(n.startswith(removed) for n in names)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU precision rules")
@pytest.mark.skipif(
    not bf16_supported(torch.device("cpu")),
    reason="this CPU has no bfloat16 instructions (AVX512-BF16 or AMX)",
)
def test_bf16_autocast_on_cpu_trains(pairs_dir, topics_dir, tmp_path):
    losses = []
    cfg = tiny_config(topics_dir, max_steps=40, eval_every=20, precision="bf16")
    run = trainer(pairs_dir, tmp_path / "run", cfg, on_step=lambda s, x: losses.append(x))
    assert run.amp == torch.bfloat16 and run.scaler is None
    run.fit()
    assert np.isfinite(losses).all() and np.mean(losses[-5:]) < np.mean(losses[:5]), losses


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU precision rules")
def test_bf16_on_a_cpu_without_it_trains_in_fp32(pairs_dir, topics_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "bf16_supported", lambda device: False)
    cfg = tiny_config(topics_dir, max_steps=4, eval_every=4, precision="bf16")
    with pytest.warns(
        precision.PrecisionWarning,
        match="train.precision='bf16': this CPU has no bfloat16 instructions",
    ):
        run = trainer(pairs_dir, tmp_path / "run", cfg)
    assert run.amp is None
    assert np.isfinite(run.fit()["train_seconds"])
    with pytest.raises(DenoiseSumError, match=r"fp16.*needs CUDA"):
        trainer(pairs_dir, tmp_path / "fp16", tiny_config(precision="fp16"))


def test_early_stopping_and_errors(pairs_dir, topics_dir, tmp_path):
    # lr 1e-30 (0 is refused): no weight moves, so the validation loss never improves after the
    # first evaluation
    cfg = tiny_config(topics_dir, lr=1e-30, max_steps=100, eval_every=1, patience=2)
    summary = trainer(pairs_dir, tmp_path / "stall", cfg).fit()
    assert summary["stopped_early"] and summary["steps"] == 3 and summary["best_step"] == 1
    no_topics = tiny_config()
    no_topics.model.discriminator = True
    with pytest.raises(DenoiseSumError, match="no topic model was given"):
        trainer(pairs_dir, tmp_path / "a", no_topics)
    with pytest.raises(DenoiseSumError, match=r"needs train\.dev_set"):
        trainer(pairs_dir, tmp_path / "b", tiny_config(select_on="dev-rouge"))
    no_refs = tmp_path / "no-refs.jsonl"
    no_refs.write_text(json.dumps({"entity_id": "x", "reviews": ["good food ."]}) + "\n")
    with pytest.raises(InputError, match="needs review sets with reference summaries"):
        trainer(
            pairs_dir, tmp_path / "b2", tiny_config(select_on="dev-rouge", dev_set=str(no_refs))
        )
    with pytest.raises(DenoiseSumError, match="no checkpoint"):
        trainer(pairs_dir, tmp_path / "c", tiny_config(), resume=True)
    with pytest.raises(InputError, match="no pair shards"):
        trainer(tmp_path, tmp_path / "d", tiny_config())


def test_malformed_pair_line_names_file_line_and_field(tmp_path):
    pairs = make_pairs(3, 3)
    directory = write_shards(tmp_path / "pairs", pairs)
    shard = directory / "shards" / "shard-00000.jsonl.gz"
    lines = gzip.decompress(shard.read_bytes()).decode().splitlines()
    broken = json.loads(lines[1])
    del broken["segment_noise"]
    shard.write_bytes(gzip.compress("\n".join([lines[0], json.dumps(broken), "{oops"]).encode()))
    with pytest.raises(InputError) as info:
        PairCorpus.build(directory, tmp_path / "cache", 150, progress=False)
    assert str(info.value) == f"{shard}, line 2, field 'segment_noise': missing field"
    shard.write_bytes(gzip.compress("\n".join([lines[0], "{oops"]).encode()))
    with pytest.raises(InputError, match=r"shard-00000\.jsonl\.gz, line 2: invalid JSON"):
        PairCorpus.build(directory, tmp_path / "cache", 150, progress=False)


# ---------------------------------------------------------------------------------------------
# topics


def test_lda_separates_two_topics_and_distributions_sum_to_one(tmp_path):
    rng = random.Random(0)
    food = ["pizza", "pasta", "cheese", "sauce", "oven", "crust", "garlic", "basil"]
    hotel = ["room", "bed", "hotel", "shower", "pool", "towel", "lobby", "pillow"]
    docs = [" ".join(rng.choices(words, k=15)) for words in (food, hotel) for _ in range(60)]
    model = train_lda(
        docs, LDAConfig(n_topics=2, passes=20, min_docs=1, max_doc_fraction=0.9, chunksize=50)
    )
    model.save(tmp_path / "lda")
    loaded = load_topics(tmp_path / "lda")
    p = topic_distributions(loaded, [*docs, "", "the and of"])
    assert p.shape == (122, 2) and np.allclose(p.sum(1), 1)
    food_topic = int(p[0].argmax())
    assert (p[:60, food_topic] > 0.9).all() and (p[60:120, 1 - food_topic] > 0.9).all()
    assert np.allclose(p[120], p[121])  # texts with no known word get the prior mean
    assert set(loaded.top_words(food_topic, 8)) == set(food)
    # a text's distribution does not depend on what else is inferred with it
    assert np.array_equal(topic_distributions(loaded, docs[5:6]), p[5:6])


def test_category_topics(tmp_path, topics_dir):
    model = load_topics(topics_dir)
    p = topic_distributions(model, ["a", "b"], ["biz-00", "biz-01"])
    assert p.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    with pytest.raises(DenoiseSumError, match="no category"):
        topic_distributions(model, ["a"], ["unknown"])
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"entity_id": e, "text": "fine", "category": c}) + "\n"
            for e, c in [("a", "bar"), ("a", "bar"), ("a", "pub"), ("b", "cafe")]
        )
    )
    result = CliRunner().invoke(
        app, ["topics", str(corpus), "-o", str(tmp_path / "human"), "--categories", "human"]
    )
    assert result.exit_code == 0, result.output
    human = load_topics(tmp_path / "human")
    assert human.labels == ["bar", "cafe", "pub"]
    assert np.allclose(
        topic_distributions(human, ["x", "y"], ["a", "b"]), [[2 / 3, 0, 1 / 3], [0, 1, 0]]
    )


def test_a_given_vocabulary_is_used(pairs_dir, tmp_path):
    from denoisesum.data.vocab import UNK_ID, Vocab

    vocab = Vocab.from_counts({"the": 5, "was": 4, "pizza": 3})
    run = trainer(pairs_dir, tmp_path / "run", tiny_config(max_steps=2), vocab=vocab)
    assert run.cfg.model.vocab_size == 7 and run.vocab is vocab
    batch = run.batch(run.train_pairs[:1])
    assert set(batch.summary.flatten().tolist()) <= {0, UNK_ID, 4, 5, 6}
    run.fit()
    _, _, saved = read_model_dir(tmp_path / "run")
    assert saved.tokens == vocab.tokens


# ---------------------------------------------------------------------------------------------
# command line


def test_cli_topics_and_train_end_to_end(pairs_dir, synthetic_corpus, tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "topics",
            str(synthetic_corpus),
            "-o",
            str(tmp_path / "topics"),
            "--topics",
            "3",
            "--min-docs",
            "1",
            "--sample",
            "200",
        ],
    )
    assert result.exit_code == 0, result.output
    assert load_topics(tmp_path / "topics").n_topics == 3
    result = runner.invoke(
        app,
        [
            "topics",
            str(pairs_dir),
            "-o",
            str(tmp_path / "pair-topics"),
            "--topics",
            "2",
            "--min-docs",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    tiny = [
        "--set",
        "model.embed_dim=16",
        "--set",
        "model.hidden_dim=16",
        "--set",
        "train.threads=1",
        "--set",
        "data.heldout_percent=20",
        "--set",
        "vocab.min_count=1",
    ]
    args = [
        "train",
        str(pairs_dir),
        "-o",
        str(tmp_path / "run"),
        "--config",
        str(CONFIG),
        "--topics",
        str(tmp_path / "pair-topics"),
        *tiny,
    ]
    result = runner.invoke(app, [*args, "--max-steps", "3"])
    assert result.exit_code == 0, result.output
    # not a terminal: plain progress lines (stage, count, rate), never silence or \r frames
    assert "train: 3/3 step" in result.output and "\r" not in result.output
    _, config, _ = read_model_dir(tmp_path / "run")
    assert config["model"]["n_topics"] == 2 and config["train"]["batch_size"] == 8
    result = runner.invoke(app, [*args, "--max-steps", "5", "--resume"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["steps"] == 5


def test_cli_errors_are_one_clear_line(tmp_path, synthetic_corpus):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "denoisesum.cli",
            "topics",
            str(synthetic_corpus),
            "-o",
            str(tmp_path / "t"),
            "--categories",
            "human",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "error: --categories human needs a category field" in result.stderr
    assert "Traceback" not in result.stderr


def test_select_on_dev_rouge_exports_the_best_decoded_model(pairs_dir, tmp_path):
    dev = tmp_path / "dev.jsonl"
    sets = [
        {
            "entity_id": p["entity_id"] + f"-{i}",
            "reviews": p["document_noise"],
            "summaries": [p["summary"]],
        }
        for i, p in enumerate(make_pairs(6, 3, seed=9))
    ]
    dev.write_text("".join(json.dumps(s) + "\n" for s in sets))
    cfg = tiny_config(select_on="dev-rouge", dev_set=str(dev), max_steps=30, eval_every=10)
    summary = trainer(pairs_dir, tmp_path / "run", cfg).fit()
    logged = [
        json.loads(x)
        for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
        if "dev_mean" in x
    ]
    assert [m["step"] for m in logged] == [10, 20, 30]
    best = max(logged, key=lambda m: m["dev_mean"])
    assert summary["best_step"] == best["step"]
    assert summary["best_dev_rouge"] == pytest.approx(best["dev_mean"])
    assert summary["best_val_loss"] is None and summary["select_on"] == "dev-rouge"
    assert all("val_loss" in m and 0 <= m["dev_rouge1"] <= 100 for m in logged)


def test_dev_rouge_decodes_with_the_run_settings_and_exports_them(pairs_dir, tmp_path):
    from denoisesum.inference.beam import SearchConfig
    from denoisesum.summarizer import Summarizer, SummarizerConfig

    dev = tmp_path / "dev.jsonl"
    sets = [
        {"entity_id": f"e{i}", "reviews": p["document_noise"], "summaries": [p["summary"]]}
        for i, p in enumerate(make_pairs(3, 3, seed=9))
    ]
    dev.write_text("".join(json.dumps(s) + "\n" for s in sets))
    cfg = tiny_config(select_on="dev-rouge", dev_set=str(dev), max_steps=2, eval_every=2)
    cfg.summarize = SummarizerConfig(
        shortlist=7, search=SearchConfig(min_words=4, max_words=6, no_repeat_ngram=2)
    )
    run = trainer(pairs_dir, tmp_path / "run", cfg)
    seen = []
    real = Summarizer.summarize_results

    def spy(self, review_sets, *args, **kwargs):
        seen.append(self.config)
        return real(self, review_sets, *args, **kwargs)

    with mock.patch.object(Summarizer, "summarize_results", spy):
        run.fit()
    assert seen and all(
        c.search.no_repeat_ngram == 2 and c.search.max_words == 6 and c.shortlist == 7 for c in seen
    )
    # max_review_tokens follows the data's cut, whatever [summarize] says
    assert seen[0].max_review_tokens == cfg.data.max_review_tokens
    loaded = Summarizer.from_pretrained(tmp_path / "run")
    assert loaded.config == seen[0]


def test_init_from_a_bilm_copies_matching_weights_by_word(pairs_dir, tmp_path):
    from denoisesum.data.vocab import Vocab
    from denoisesum.models.bilm import BiLM, BiLMConfig
    from denoisesum.models.store import save_model_dir

    lm_vocab = Vocab.from_counts({"pizza": 9, "the": 8, "zebra": 7})
    torch.manual_seed(3)
    lm = BiLM(
        BiLMConfig(
            vocab_size=len(lm_vocab),
            embed_dim=16,
            hidden_dim=8,
            proj_dim=8,
            cutoffs=[4],
            div_value=2.0,
        )
    )
    save_model_dir(tmp_path / "lm", lm, {"kind": "bilm", "model": vars(lm.config)}, lm_vocab)
    cfg = tiny_config(max_steps=1, init_lm=str(tmp_path / "lm"))
    run = trainer(pairs_dir, tmp_path / "run", cfg)
    report = run.init_report
    # hidden 16 = 2 x 8: both encoder directions match; the decoders (16 wide) do not
    assert report["copied"] == ["encoder forward LSTM", "encoder backward LSTM"]
    assert report["skipped"] == ["decoder seg LSTM", "decoder doc LSTM"]
    m = run.model
    assert torch.equal(m.enc_fwd.weight_hh_l0, lm.fwd.weight_hh_l0)
    assert torch.equal(m.enc_bwd.weight_ih_l0, lm.bwd.weight_ih_l0)
    for word in ("pizza", "the", "<unk>"):
        assert torch.equal(
            m.embed.weight[run.vocab.index[word]], lm.embed.weight[lm_vocab.index[word]]
        )
    # specials and pizza/the are shared; 'zebra' is not in the pairs' vocabulary
    assert report["embedding_rows"] == len([w for w in run.vocab.tokens if w in lm_vocab.index])
    assert json.loads((tmp_path / "run" / "lm-init.json").read_text())["copied"] == report["copied"]


def test_an_lm_of_the_summarizers_sizes_starts_every_lstm(pairs_dir, tmp_path):
    """encoder_dim = hidden_dim = the LM's hidden_dim: the encoder's two directions and both
    decoders start from the LM (the paper pretrains all of them)."""
    from denoisesum.data.vocab import Vocab
    from denoisesum.models.bilm import BiLM, BiLMConfig
    from denoisesum.models.store import save_model_dir

    lm_vocab = Vocab.from_counts({"pizza": 9, "the": 8})
    torch.manual_seed(4)
    lm = BiLM(
        BiLMConfig(
            vocab_size=len(lm_vocab),
            embed_dim=16,
            hidden_dim=16,
            proj_dim=8,
            cutoffs=[4],
            div_value=2.0,
        )
    )
    save_model_dir(tmp_path / "lm", lm, {"kind": "bilm", "model": vars(lm.config)}, lm_vocab)
    cfg = tiny_config(max_steps=1, init_lm=str(tmp_path / "lm"))
    cfg.model.encoder_dim = 16
    run = trainer(pairs_dir, tmp_path / "run", cfg)
    assert run.init_report["copied"] == [
        "encoder forward LSTM",
        "encoder backward LSTM",
        "decoder seg LSTM",
        "decoder doc LSTM",
    ]
    assert run.init_report["skipped"] == []
    assert torch.equal(run.model.doc.decoder.lstm.weight_hh_l0, lm.fwd.weight_hh_l0)
    assert torch.equal(run.model.enc_bwd.weight_hh_l0, lm.bwd.weight_hh_l0)


def test_second_phase_with_coverage_starts_from_the_first(pairs_dir, tmp_path):
    trainer(pairs_dir, tmp_path / "one", tiny_config(max_steps=4)).fit()
    weights, _, vocab = read_model_dir(tmp_path / "one")
    cfg = tiny_config(max_steps=4, init_model=str(tmp_path / "one"))
    cfg.model.coverage = True
    second = trainer(pairs_dir, tmp_path / "two", cfg)
    assert second.vocab.tokens == vocab.tokens
    state = second.model.state_dict()
    assert all(torch.equal(state[name], value) for name, value in weights.items())
    assert second.model.doc.decoder.coverage.item() == 0
    second.fit()
    assert second.model.doc.decoder.coverage.item() != 0
    logged = [
        json.loads(line) for line in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()
    ]
    assert any(record.get("coverage", 0) > 0 for record in logged)
    bad = tiny_config(init_model=str(tmp_path / "one"))
    bad.model.hidden_dim = 8
    with pytest.raises(DenoiseSumError, match="does not fit this model"):
        trainer(pairs_dir, tmp_path / "three", bad)
    both = tiny_config(init_model=str(tmp_path / "one"), init_lm=str(tmp_path / "one"))
    with pytest.raises(DenoiseSumError, match="exclude each other"):
        trainer(pairs_dir, tmp_path / "four", both)


def test_weight_averaging_exports_the_moving_average(pairs_dir, tmp_path):
    seen = []

    def keep_weights(step, loss):
        seen.append({k: v.detach().clone() for k, v in run.model.state_dict().items()})

    cfg = tiny_config(max_steps=6, eval_every=6, ema_decay=0.5)
    run = trainer(pairs_dir, tmp_path / "run", cfg, on_step=keep_weights)
    run.fit()
    expected = seen[0]  # the average starts at the weights after the first step
    for weights in seen[1:]:
        expected = {k: 0.5 * expected[k] + 0.5 * weights[k] for k in expected}
    exported, _, _ = read_model_dir(tmp_path / "run")
    assert all(torch.allclose(exported[k], expected[k], atol=1e-6) for k in expected)
    assert not all(torch.equal(exported[k], seen[-1][k]) for k in exported)  # not the last step

    with pytest.raises(DenoiseSumError, match="ema_decay"):
        trainer(pairs_dir, tmp_path / "bad", tiny_config(ema_decay=1.0))


def test_weight_averaging_resumes_exactly(pairs_dir, tmp_path):
    cfg = lambda: tiny_config(max_steps=12, eval_every=12, ema_decay=0.9)  # noqa: E731
    trainer(pairs_dir, tmp_path / "full", cfg()).fit()

    def ctrl_c_at_7(step, loss):
        if step == 7:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        trainer(pairs_dir, tmp_path / "cut", cfg(), on_step=ctrl_c_at_7).fit()
    trainer(pairs_dir, tmp_path / "cut", cfg(), resume=True).fit()
    full, _, _ = read_model_dir(tmp_path / "full")
    cut, _, _ = read_model_dir(tmp_path / "cut")
    assert all(torch.equal(full[k], cut[k]) for k in full)
