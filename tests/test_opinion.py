"""Opinion conditioning (issue 31): ratings through the encoded corpus and the synthetic pairs,
rating-balanced candidate sampling, and the summarizer's opinion embedding."""

import dataclasses
import gzip
import json
import math
import random
from collections import Counter

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import write_jsonl
from denoisesum.config import build
from denoisesum.data.batch import inference_batch, make_batch, opinion_class
from denoisesum.data.corpus import CorpusReader
from denoisesum.data.encoded import FORMAT, EncodedCorpus
from denoisesum.data.synthetic import iter_pairs
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.data.vocab import BOS_ID, Vocab
from denoisesum.errors import ConfigError, InputError
from denoisesum.inference.beam import SearchConfig, beam_search
from denoisesum.inference.shortlist import ShortlistModel
from denoisesum.io import read_json
from denoisesum.models.store import load_denoisesum, read_model_dir, save_model_dir
from denoisesum.noising import pipeline
from denoisesum.noising.plan import make_plan, rating_balance_weights, star_classes
from denoisesum.training.denoiser_config import SummarizerRunConfig
from test_model import V, greedy, random_batch, reviews, tiny
from test_noising import noising_reviews, read_pairs, synth_config, workspace  # noqa: F401
from test_train_summarizer import make_pairs, tiny_config, trainer, write_shards


def rated_reviews():
    """The noising test corpus, each review with a rating: mostly 5 stars, as Yelp; every 7th
    review unrated."""
    rng = np.random.default_rng(0)
    out = []
    for i, record in enumerate(noising_reviews()):
        stars = rng.choice([1, 2, 3, 4, 5], p=[0.05, 0.05, 0.1, 0.2, 0.6])
        out.append({**record, "rating": None if i % 7 == 0 else float(stars)})
    return out


@pytest.fixture(scope="module")
def rated(tmp_path_factory):
    root = tmp_path_factory.mktemp("rated")
    records = rated_reviews()
    path = write_jsonl(root / "corpus.jsonl", records)
    return records, EncodedCorpus.build(CorpusReader(path), root / "enc", Tokenizer())


# ----------------------------------------------------------------------------- encoded cache


def test_encoded_cache_keeps_ratings_nan_when_missing(rated):
    records, corpus = rated
    assert corpus.ratings.dtype == np.float32 and len(corpus.ratings) == len(records)
    for record, stored in zip(records, corpus.ratings.tolist(), strict=True):
        if record["rating"] is None:
            assert math.isnan(stored)
        else:
            assert stored == record["rating"]


def test_a_cache_of_the_old_format_is_rebuilt(tmp_path):
    path = write_jsonl(tmp_path / "corpus.jsonl", rated_reviews()[:20])
    corpus = EncodedCorpus.build(CorpusReader(path), tmp_path / "enc", Tokenizer())
    meta = read_json(tmp_path / "enc" / "meta.json")
    assert meta["format"] == FORMAT
    # a cache written before ratings.npy: same sources, old format, no ratings file
    (tmp_path / "enc" / "ratings.npy").unlink()
    (tmp_path / "enc" / "meta.json").write_text(
        json.dumps({**meta, "format": "denoisesum-encoded/1"})
    )
    assert np.isnan(EncodedCorpus(tmp_path / "enc").ratings).all()  # readable, no ratings
    rebuilt = EncodedCorpus.build(CorpusReader(path), tmp_path / "enc", Tokenizer())
    assert (tmp_path / "enc" / "ratings.npy").exists()
    assert np.array_equal(rebuilt.ratings, corpus.ratings, equal_nan=True)


# ----------------------------------------------------------------------------- sampling


def test_star_classes_round_half_up_and_clamp():
    got = star_classes(np.array([np.nan, 0.2, 1.0, 2.5, 3.49, 4.5, 5.0, 9.0]))
    assert got.tolist() == [0, 1, 1, 3, 3, 5, 5, 5]


