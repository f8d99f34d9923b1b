import dataclasses
import gzip
import hashlib
import json
import math
import random
from collections import Counter

import numpy as np
import pytest
import torch

from conftest import write_jsonl
from denoisesum.config import check
from denoisesum.data.corpus import CorpusReader
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import ConfigError, InputError
from denoisesum.models.bilm import BiLMConfig
from denoisesum.noising import pipeline
from denoisesum.noising.candidates import CandidateConfig, preset, rejection
from denoisesum.noising.chunks import ChunkInventory, chunk_noise, chunk_tags
from denoisesum.noising.config import SynthesisConfig
from denoisesum.noising.document_noise import idf_rouge1_f1, support
from denoisesum.noising.plan import count_matrix, eligible_candidates
from denoisesum.noising.token_noise import lm_nucleus_sample, nucleus_sample, token_noise
from denoisesum.training.lm import LMRunConfig, LMTrainConfig, LMTrainer, VocabConfig

SENTENCES = [
    "the {f} was {a} and the {s} was very friendly .",
    "we waited an hour for our {f} , but it was {a} .",
    "i would definitely come back for the {f} because it is {a} .",
    "the prices are fair and the {s} is quick .",
    "parking is easy and the place is clean .",
]
WORDS = {
    "f": ["pizza", "pasta", "soup", "tacos", "steak"],
    "a": ["great", "cold", "amazing", "bland", "fresh"],
    "s": ["staff", "server", "owner", "waiter"],
}


def noising_reviews(n_entities=8, per_entity=10, seed=0):
    rng = random.Random(seed)
    out = []
    for e in range(n_entities):
        for _ in range(per_entity):
            k = rng.randint(1, 5)
            text = " ".join(
                rng.choice(SENTENCES).format(**{x: rng.choice(v) for x, v in WORDS.items()})
                for _ in range(k)
            )
            if rng.random() < 0.1:
                text += " $ $ $ *"
            out.append({"entity_id": f"e{e}", "text": text})
    return out


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("noising")
    corpus_path = write_jsonl(root / "corpus.jsonl", noising_reviews())
    corpus = EncodedCorpus.build(CorpusReader(corpus_path), root / "enc", Tokenizer())
    cfg = LMRunConfig(
        model=BiLMConfig(embed_dim=16, hidden_dim=24, proj_dim=16, cutoffs=[10], dropout=0.0),
        vocab=VocabConfig(max_size=1000, min_count=1),
        train=LMTrainConfig(
            batch_tokens=512,
            max_len=40,
            lr=0.01,
            warmup_steps=5,
            max_steps=60,
            eval_every=60,
            save_every=60,
            heldout_percent=0.0,
            threads=1,
        ),
    )
    LMTrainer(corpus, root / "lm", cfg, progress=False).fit()
    return {"root": root, "corpus_path": corpus_path, "corpus": corpus, "lm": root / "lm"}


def synth_config(**kw):
    base = dict(
        pairs=24,
        candidates=CandidateConfig(20, 60, 2, True, False),
        n_mean=4,
        n_std=1.5,
        inventory_reviews=40,
        shard_size=5,
        seed=3,
    )
    base.update(kw)
    return SynthesisConfig(**base)


def synthesize(workspace, out, config=None, corpus=None, workers=0, **kwargs):
    """pipeline.synthesize of the workspace's corpus (or `corpus`) with its LM, quietly."""
    corpus = workspace["corpus"] if corpus is None else corpus
    config = synth_config() if config is None else config
    return pipeline.synthesize(
        corpus, out, workspace["lm"], config, workers=workers, progress=False, **kwargs
    )


def read_pairs(out):
    pairs = []
    for shard in sorted((out / "shards").glob("*.jsonl.gz")):
        pairs += [json.loads(x) for x in gzip.decompress(shard.read_bytes()).splitlines()]
    return pairs


# ----------------------------------------------------------------------------- candidates


