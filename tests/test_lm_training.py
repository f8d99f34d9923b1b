import json
import math
import os
import shutil

import pytest
import torch

from denoisesum.data.corpus import CorpusReader
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import DenoiseSumError
from denoisesum.models.bilm import BiLMConfig
from denoisesum.models.store import load_bilm
from denoisesum.training.lm import LMRunConfig, LMTrainConfig, LMTrainer, VocabConfig


def small_config(**train) -> LMRunConfig:
    defaults = dict(
        batch_tokens=256,
        max_len=20,
        lr=0.01,
        warmup_steps=5,
        max_steps=40,
        eval_every=20,
        save_every=10,
        heldout_percent=20.0,
        eval_reviews=50,
        threads=1,
    )
    defaults.update(train)
    return LMRunConfig(
        model=BiLMConfig(embed_dim=16, hidden_dim=24, proj_dim=16, cutoffs=[10], dropout=0.0),
        vocab=VocabConfig(max_size=200, min_count=1),
        train=LMTrainConfig(**defaults),
    )


@pytest.fixture
def encoded(synthetic_corpus, tmp_path):
    return EncodedCorpus.build(CorpusReader(synthetic_corpus), tmp_path / "enc", Tokenizer())


def test_encoded_corpus(encoded, synthetic_corpus, tmp_path):
    assert len(encoded) == 360 and len(encoded.entities) == 30
    vocab = encoded.build_vocab(max_size=None)
    first = vocab.decode(
        encoded.vocab_table(vocab)[encoded.ids[encoded.offsets[0] : encoded.offsets[1]]]
    )
    assert first == Tokenizer().tokenize(
        json.loads(synthetic_corpus.read_text().splitlines()[0])["text"]
    )
    assert encoded.counts[0] == max(encoded.counts)  # ids are frequency ranks
    # a second build of the same sources reuses the cache
    again = EncodedCorpus.build(CorpusReader(synthetic_corpus), tmp_path / "enc", Tokenizer())
    assert again.meta == encoded.meta


def test_the_cache_knows_its_corpus_by_content(encoded, synthetic_corpus, tmp_path, monkeypatch):
    import denoisesum.data.encoded as module

    copy = tmp_path / "moved" / synthetic_corpus.name
    copy.parent.mkdir()
    shutil.copy(synthetic_corpus, copy)
    os.utime(copy, (1, 1))  # another place, another time, the same bytes

    def no_tokenizing(*args):
        raise AssertionError("tokenized again")

    with monkeypatch.context() as patch:
        patch.setattr(module, "_encode_to", no_tokenizing)
        assert (
            EncodedCorpus.build(CorpusReader(copy), tmp_path / "enc", Tokenizer()).meta
            == encoded.meta
        )
        # a cache written before contents were recorded is reused while the files are unchanged
        meta = dict(encoded.meta)
        del meta["content"]
        (tmp_path / "enc" / "meta.json").write_text(json.dumps(meta))
        EncodedCorpus.build(CorpusReader(synthetic_corpus), tmp_path / "enc", Tokenizer())
        with pytest.raises(AssertionError, match="tokenized again"):  # ... but not once moved
            EncodedCorpus.build(CorpusReader(copy), tmp_path / "enc", Tokenizer())
    copy.write_text(copy.read_text().replace("pizza", "pasta"))
    changed = EncodedCorpus.build(CorpusReader(copy), tmp_path / "enc", Tokenizer())
    assert changed.meta["content"] != encoded.meta["content"] and "pasta" in changed.types


def test_an_unchanged_file_is_hashed_once_per_process(tmp_path, monkeypatch):
    import hashlib

    import denoisesum.data.encoded as module

    path = tmp_path / "part.jsonl"
    path.write_text("abc")
    reads = []
    real = hashlib.file_digest
    monkeypatch.setattr(
        module.hashlib, "file_digest", lambda handle, name: reads.append(name) or real(handle, name)
    )
    first = module.content_fingerprint([path])
    assert module.content_fingerprint([path]) == first and len(reads) == 1
    path.write_text("abd")  # the same size, new bytes, a later mtime: read again
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert module.content_fingerprint([path]) != first and len(reads) == 2