def test_balance_weights_are_inverse_class_frequency():
    ratings = np.array([5, 5, 5, 5, 1, 3, 3, np.nan], dtype=np.float32)
    w = rating_balance_weights(ratings)
    assert w[:4].tolist() == [0.25] * 4 and w[4] == 1.0 and w[5] == w[6] == 0.5
    assert w[7] == pytest.approx(np.mean(w[:7]))  # unrated: the mean of the rated
    assert (rating_balance_weights(np.full(3, np.nan)) == 1).all()


def test_balanced_plan_draws_star_classes_about_equally():
    rng = np.random.default_rng(1)
    # 10,000 candidates, 70% 5 stars, 4% 1 star
    stars = rng.choice([1, 2, 3, 4, 5], size=10_000, p=[0.04, 0.06, 0.08, 0.12, 0.7])
    eligible = np.arange(10_000, dtype=np.int64) * 3  # review indices, not 0..n-1
    ratings = np.zeros(30_000, dtype=np.float32)
    ratings[eligible] = stars
    uniform = make_plan(eligible, 1_000, 4, 1, seed=3)
    balanced = make_plan(
        eligible, 1_000, 4, 1, seed=3, weights=rating_balance_weights(ratings[eligible])
    )
    assert len(set(balanced.candidates.tolist())) == 1_000  # distinct, from the eligible
    assert set(balanced.candidates.tolist()) <= set(eligible.tolist())
    share = Counter(star_classes(ratings[balanced.candidates]).tolist())
    assert all(150 <= share[k] <= 250 for k in range(1, 6)), share
    assert Counter(star_classes(ratings[uniform.candidates]).tolist())[5] > 600
    # without weights, the plan is the one made before weights existed
    old = np.random.default_rng([3, 0]).choice(eligible, size=1_000, replace=False)
    assert np.array_equal(uniform.candidates, old)


# ----------------------------------------------------------------------------- pair records


def test_pairs_record_their_summary_review_rating(workspace, rated, tmp_path):  # noqa: F811
    records, corpus = rated
    out = tmp_path / "syn"
    manifest = pipeline.synthesize(
        corpus, out, workspace["lm"], synth_config(balance_ratings=True), workers=0, progress=False
    )
    pairs = read_pairs(out)
    assert manifest["pairs"] == len(pairs) == 24
    for pair in pairs:
        assert pair["rating"] == records[pair["candidate_review"]]["rating"]
    assert sum(manifest["candidate_filter"]["chosen_by_stars"].values()) == 24
    parsed = list(iter_pairs(sorted((out / "shards").glob("*.jsonl.gz"))))
    assert [p.rating for p in parsed] == [p["rating"] for p in pairs]
    # the setting is part of the noising fingerprint, absent at its default (old directories)
    with pytest.raises(Exception, match="other inputs or settings"):
        pipeline.synthesize(corpus, out, workspace["lm"], synth_config(), workers=0, progress=False)


@pytest.mark.parametrize("bad", [True, "5", 11.0, -1, float("nan")])
def test_a_bad_rating_in_a_pair_is_an_input_error(tmp_path, bad):
    record = {
        "pair_id": 0,
        "entity_id": "e",
        "summary": "good food .",
        "segment_noise": ["bad food ."],
        "document_noise": ["the food ."],
        "rating": bad,
    }
    path = tmp_path / "shard-00000.jsonl.gz"
    # json.dumps writes NaN, which Python's reader reads back: it must still be refused
    path.write_bytes(gzip.compress((json.dumps(record) + "\n").encode()))
    with pytest.raises(InputError, match="rating") as info:
        list(iter_pairs([path]))
    assert "line 1" in str(info.value) and "shard-00000" in str(info.value)


def test_a_pair_without_a_rating_has_none(tmp_path):
    record = {
        "pair_id": 0,
        "entity_id": "e",
        "summary": "good food .",
        "segment_noise": ["bad food ."],
        "document_noise": ["the food ."],
    }
    path = tmp_path / "shard-00000.jsonl.gz"
    path.write_bytes(gzip.compress((json.dumps(record) + "\n").encode()))
    assert next(iter_pairs([path])).rating is None