def test_candidate_presets():
    yelp, rt = preset("yelp"), preset("rt")
    words = ["good"] * 60
    assert rejection(words, yelp) is None
    assert rejection(words[:49], yelp) == "length" and rejection(words * 2, yelp) == "length"
    assert rejection([*words[:57], "$", "*", "&"], yelp) == "symbols"
    assert rejection([*words[:57], "$", ".", ","], yelp) is None  # punctuation is no symbol
    assert rejection(["i", *words[:24]], rt) == "first person"
    assert rejection([*words[:10], ".", *words[:13]], rt) == "several sentences"
    assert rejection([*words[:24], "."], rt) is None


def test_vectorised_filter_matches_the_rule_per_review(workspace):
    corpus = workspace["corpus"]
    cfg = CandidateConfig(20, 60, 2, False, True)
    allowed = np.ones(len(corpus), bool)
    allowed[:5] = False
    eligible, report = eligible_candidates(corpus, cfg, allowed)
    expected = [
        i
        for i in range(5, len(corpus))
        if rejection(
            [corpus.types[t] for t in corpus.ids[corpus.offsets[i] : corpus.offsets[i + 1]]], cfg
        )
        is None
    ]
    assert eligible.tolist() == expected
    assert report["eligible"] == len(expected) and report["reviews"] == len(corpus) - 5


# ----------------------------------------------------------------------------- token noise


def reference_nucleus(probs_row: np.ndarray, top_p: float) -> dict[int, float]:
    """Brute force: renormalise without specials, keep words by rank until mass >= top_p."""
    p = probs_row.copy()
    p[:4] = 0
    p /= p.sum()
    kept, mass = {}, 0.0
    for word in sorted(range(len(p)), key=lambda w: -p[w]):
        if mass >= top_p:
            break
        kept[word] = p[word]
        mass += p[word]
    total = sum(kept.values())
    return {w: q / total for w, q in kept.items()}


def test_nucleus_samples_only_from_the_nucleus():
    torch.manual_seed(0)
    log_probs = torch.log_softmax(torch.randn(30, 40) * 3, dim=-1)
    samples = nucleus_sample(log_probs, 0.9, 400, torch.Generator().manual_seed(1))
    for j in range(30):
        nucleus = reference_nucleus(log_probs[j].exp().numpy().astype(np.float64), 0.9)
        drawn = Counter(samples[:, j].tolist())
        assert set(drawn) <= set(nucleus)
        top = max(nucleus, key=nucleus.get)
        assert abs(drawn[top] / 400 - nucleus[top]) < 0.1


def test_nucleus_with_a_large_vocabulary_uses_every_stage_exactly():
    """Peaked rows are served by top-k prefixes, flat ones by rejection; all match brute force."""
    torch.manual_seed(1)
    scale = torch.tensor([8.0, 6.0, 4.0, 2.0, 1.0, 0.5, 0.1]).repeat(3).unsqueeze(1)  # [21, 1]
    log_probs = torch.log_softmax(torch.randn(21, 5000) * scale, dim=-1)
    samples = nucleus_sample(log_probs, 0.9, 200, torch.Generator().manual_seed(2))
    widths = []
    for j in range(21):
        nucleus = reference_nucleus(log_probs[j].exp().double().numpy(), 0.9)
        widths.append(len(nucleus))
        assert set(samples[:, j].tolist()) <= set(nucleus)
    assert min(widths) <= 64 < max(widths) and max(widths) > 4096  # every stage was needed


def test_head_first_nucleus_equals_the_full_distribution_nucleus():
    """Sampling from the adaptive softmax head first never leaves the exact nucleus."""
    torch.manual_seed(3)
    head = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 3000, cutoffs=[100, 1000], div_value=2.0)
    contexts = torch.randn(40, 16) * torch.linspace(0.5, 12.0, 40).unsqueeze(1)  # flat..peaked
    samples = lm_nucleus_sample(head, contexts, 0.9, 300, torch.Generator().manual_seed(4))
    with torch.no_grad():
        full = head.log_prob(contexts).exp().double().numpy()
    in_head_only = with_tail = 0
    for j in range(40):
        nucleus = reference_nucleus(full[j], 0.9)
        drawn = Counter(samples[:, j].tolist())
        assert set(drawn) <= set(nucleus), j
        top = max(nucleus, key=nucleus.get)
        assert abs(drawn[top] / 300 - nucleus[top]) < 0.1
        in_head_only += max(nucleus) < 100
        with_tail += max(nucleus) >= 100
    assert in_head_only and with_tail  # both the head-only and the full path were needed