def test_parallel_tokenizing_gives_the_same_cache(encoded, synthetic_corpus, tmp_path):
    two = EncodedCorpus.build(
        CorpusReader(synthetic_corpus), tmp_path / "enc2", Tokenizer(), workers=2
    )
    assert two.types == encoded.types and (two.ids == encoded.ids).all()


def test_small_lm_learns_synthetic_corpus(encoded, tmp_path):
    trainer = LMTrainer(encoded, tmp_path / "lm", small_config(max_steps=150), progress=False)
    summary = trainer.fit()
    uniform = math.log(len(trainer.vocab))
    assert summary["heldout"]["nll"] < 0.35 * uniform, summary
    model, vocab = load_bilm(tmp_path / "lm")
    tokens = ["the", "pizza", "was", "delicious", "and", "the", "staff", "was", "friendly", "."]
    log_probs = model.log_probs(torch.tensor([vocab.encode(tokens)]), torch.tensor([len(tokens)]))
    best = vocab.tokens[int(log_probs[0, 3].argmax())]
    assert best in {"great", "delicious", "amazing", "fresh", "tasty"}
    metrics = [json.loads(x) for x in (tmp_path / "lm" / "metrics.jsonl").read_text().splitlines()]
    assert any("heldout_ppl" in m for m in metrics)


def _final_weights(run_dir):
    model, _ = load_bilm(run_dir / "checkpoints" / "step-000000040")
    return model.state_dict()


def test_resume_after_interrupt_equals_uninterrupted_run(encoded, tmp_path):
    losses: dict[str, list] = {"full": [], "cut": []}
    LMTrainer(
        encoded,
        tmp_path / "full",
        small_config(),
        progress=False,
        on_step=lambda s, x: losses["full"].append((s, x)),
    ).fit()

    def ctrl_c_at_13(step, loss):
        losses["cut"].append((step, loss))
        if step == 13:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # graceful: checkpoint written at step 13
        LMTrainer(
            encoded, tmp_path / "cut", small_config(), progress=False, on_step=ctrl_c_at_13
        ).fit()

    def crash_at_27(step, loss):
        losses["cut"].append((step, loss))
        if step == 27:
            raise RuntimeError("power cut")  # hard: nothing saved after step 20

    with pytest.raises(RuntimeError):
        LMTrainer(
            encoded,
            tmp_path / "cut",
            small_config(),
            resume=True,
            progress=False,
            on_step=crash_at_27,
        ).fit()
    resumed = LMTrainer(
        encoded,
        tmp_path / "cut",
        small_config(),
        resume=True,
        progress=False,
        on_step=lambda s, x: losses["cut"].append((s, x)),
    )
    assert resumed.state["step"] == 20
    resumed.fit()
    # every step's loss of the final timeline equals the uninterrupted run's
    final = dict(losses["cut"])  # later (resumed) values overwrite the replayed steps
    assert [final[s] for s in range(1, 41)] == [x for _, x in losses["full"]]
    full, cut = _final_weights(tmp_path / "full"), _final_weights(tmp_path / "cut")
    assert all(torch.equal(full[k], cut[k]) for k in full)
    steps = [
        json.loads(x)["step"] for x in (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()
    ]
    assert steps == sorted(steps)


def test_resume_without_checkpoint_is_an_error(encoded, tmp_path):
    with pytest.raises(DenoiseSumError, match="no checkpoint"):
        LMTrainer(encoded, tmp_path / "none", small_config(), resume=True)


def test_without_held_out_data_the_latest_model_is_kept(encoded, tmp_path):
    trainer = LMTrainer(
        encoded,
        tmp_path / "lm",
        small_config(heldout_percent=0.0, max_steps=30, eval_every=10),
        progress=False,
    )
    summary = trainer.fit()
    assert summary["heldout"]["tokens"] == 0
    kept, _ = load_bilm(tmp_path / "lm")
    assert all(torch.equal(kept.state_dict()[k], v) for k, v in trainer.model.state_dict().items())