# ----------------------------------------------------------------------------- the model


def opinion_batch(ratings=None):
    batch = random_batch()
    if ratings is not None:
        batch.ratings = torch.tensor(ratings)
    return batch


def test_opinion_classes_of_ratings():
    assert [opinion_class(r) for r in (None, math.nan, 0.3, 1, 2.5, 3.4, 4.5, 5, 7)] == [
        0,
        0,
        1,
        1,
        3,
        3,
        5,
        5,
        5,
    ]
    batch = make_batch([[[5]], [[6]]], [[[7]], [[8]]], ratings=[None, 4.6])
    assert batch.ratings.tolist() == [0, 5]
    with pytest.raises(ValueError, match="one value per pair"):
        make_batch([[[5]]], [[[7]]], ratings=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"0\.\.5"):
        inference_batch([[[5]]], ratings=torch.tensor([6]))
    assert inference_batch([[[5]], [[6]]], ratings=[2.0, None]).ratings.tolist() == [2, 0]


def test_opinion_model_with_a_zero_table_is_the_model_without_it():
    plain, opinion = tiny(), tiny(opinion=True)
    # the table is created last and from zeros: every other weight is the same draw
    plain_state = plain.state_dict()
    state = opinion.state_dict()
    assert set(state) - set(plain_state) == {"opinion.weight"}
    assert all(torch.equal(state[k], v) for k, v in plain_state.items())
    assert not state["opinion.weight"].any()
    for ratings in (None, [1, 5, 0]):
        batch = opinion_batch(ratings)
        assert torch.equal(plain(batch)["token_nll"], opinion(batch)["token_nll"])
        assert greedy(plain, batch) == greedy(opinion, batch)
    # training mode: the same dropout masks, so the same loss bit for bit
    plain.train(), opinion.train()
    torch.manual_seed(5)
    a = plain(opinion_batch([2, 3, 4]))["loss"]
    torch.manual_seed(5)
    b = opinion(opinion_batch([2, 3, 4]))["loss"]
    assert torch.equal(a, b)


def test_a_model_without_opinion_ignores_ratings():
    model = tiny()
    assert model.opinion is None
    assert model.encode(opinion_batch([1, 2, 3])).opinion is None
    assert torch.equal(
        model(opinion_batch([1, 2, 3]))["token_nll"], model(opinion_batch())["token_nll"]
    )


def test_the_rating_changes_the_output_distribution():
    model = tiny(opinion=True)
    with torch.no_grad():
        model.opinion.weight.normal_(generator=torch.Generator().manual_seed(0))
    low, high, unknown = (model(opinion_batch([r] * 3))["token_nll"] for r in (1, 5, 0))
    assert not torch.allclose(low, high)
    # row 0 and a batch without ratings are the same thing
    assert torch.equal(unknown, model(opinion_batch())["token_nll"])
    # decode_step sees it too, at every step, in both decoders and the gate
    state_low = model.encode(opinion_batch([1] * 3))
    state_high = model.encode(opinion_batch([5] * 3))
    assert state_low.opinion.shape == (3, model.config.embed_dim)
    prev = torch.full((3,), BOS_ID)
    with torch.no_grad():
        low, _ = model._decode(state_low, prev.unsqueeze(1))  # decode_step's pieces
        high, _ = model._decode(state_high, prev.unsqueeze(1))
    for name, get in (
        ("decoder c", lambda parts: parts.seg.logits),
        ("decoder d", lambda parts: parts.doc.logits),
        ("gate", lambda parts: parts.lam),
        ("copy", lambda parts: parts.doc.p_gen),
    ):
        assert not torch.allclose(get(low), get(high)), name
    assert not torch.allclose(
        model.decode_step(state_low, prev)[0], model.decode_step(state_high, prev)[0]
    )
    # the gradient reaches only the rows of the ratings in the batch
    model.train()
    model(opinion_batch([1, 1, 4]))["loss"].backward()
    touched = model.opinion.weight.grad.abs().sum(1) > 0
    assert touched.tolist() == [False, True, False, False, True, False]