def test_head_first_nucleus_expands_only_the_clusters_that_can_enter():
    """Where the head words close the nucleus but a cluster's mass exceeds the cut, only the
    clusters above the cut are computed, and the samples stay inside the exact nucleus."""
    torch.manual_seed(5)
    head = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 3000, cutoffs=[100, 1000], div_value=2.0)
    contexts = torch.randn(300, 16) * torch.linspace(0.5, 12.0, 300).unsqueeze(1)
    computed = [0, 0]
    hooks = [
        tail.register_forward_hook(
            lambda m, inp, out, i=i: computed.__setitem__(i, computed[i] + len(inp[0]))
        )
        for i, tail in enumerate(head.tail)
    ]
    samples = lm_nucleus_sample(head, contexts, 0.9, 200, torch.Generator().manual_seed(6))
    for hook in hooks:
        hook.remove()
    with torch.no_grad():
        full = head.log_prob(contexts).exp().double().numpy()
    for j in range(len(contexts)):
        assert set(samples[:, j].tolist()) <= set(reference_nucleus(full[j], 0.9)), j
    # some rows needed a tail, and not every such row needed both clusters
    assert min(computed) > 0 and computed[0] != computed[1]
    assert max(computed) < len(contexts)


def test_replacement_rate_is_p_r_times_probability_of_a_different_word(workspace):
    from denoisesum.models.store import load_bilm

    model, vocab = load_bilm(workspace["lm"])
    text = " ".join(r["text"] for r in noising_reviews(2, 10, seed=5))
    ids = torch.tensor(vocab.encode(Tokenizer().tokenize(text)))
    log_probs = model.log_probs(ids[None], torch.tensor([len(ids)]))[0]
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        contexts = model.contexts(ids[None], torch.tensor([len(ids)]))[0]
    samples = lm_nucleus_sample(model.head, contexts, 0.9, 100, generator)
    copies = token_noise(ids, samples, 0.8, generator)
    measured = (copies != ids).float().mean().item()
    differ = np.mean(
        [
            1 - reference_nucleus(log_probs[j].exp().double().numpy(), 0.9).get(int(ids[j]), 0.0)
            for j in range(len(ids))
        ]
    )
    assert len(ids) > 300
    assert measured == pytest.approx(0.8 * differ, abs=0.015)


# ----------------------------------------------------------------------------- chunks


def test_chunk_grammar():
    tokens = "the very good pizza was great and we would definitely come back for it".split()
    tags = "DT RB JJ NN VBD JJ CC PRP MD RB VB RB IN PRP".split()
    chunks = [(label, " ".join(tokens[a:b])) for label, a, b in chunk_tags(tokens, tags)]
    assert chunks == [
        ("NP", "the very good pizza"),
        ("VP", "was"),
        ("ADJP", "great"),
        ("O", "and"),
        ("NP", "we"),
        ("VP", "would definitely come"),
        ("ADVP", "back"),
        ("PP", "for"),
        ("NP", "it"),
    ]


def test_chunk_removal_rate_and_provenance():
    tokens = [f"w{i}" for i in range(3000)]
    labels = ["NP", "VP", "PP"]
    parse = [(labels[i % 3], i, i + 1) for i in range(3000)]
    inventory = ChunkInventory(
        {"NP": [("inv-np",)], "VP": [("inv-vp",)], "PP": [("inv-pp",)], "ADJP": [("inv-adjp",)]},
        templates=[[label for label, _, _ in parse] + ["ADJP"]],
    )
    placed = chunk_noise(tokens, parse, inventory, 0.4, np.random.default_rng(0))
    template = inventory.templates[0]
    assert [c.label for c in placed] == template  # every slot filled with its template's label
    own = {(label, tuple(tokens[a:b])) for label, a, b in parse}
    for chunk in placed:
        if chunk.source == "candidate":
            assert (chunk.label, chunk.tokens) in own
        else:
            assert chunk.tokens in inventory.chunks[chunk.label]
    used = [c.tokens for c in placed if c.source == "candidate"]
    assert len(used) == len(set(used))  # without replacement
    assert 1 - len(used) / len(parse) == pytest.approx(0.4, abs=0.03)