def test_decode_state_keeps_each_rows_opinion_when_beams_move():
    model = tiny(opinion=True)
    with torch.no_grad():
        model.opinion.weight.normal_(generator=torch.Generator().manual_seed(1))
    state = model.encode(opinion_batch([1, 3, 5]))
    _, state = model.decode_step(state, torch.full((3,), BOS_ID))
    index = torch.tensor([2, 2, 0, 1, 0])
    moved = state.index_select(index)
    assert torch.equal(moved.opinion, state.opinion[index])
    prev = torch.tensor([5, 6, 7, 8, 9])
    log_probs, _ = model.decode_step(moved, prev)
    for i, src in enumerate(index.tolist()):
        alone, _ = model.decode_step(state, torch.full((3,), int(prev[i])))
        assert torch.allclose(log_probs[i], alone[src], atol=1e-6)


def test_beam_search_follows_each_entitys_rating():
    """Beam search with ratings in the batch: each entity decodes as it does alone with its
    rating (the opinion vector moves with the beams), over the whole vocabulary and over a
    shortlist."""
    model = tiny(opinion=True)
    with torch.no_grad():
        model.opinion.weight.normal_(std=10.0, generator=torch.Generator().manual_seed(2))
    rng = random.Random(3)
    sets = [reviews(rng, 3), reviews(rng, 2)]
    config = SearchConfig(
        beam=3,
        min_words=2,
        max_words=8,
        no_repeat_ngram=0,
        no_repeat_in_sentence=False,
        restate_overlap=0.0,
        max_word_repeats=0,
    )
    rows = torch.arange(V)
    for decoder in (model, ShortlistModel(model, rows)):
        together = beam_search(decoder, inference_batch(sets, ratings=[1.0, 5.0]), config)
        alone = [
            beam_search(decoder, inference_batch([s], ratings=[r]), config)[0]
            for s, r in zip(sets, (1.0, 5.0), strict=True)
        ]
        assert [[h.tokens for h in e] for e in together] == [[h.tokens for h in e] for e in alone]
    outputs = {
        r: beam_search(model, inference_batch(sets[:1], ratings=[r]), config)[0][0].tokens
        for r in (1.0, 2.0, 3.0, 4.0, 5.0)
    }
    assert len(set(map(tuple, outputs.values()))) > 1  # the rating changes what is written


# ----------------------------------------------------------------------------- loading


def test_a_checkpoint_without_the_opinion_table_loads_into_an_opinion_model(tmp_path):
    plain = tiny()
    vocab = Vocab.from_counts({f"w{i}": V - i for i in range(V - 4)})
    assert len(vocab) == V
    config = {"kind": "denoisesum", "model": dataclasses.asdict(plain.config)}
    save_model_dir(tmp_path / "plain", plain, config, vocab)
    # config.json says opinion, the weights have no table: the table is zero
    config["model"]["opinion"] = True
    (tmp_path / "plain" / "config.json").write_text(json.dumps(config))
    loaded, _, _ = load_denoisesum(tmp_path / "plain")
    assert loaded.opinion is not None and not loaded.opinion.weight.any()
    batch = opinion_batch([1, 2, 5])
    assert torch.equal(loaded(batch)["token_nll"], plain(batch)["token_nll"])
    # any other missing weight is still refused
    weights = load_file(str(tmp_path / "plain" / "model.safetensors"))
    del weights["gate.bias"]
    save_file(weights, str(tmp_path / "plain" / "model.safetensors"))
    with pytest.raises(InputError, match="weights do not fit"):
        load_denoisesum(tmp_path / "plain")


# ----------------------------------------------------------------------------- training


def rated_pairs_dir(directory):
    """The trainer tests' pairs, each with its polarity as a rating (good places 5, bad 1),
    every 5th unrated."""
    pairs = make_pairs()
    for pair in pairs:
        good = int(pair["entity_id"][-2:]) % 2 == 0
        pair["rating"] = None if pair["pair_id"] % 5 == 0 else (5.0 if good else 1.0)
    return write_shards(directory, pairs), pairs