def test_inventory_round_trip(tmp_path):
    inventory = ChunkInventory({"NP": [("the", "pizza")]}, [["NP", "VP"]])
    inventory.save(tmp_path / "c.json.gz")
    assert ChunkInventory.load(tmp_path / "c.json.gz") == inventory


# ----------------------------------------------------------------------------- pipeline


def reference_top_n(corpus, idf, candidate, entity, n):
    """Brute force IDF-weighted ROUGE-1 F1 over the entity's other reviews, with sets and sums."""
    cand = [int(t) for t in corpus.ids[corpus.offsets[candidate] : corpus.offsets[candidate + 1]]]
    cand_set, scored = set(cand), []
    for r in range(len(corpus)):
        if r == candidate or corpus.entity[r] != entity:
            continue
        words = [int(t) for t in corpus.ids[corpus.offsets[r] : corpus.offsets[r + 1]]]
        overlap = sum(float(idf[w]) for w in words if w in cand_set)
        p, rec = overlap / len(words), overlap / len(cand)
        f1 = 0.0 if overlap == 0 else 2 * p * rec / (p + rec)
        scored.append((-f1, r))
    return [r for _, r in sorted(scored)[:n]]


def test_pairs_and_document_noise(workspace, tmp_path):
    corpus = workspace["corpus"]
    out = tmp_path / "syn"
    manifest = synthesize(workspace, out, corpus=corpus)
    pairs = read_pairs(out)
    assert manifest["pairs"] == len(pairs) == 24
    assert [p["pair_id"] for p in pairs] == list(range(24))
    idf = np.load(out / "idf.npy")
    for pair in pairs:
        review = pair["candidate_review"]
        assert 20 <= len(pair["summary"].split()) <= 60
        assert len(pair["segment_noise"]) == pair["n"] >= 1
        entity = int(corpus.entity[review])
        assert pair["entity_id"] == corpus.entities[entity]
        expected = reference_top_n(corpus, idf, review, entity, pair["n"])
        texts = [
            " ".join(corpus.types[t] for t in corpus.ids[corpus.offsets[r] : corpus.offsets[r + 1]])
            for r in expected
        ]
        assert pair["document_noise"] == texts
        assert pair["document_noise_short"] == (len(texts) < pair["n"])
    assert sum(p["n"] for p in pairs) / 24 == pytest.approx(4, abs=1)


def test_random_document_noise_draws_other_reviews_of_the_entity(workspace, tmp_path):
    corpus = workspace["corpus"]
    with pytest.raises(
        ConfigError, match="'document_noise': must be one of similar, random, got 'nearest'"
    ):
        check(synth_config(document_noise="nearest"))
    similar, rand = tmp_path / "similar", tmp_path / "random"
    for out, kind in ((similar, "similar"), (rand, "random")):
        synthesize(workspace, out, synth_config(document_noise=kind), corpus=corpus)
    idf = np.load(rand / "idf.npy")
    differs = 0
    for s_pair, r_pair in zip(read_pairs(similar), read_pairs(rand), strict=True):
        # the same candidates and segment noise: only the document noise is drawn another way
        assert {k: v for k, v in s_pair.items() if not k.startswith("document_noise")} == {
            k: v for k, v in r_pair.items() if not k.startswith("document_noise")
        }
        review = r_pair["candidate_review"]
        entity = int(corpus.entity[review])
        siblings = [
            " ".join(corpus.types[t] for t in corpus.ids[corpus.offsets[r] : corpus.offsets[r + 1]])
            for r in np.flatnonzero(corpus.entity == entity)
            if r != review
        ]
        assert len(r_pair["document_noise"]) == min(r_pair["n"], len(siblings))
        assert len(set(r_pair["document_noise"])) == len(r_pair["document_noise"]) or len(
            set(siblings)
        ) < len(siblings)
        assert set(r_pair["document_noise"]) <= set(siblings)
        top = reference_top_n(corpus, idf, review, entity, r_pair["n"])
        differs += sorted(r_pair["document_noise"]) != sorted(
            " ".join(corpus.types[t] for t in corpus.ids[corpus.offsets[r] : corpus.offsets[r + 1]])
            for r in top
        )
    assert differs > 0  # not the most similar ones after all


def brute_support(corpus, idf, candidate, n):
    """Mean IDF-ROUGE-1 F1 of the candidate's n best other reviews of its entity, one by one."""
    entity = int(corpus.entity[candidate])
    best = reference_top_n(corpus, idf, candidate, entity, n)
    ids = [corpus.ids[corpus.offsets[r] : corpus.offsets[r + 1]] for r in [*best, candidate]]
    return np.mean([idf_rouge1_f1(x, ids[-1], idf) for x in ids[:-1]]) if best else 0.0


def test_central_pairs_keep_the_best_supported_candidates(workspace, tmp_path):
    corpus = workspace["corpus"]
    full = synth_config(pairs=10_000)  # every eligible candidate becomes a pair
    everyone = synthesize(workspace, tmp_path / "all", full, corpus=corpus)
    central = synthesize(
        workspace,
        tmp_path / "central",
        synth_config(pairs=10_000, central_fraction=0.3),
        corpus=corpus,
    )
    idf = np.load(tmp_path / "all" / "idf.npy")
    eligible = sorted(p["candidate_review"] for p in read_pairs(tmp_path / "all"))
    kept = {p["candidate_review"] for p in read_pairs(tmp_path / "central")}
    scores = {r: brute_support(corpus, idf, r, 4) for r in eligible}
    assert len(kept) == central["pairs"] == round(0.3 * everyone["pairs"])
    lowest = min(scores[r] for r in kept)
    assert all(scores[r] <= lowest + 1e-6 for r in set(eligible) - kept)
    assert central["candidate_filter"]["central_lowest_support"] == pytest.approx(lowest, abs=1e-4)


def test_support_matches_the_one_by_one_f1(workspace, tmp_path):
    corpus = workspace["corpus"]
    idf = np.random.default_rng(0).uniform(0.5, 3, len(corpus.types)).astype(np.float32)
    group = np.flatnonzero(corpus.entity == 2)
    rows = np.array([0, 3, 7])
    counts = count_matrix(corpus, group)
    got = support(counts, rows, corpus.lengths()[group], idf, 4)
    want = [brute_support(corpus, idf, int(group[r]), 4) for r in rows]
    assert got == pytest.approx(want, rel=1e-5)


def test_added_settings_are_checked_and_absent_from_old_fingerprints(workspace, tmp_path):
    with pytest.raises(ConfigError, match="'central_fraction': 0 must be in"):
        check(synth_config(central_fraction=0))  # its bounds (config.py), as build checks them
    excluded: list[str] = []
    default = pipeline._fingerprint(workspace["corpus"], workspace["lm"], synth_config(), excluded)
    explicit = pipeline._fingerprint(
        workspace["corpus"], workspace["lm"], synth_config(central_fraction=1.0), excluded
    )
    other = pipeline._fingerprint(
        workspace["corpus"], workspace["lm"], synth_config(central_fraction=0.5), excluded
    )
    assert default == explicit != other
    # the print of a directory written before the added settings: the same settings without them
    settings = {
        k: v
        for k, v in dataclasses.asdict(synth_config()).items()
        if k not in pipeline.ADDED_SETTINGS
    }
    digest = hashlib.sha256(
        json.dumps([workspace["corpus"].meta["sources"], settings, []], sort_keys=True).encode()
    )
    digest.update((workspace["lm"] / "model.safetensors").read_bytes())
    assert default == digest.hexdigest()