def test_training_feeds_ratings_hides_some_and_starts_from_a_model_without_opinion(tmp_path):
    pairs_dir, pairs = rated_pairs_dir(tmp_path / "pairs")
    trainer(pairs_dir, tmp_path / "plain", tiny_config(max_steps=3)).fit()
    cfg = tiny_config(max_steps=6, init_model=str(tmp_path / "plain"), opinion_dropout=0.5)
    cfg.model.opinion = True
    run = trainer(pairs_dir, tmp_path / "opinion", cfg)
    weights, _, _ = read_model_dir(tmp_path / "plain")
    state = run.model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in weights.items())
    assert not state["opinion.weight"].any()
    # the batch carries each pair's opinion class; unrated pairs are unknown (0)
    batch = run.batch(run.train_pairs[:8])
    expected = [
        opinion_class(pairs[int(run.corpus.pair_id[p])]["rating"]) for p in run.train_pairs[:8]
    ]
    assert batch.ratings.tolist() == expected
    # opinion dropout: about half hidden, the same pairs for the same step
    chosen = run.train_pairs[:40]
    hidden = run._hidden_opinions(chosen, chosen)
    assert 8 <= hidden.sum() <= 32
    assert np.array_equal(hidden, run._hidden_opinions(chosen, chosen))
    assert np.array_equal(run._hidden_opinions(chosen, chosen[5:9]), hidden[5:9])
    hidden_batch = run.batch(chosen[:8], hidden[:8])
    assert hidden_batch.ratings.tolist() == [
        0 if h else r
        for h, r in zip(hidden[:8], run.batch(chosen[:8]).ratings.tolist(), strict=True)
    ]
    run.fit()
    loaded, _, config = load_denoisesum(tmp_path / "opinion")
    assert config["model"]["opinion"] is True and config["train"]["opinion_dropout"] == 0.5
    assert loaded.opinion.weight[[1, 5]].abs().sum() > 0  # learned
    assert not loaded.opinion.weight[[2, 3, 4]].any()  # never seen: no gradient, Adam keeps 0


def test_a_model_without_opinion_trains_as_before_on_rated_pairs(tmp_path):
    """Ratings in the pairs change nothing for a model without opinion."""
    rated_dir, pairs = rated_pairs_dir(tmp_path / "rated")
    for pair in pairs:
        del pair["rating"]
    plain_dir = write_shards(tmp_path / "plain-pairs", pairs)
    for name, directory in (("a", rated_dir), ("b", plain_dir)):
        trainer(directory, tmp_path / name, tiny_config(max_steps=4)).fit()
    a, b = (read_model_dir(tmp_path / n)[0] for n in "ab")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_opinion_dropout_is_checked(value):
    with pytest.raises(ConfigError, match=r"train\.opinion_dropout"):
        build(SummarizerRunConfig, {"train": {"opinion_dropout": value}})


def test_the_opinion_table_can_learn_at_its_own_rate(tmp_path):
    pairs_dir, _ = rated_pairs_dir(tmp_path / "pairs")
    cfg = tiny_config(max_steps=3, opinion_lr=0.05, lr=0.001)
    cfg.model.opinion = True
    run = trainer(pairs_dir, tmp_path / "run", cfg)
    groups = run.optimizer.param_groups
    assert [g["lr"] for g in groups] == [0.001, 0.05]
    assert groups[1]["params"] == [run.model.opinion.weight]
    assert sum(len(g["params"]) for g in groups) == len(list(run.model.parameters()))
    run.fit()
    # Adam moves each element by about its lr per step: the table moved ~50x the rest
    assert run.model.opinion.weight.abs().max() > 0.05
    # without it, one group at train.lr
    cfg = tiny_config(max_steps=1)
    cfg.model.opinion = True
    assert len(trainer(pairs_dir, tmp_path / "two", cfg).optimizer.param_groups) == 1