def test_exclusions(workspace, tmp_path):
    out = tmp_path / "syn"
    synthesize(workspace, out, synth_config(pairs=10), excluded=["e0", "e1"])
    assert not {p["entity_id"] for p in read_pairs(out)} & {"e0", "e1"}


def test_same_output_for_0_1_2_workers(workspace, tmp_path):
    hashes = []
    for workers in (0, 1, 2):
        manifest = synthesize(workspace, tmp_path / f"w{workers}", workers=workers)
        hashes.append([s["sha256"] for s in manifest["shards"]])
    assert hashes[0] == hashes[1] == hashes[2]


def test_resume_after_a_killed_run(workspace, tmp_path, monkeypatch):
    reference = synthesize(workspace, tmp_path / "ref")
    real_run_shard = pipeline.run_shard

    def dies_on_shard_3(shard, job):
        if shard == 3:
            raise KeyboardInterrupt
        return real_run_shard(shard, job)

    monkeypatch.setattr(pipeline, "run_shard", dies_on_shard_3)
    with pytest.raises(KeyboardInterrupt):
        synthesize(workspace, tmp_path / "cut")
    assert len(list((tmp_path / "cut" / "shards").glob("*.gz"))) == 3
    monkeypatch.setattr(pipeline, "run_shard", real_run_shard)
    resumed = synthesize(workspace, tmp_path / "cut")
    assert resumed["this_run"]["shards_computed"] == math.ceil(24 / 5) - 3
    assert [s["sha256"] for s in resumed["shards"]] == [s["sha256"] for s in reference["shards"]]


def test_changed_settings_in_the_same_directory_are_refused(workspace, tmp_path):
    synthesize(workspace, tmp_path / "s", synth_config(pairs=5))
    with pytest.raises(Exception, match="other inputs or settings"):
        synthesize(workspace, tmp_path / "s", synth_config(pairs=6))


def test_malformed_corpus_gets_a_clear_error(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"entity_id": "a", "text": "fine"}\n{"entity_id": "a"}\n')
    with pytest.raises(InputError, match=r"line 2, field 'text': missing field"):
        EncodedCorpus.build(CorpusReader(path), tmp_path / "enc", Tokenizer())


def test_synthesize_command(workspace, tmp_path):
    from typer.testing import CliRunner

    from denoisesum.cli import app

    dev = write_jsonl(
        tmp_path / "dev.jsonl",
        [
            {"entity_id": "d1", "reviews": ["a", "b", "c"]},
            {"entity_id": "d2", "reviews": ["a", "b", "c"]},
        ],
    )
    (tmp_path / "exclude.txt").write_text("# ids\ne0\n\ne1\n")
    args = [
        "synthesize",
        str(workspace["corpus_path"]),
        "--lm",
        str(workspace["lm"]),
        "-o",
        str(tmp_path / "out"),
        "--cache",
        str(workspace["root"] / "enc"),
        "--preset",
        "generic",
        "--pairs",
        "6",
        "--dev",
        str(dev),
        "--workers",
        "0",
        "--exclude-entities",
        str(tmp_path / "exclude.txt"),
        "--set",
        "shard_size=4",
        "--set",
        "inventory_reviews=20",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "6 pairs in" in result.output and "candidates:" in result.output
    pairs = read_pairs(tmp_path / "out")
    assert len(pairs) == 6 and all(p["n"] == 3 for p in pairs)  # N from the dev file: 3 +- 0
    assert not {p["entity_id"] for p in pairs} & {"e0", "e1"}
    result = CliRunner().invoke(app, [*args[:9], "nope", *args[10:]])
    assert result.exit_code != 0
    assert str(result.exception) == (
        "config key 'preset': must be one of yelp, rt, generic, got 'nope'"
    )


def test_workers_keep_freed_memory_on_glibc():
    import platform

    from denoisesum.noising.shard import keep_freed_memory

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt settings are glibc's")
    assert keep_freed_memory() is True
