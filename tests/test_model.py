"""DenoiseSum summarizer: tiny models, plain-loop references for every formula that matters."""

import math
import random

import pytest
import torch

from denoisesum.data.batch import BOTH, DOCUMENT, SEGMENT, SummaryBatch, inference_batch, make_batch
from denoisesum.data.vocab import BOS_ID, EOS_ID, PAD_ID
from denoisesum.errors import ConfigError
from denoisesum.models.bilm import length_mask
from denoisesum.models.denoisesum import DenoiseSum, DenoiseSumConfig
from denoisesum.models.denoisesum_parts import (
    BranchState,
    copy_distribution,
    copy_mass_at,
    kl_divergence,
)

V, K = 30, 4


pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(seed: int = 0, **switches) -> DenoiseSum:
    torch.manual_seed(seed)
    config = DenoiseSumConfig(
        vocab_size=V, embed_dim=8, hidden_dim=12, dropout=0.0, n_topics=K, **switches
    )
    return DenoiseSum(config).eval()


def words(rng: random.Random, lo: int = 2, hi: int = 7) -> list[int]:
    return [rng.randrange(4, V) for _ in range(rng.randint(lo, hi))]


def reviews(rng: random.Random, n: int) -> list[list[int]]:
    return [words(rng) for _ in range(n)]


def topics(n: int, seed: int = 0) -> torch.Tensor:
    return torch.softmax(torch.randn(n, K, generator=torch.Generator().manual_seed(seed)), -1)


def random_batch(seed: int = 0, counts=((2, 2), (3, 1), (1, 3))) -> SummaryBatch:
    """One pair per (n segment, n document) in counts."""
    rng = random.Random(seed)
    seg = [reviews(rng, c) for c, _ in counts]
    doc = [reviews(rng, d) for _, d in counts]
    return make_batch(seg, doc, [words(rng, 1, 6) for _ in counts], topics(len(counts), seed))


def greedy(model: DenoiseSum, batch: SummaryBatch, max_len: int = 12) -> list[list[int]]:
    state = model.encode(batch)
    prev = torch.full((batch.n_pairs,), BOS_ID)
    out: list[list[int]] = [[] for _ in range(batch.n_pairs)]
    done = [False] * batch.n_pairs
    for _ in range(max_len):
        log_probs, state = model.decode_step(state, prev)
        prev = log_probs.argmax(-1)
        for b, tok in enumerate(prev.tolist()):
            done[b] = done[b] or tok == EOS_ID
            if not done[b]:
                out[b].append(tok)
    return out


def with_coverage(weight: float = 0.7) -> DenoiseSum:
    """A coverage model whose w_c is not 0, so coverage changes the attention."""
    model = tiny(coverage=True)
    with torch.no_grad():
        for branch in model.branches().values():
            branch.decoder.coverage.fill_(weight)
    return model


def teacher_forced_log_probs(model: DenoiseSum, batch: SummaryBatch) -> torch.Tensor:
    """[B, S, V] from decode_step fed the gold words: <s> w_1 .. w_L."""
    state = model.encode(batch)
    prev = torch.cat([torch.full((batch.n_pairs, 1), BOS_ID), batch.summary], 1)
    steps = []
    for t in range(batch.summary.shape[1] + 1):
        log_probs, state = model.decode_step(state, prev[:, t])
        steps.append(log_probs)
    return torch.stack(steps, 1)


# ---- 1. it learns ---------------------------------------------------------------------------


def test_tiny_model_overfits_and_greedy_decoding_reproduces_the_summaries():
    torch.manual_seed(0)
    model = DenoiseSum(
        DenoiseSumConfig(vocab_size=V, embed_dim=16, hidden_dim=32, dropout=0.0, n_topics=K)
    )
    rng = random.Random(1)
    summaries = [[5, 9, 13, 7, 21], [8, 14, 22, 6], [11, 17, 25, 29, 10, 12]]
    seg = [[words(rng) for _ in range(2)] for _ in summaries]
    doc = [[s[:3] + words(rng, 1, 3), words(rng)] for s in summaries]  # some copyable words
    batch = make_batch(seg, doc, summaries, topics(3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(250):
        opt.zero_grad()
        loss = model(batch)["loss"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 3.0)
        opt.step()
    model.eval()
    assert model(batch)["nll"].item() < 0.05
    assert greedy(model, batch) == summaries


def test_forward_nll_equals_step_by_step_decoding():
    """The training path (target-gathered) and decode_step (full mixture) agree."""
    model = tiny()
    batch = random_batch()
    out = model(batch)
    log_probs = teacher_forced_log_probs(model, batch)  # [B, S, V]
    target = torch.cat([batch.summary, torch.zeros(batch.n_pairs, 1, dtype=torch.long)], 1)
    target.scatter_(1, batch.summary_lengths.unsqueeze(1), EOS_ID)
    gathered = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    mask = out["token_nll"] != 0
    assert int(mask.sum()) == out["n_tokens"] == int((batch.summary_lengths + 1).sum())
    assert torch.allclose(out["token_nll"][mask], gathered[mask], atol=1e-5)
    assert math.isclose(out["nll"].item(), gathered[mask].mean().item(), rel_tol=1e-5)
    assert torch.allclose(out["loss"], out["nll"] + out["kl"])


def test_encoder_dim_decouples_the_encoder_from_the_decoder():
    """encoder_dim sets each encoder direction's size; a bridge maps s_0 to the decoder's size,
    and training and step-by-step decoding still agree."""
    model = tiny(encoder_dim=10)  # H = 20 encoder states, D = 12 decoder
    assert model.enc_fwd.hidden_size == 10 and model.seg.decoder.lstm.hidden_size == 12
    assert model.seg.bridge is not None and tiny().seg.bridge is None
    batch = random_batch()
    out = model(batch)
    h, d = model.encode_reviews(batch.reviews, batch.review_lengths)
    assert h.shape[-1] == d.shape[-1] == 20
    log_probs = teacher_forced_log_probs(model, batch)
    target = torch.cat([batch.summary, torch.zeros(batch.n_pairs, 1, dtype=torch.long)], 1)
    target.scatter_(1, batch.summary_lengths.unsqueeze(1), EOS_ID)
    gathered = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    mask = out["token_nll"] != 0
    assert torch.allclose(out["token_nll"][mask], gathered[mask], atol=1e-5)
    with pytest.raises(ConfigError, match="encoder_dim"):
        tiny(encoder_dim=-1)


# ---- 2. padding -----------------------------------------------------------------------------


def test_review_vectors_ignore_padding_in_both_directions():
    model = tiny()
    ids = torch.tensor([[5, 6, 7, 8]])
    h, d = model.encode_reviews(ids, torch.tensor([4]))
    junk = torch.tensor([[5, 6, 7, 8, 9, 10, 11], [12, 13, 14, 15, 16, 17, 18]])
    h2, d2 = model.encode_reviews(junk, torch.tensor([4, 7]))
    assert torch.allclose(d[0], d2[0], atol=1e-6)
    assert torch.allclose(h[0], h2[0, :4], atol=1e-6)
    # d_j = [forward state at the last word; backward state at the first word]
    half = model.config.hidden_dim // 2
    assert torch.allclose(d[0, :half], h[0, 3, :half])
    assert torch.allclose(d[0, half:], h[0, 0, half:])


def test_padding_and_batch_company_do_not_change_outputs():
    model = tiny()
    rng = random.Random(3)
    seg_a, doc_a, sum_a = reviews(rng, 2), reviews(rng, 1), [7, 8, 9]
    alone = make_batch([seg_a], [doc_a], [sum_a], topics(1))
    # the same pair with junk where the padding goes
    padded = make_batch([seg_a], [doc_a], [sum_a], topics(1))
    padded.reviews = torch.cat([padded.reviews, torch.randint(4, V, (3, 6))], 1)
    padded.summary = torch.cat([padded.summary, torch.randint(4, V, (1, 4))], 1)
    # ... and batched with a longer pair, with the review rows shuffled
    seg_b = [words(rng, 9, 12) for _ in range(4)]
    company = make_batch(
        [seg_a, seg_b],
        [doc_a, reviews(rng, 3)],
        [sum_a, words(rng, 8, 8)],
        torch.cat([topics(1), topics(1, seed=5)]),
    )
    perm = torch.randperm(len(company.reviews), generator=torch.Generator().manual_seed(0))
    for name in ("reviews", "review_lengths", "review_pair", "review_kind"):
        setattr(company, name, getattr(company, name)[perm])

    ref = model(alone)
    ref_steps = teacher_forced_log_probs(model, alone)[0]  # [4, V]
    for other in (padded, company):
        out = model(other)
        assert torch.allclose(out["token_nll"][0, :4], ref["token_nll"][0], atol=1e-5)
        steps = teacher_forced_log_probs(model, other)[0, :4]
        assert torch.allclose(steps, ref_steps, atol=1e-5)
    assert torch.allclose(model(padded)["loss"], ref["loss"], atol=1e-5)


# ---- 3. copy --------------------------------------------------------------------------------


def test_copy_distribution_adds_the_mass_of_repeated_source_words():
    attn = torch.softmax(torch.randn(2, 6), -1)
    src = torch.tensor([[7, 9, 7, 7, 12, PAD_ID], [5, 5, 6, 8, 8, 8]])
    got = copy_distribution(attn, src, V)
    ref = torch.zeros(2, V)
    for b in range(2):
        for k in range(6):
            ref[b, src[b, k]] += attn[b, k]
    assert torch.allclose(got, ref)
    assert torch.allclose(got[0, 7], attn[0, 0] + attn[0, 2] + attn[0, 3])
    target = torch.tensor([[7, 9, 13], [8, 5, 6]])
    at = copy_mass_at(attn.unsqueeze(1).expand(2, 3, 6), src, target)  # the training path
    assert torch.allclose(at, got.gather(1, target))


def copy_only(model: DenoiseSum) -> DenoiseSum:
    """The model with λ = σ(-30) and p_gen = σ(-30): every step's p is decoder d's copy
    distribution (to within 1e-12)."""
    with torch.no_grad():
        for layer in (model.gate, model.doc.decoder.copy_gate):
            layer.weight.zero_()
            layer.bias.fill_(-30.0)
    return model


def test_model_copy_mass_is_k_times_the_attention_weight():
    model = copy_only(tiny())
    with torch.no_grad():
        model.doc.decoder.attn.weight.zero_()  # equal scores: uniform attention over 5 tokens
    batch = make_batch([[[4, 5]]], [[[7, 9, 7, 7, 12]]])
    log_probs, _ = model.decode_step(model.encode(batch), torch.tensor([BOS_ID]))
    p = log_probs[0].exp()
    assert torch.allclose(p[7], torch.tensor(3 * 0.2), atol=1e-6)
    assert torch.allclose(p[9], torch.tensor(0.2), atol=1e-6)
    assert torch.allclose(p[12], torch.tensor(0.2), atol=1e-6)


def test_copy_only_reads_document_noise_tokens():
    model = copy_only(tiny())
    batch = make_batch([[[20, 21, 22]]], [[[7, 8]]])
    log_probs, _ = model.decode_step(model.encode(batch), torch.tensor([BOS_ID]))
    assert set(torch.nonzero(log_probs[0].exp() > 1e-6).flatten().tolist()) == {7, 8}


# ---- 4. the mixture -------------------------------------------------------------------------


@pytest.mark.parametrize("copy", [True, False])
def test_mixture_sums_to_one_at_every_step(copy):
    model = tiny(copy=copy)
    batch = random_batch(counts=((2, 2), (0, 3), (2, 0)))  # with empty branches
    state = model.encode(batch)
    prev = torch.full((3,), BOS_ID)
    for _ in range(5):
        with torch.no_grad():
            parts, _ = model._decode(state, prev.unsqueeze(1))  # this step's pieces
        p_c = torch.softmax(parts.seg.logits[:, 0], -1)  # [3, V]
        p_d = torch.softmax(parts.doc.logits[:, 0], -1)
        assert (parts.doc.p_gen is None) == (not copy)
        if copy:
            p_gen = parts.doc.p_gen[:, :1]  # [3, 1]
            p_copy = copy_distribution(parts.doc.attn[:, 0], state.doc.row_ids(), V)
            p_d = p_gen * p_d + (1 - p_gen) * p_copy
        log_probs, state = model.decode_step(state, prev)
        ones = torch.ones(3)
        assert torch.allclose(log_probs.exp().sum(-1), ones, atol=1e-5)
        assert torch.allclose(p_d[0].sum(), ones[0], atol=1e-5)
        lam = parts.lam[:, 0]
        assert 0 < lam[0] < 1 and lam[1] == 0 and lam[2] == 1  # empty branch: other one only
        manual = lam.unsqueeze(1) * p_c + (1 - lam.unsqueeze(1)) * p_d
        assert torch.allclose(log_probs.exp(), manual, atol=1e-7)
        prev = torch.randint(4, V, (3,))


@pytest.mark.parametrize("coverage", [False, True])
def test_decode_state_reorders_like_beams(coverage):
    model = with_coverage() if coverage else tiny()
    state = model.encode(random_batch())
    _, state = model.decode_step(state, torch.full((3,), BOS_ID))
    index = torch.tensor([2, 2, 0, 1, 0])
    prev = torch.tensor([5, 6, 7, 8, 9])
    log_probs, _ = model.decode_step(state.index_select(index), prev)  # [5, V]
    for i, src in enumerate(index.tolist()):
        alone, _ = model.decode_step(state, torch.full((3,), int(prev[i])))
        assert torch.allclose(log_probs[i], alone[src], atol=1e-6)


@pytest.mark.parametrize("coverage", [False, True])
def test_beams_share_their_pairs_source(coverage):
    """select_beams keeps one copy of each pair's source for its beams; its steps give what
    rows with their own copies (index_select) give, also after a pair leaves."""
    model = with_coverage() if coverage else tiny()
    state = model.encode(random_batch())
    rows = torch.arange(3).repeat_interleave(2)  # 2 beams per pair
    shared, copied = state.select_beams(rows, None, 2), state.index_select(rows)
    assert shared.doc.values.shape[0] == 3 and copied.doc.values.shape[0] == 6
    prev = torch.tensor([BOS_ID] * 6)
    # beams swap; pair 1 leaves; the second pair's first beam is taken twice
    moves = [([1, 0, 3, 2, 5, 4], None), ([1, 0, 4, 4], [0, 2]), ([1, 1, 2, 3], None)]
    for keep, pairs in moves:
        got, shared = model.decode_step(shared, prev)
        expected, copied = model.decode_step(copied, prev)
        assert torch.allclose(got, expected, atol=1e-6)
        keep = torch.tensor(keep)
        shared = shared.select_beams(keep, None if pairs is None else torch.tensor(pairs), 2)
        copied, prev = copied.index_select(keep), got.argmax(1)[keep]
    assert shared.doc.values.shape[0] == 2
    got, _ = model.decode_step(shared, prev)
    assert torch.allclose(got, model.decode_step(copied, prev)[0], atol=1e-6)


# ---- 5. ablations ---------------------------------------------------------------------------


ABLATIONS = {
    "segment_noise": ("seg.", "gate."),
    "document_noise": ("doc.", "gate."),
    "explicit_denoising": ("seg.denoise.", "doc.denoise."),
    "copy": ("doc.decoder.copy_gate.",),
    "discriminator": ("discriminator.",),
}


@pytest.mark.parametrize("switch", ABLATIONS)
def test_each_switch_removes_exactly_its_parameters(switch):
    full = {name for name, _ in tiny().named_parameters()}
    ablated_model = tiny(**{switch: False})
    ablated = {name for name, _ in ablated_model.named_parameters()}
    prefixes = ABLATIONS[switch]
    assert ablated <= full
    assert full - ablated == {n for n in full if n.startswith(prefixes)}
    assert all(any(n.startswith(p) for n in full) for p in prefixes)
    out = ablated_model(random_batch())
    assert math.isfinite(out["loss"].item())
    if switch == "discriminator":
        assert out["kl"].item() == 0


def test_at_least_one_noise_kind():
    with pytest.raises(ConfigError, match="segment_noise"):
        tiny(segment_noise=False, document_noise=False)


def test_ablated_branch_ignores_that_kind_of_review():
    model = tiny(segment_noise=False)
    rng = random.Random(4)
    doc, summary = [reviews(rng, 2)], [[5, 6, 7]]
    with_seg = make_batch([reviews(rng, 3)], doc, summary, topics(1))
    without = make_batch([[]], doc, summary, topics(1))
    assert torch.allclose(model(with_seg)["loss"], model(without)["loss"], atol=1e-6)


# ---- 6. explicit denoising and fusion ------------------------------------------------------


def test_denoising_mean_uses_each_pairs_own_count_of_each_kind():
    model = tiny()
    batch = random_batch(seed=2, counts=((1, 3), (2, 1), (3, 2), (0, 2)))
    perm = torch.randperm(len(batch.reviews), generator=torch.Generator().manual_seed(1))
    ids, lengths = batch.reviews[perm], batch.review_lengths[perm]
    pair, kind = batch.review_pair[perm], batch.review_kind[perm]
    _, d = model.encode_reviews(ids, lengths)
    fused = model.fuse_reviews(d, pair, kind, batch.n_pairs)
    for name, k in (("seg", SEGMENT), ("doc", DOCUMENT)):
        branch = getattr(model, name)
        for b in range(batch.n_pairs):
            rows = [r for r in range(len(pair)) if pair[r] == b and kind[r] == k]
            if not rows:
                assert not fused[name].mask[b].any() and not fused[name].s0[b].any()
                continue
            d_j = d[rows]  # [n, D], in row order
            q = sum(d[r] for r in rows) / len(rows)
            c = torch.tanh(branch.denoise(torch.cat([d_j, q.expand_as(d_j)], -1)))
            d_hat = d_j + c
            alpha = torch.softmax(branch.fuse(d_hat), dim=0)
            s0 = (alpha * d_hat).sum(0)
            assert fused[name].mask[b].sum() == len(rows)
            assert torch.allclose(fused[name].d_hat[b, : len(rows)], d_hat, atol=1e-6)
            assert torch.allclose(fused[name].s0[b], s0, atol=1e-6)


def test_without_explicit_denoising_the_vectors_are_unchanged():
    model = tiny(explicit_denoising=False)
    batch = random_batch()
    _, d = model.encode_reviews(batch.reviews, batch.review_lengths)
    fused = model.fuse_reviews(d, batch.review_pair, batch.review_kind, batch.n_pairs)
    sel = (batch.review_pair == 0) & (batch.review_kind == SEGMENT)
    assert torch.equal(fused["seg"].d_hat[0, :2], d[sel])


# ---- 7. inference and empty branches --------------------------------------------------------


def test_inference_gives_every_review_to_both_branches():
    model = tiny()
    rng = random.Random(5)
    sets = [reviews(rng, 3), reviews(rng, 1)]
    batch = inference_batch(sets)
    # each review once, read by both branches ...
    assert batch.review_kind.tolist() == [BOTH] * 4 and len(batch.reviews) == 4
    state = model.encode(batch)
    # ... which is exactly the same as listing it twice, once per noise kind
    twice = model.encode(make_batch(sets, sets))
    assert state.seg.present.all() and state.doc.present.all()
    prev = torch.full((2,), BOS_ID)
    for _ in range(4):
        log_probs, state = model.decode_step(state, prev)
        expected, twice = model.decode_step(twice, prev)
        assert torch.isfinite(log_probs).all()
        assert torch.allclose(log_probs, expected, atol=1e-6)
        prev = log_probs.argmax(-1)


def test_a_pair_with_no_review_of_one_kind_has_a_finite_loss_and_gradient():
    model = tiny().train()
    out = model(random_batch(counts=((0, 2), (3, 0))))
    assert math.isfinite(out["loss"].item())
    out["loss"].backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_a_pair_with_no_reviews_at_all_is_an_error():
    model = tiny(document_noise=False)
    with pytest.raises(ValueError, match=r"pairs \[1\]"):
        model(random_batch(counts=((1, 1), (0, 2))))


# ---- 8. discriminator -----------------------------------------------------------------------


def test_kl_is_zero_for_equal_distributions_and_finite_with_zeros():
    p = torch.tensor([[0.5, 0.25, 0.125, 0.125], [0.7, 0.0, 0.3, 0.0]])
    assert torch.allclose(kl_divergence(p[:1], p[:1].log()), torch.zeros(1), atol=1e-7)
    log_q = torch.log_softmax(torch.randn(2, K), -1)
    kl = kl_divergence(p, log_q)
    assert torch.isfinite(kl).all() and (kl >= 0).all()
    ref = sum(p[1, z] * (p[1, z].log() - log_q[1, z]) for z in (0, 2))
    assert torch.allclose(kl[1], ref)


def test_model_kl_vanishes_when_the_discriminator_predicts_p():
    model = tiny()
    p = torch.tensor([0.6, 0.3, 0.1, 0.0])
    with torch.no_grad():  # test hook: q(z) = softmax(bias) = p whatever the input
        model.discriminator[-1].weight.zero_()
        model.discriminator[-1].bias.copy_(torch.log(p.clamp_min(1e-30)))
    batch = random_batch()
    batch.topics = p.expand(batch.n_pairs, K).clone()
    assert abs(model(batch)["kl"].item()) < 1e-6
    batch.topics = torch.tensor([[0.0, 0.0, 1.0, 0.0]] * batch.n_pairs)
    kl = model(batch)["kl"]
    assert math.isfinite(kl.item()) and kl.item() == pytest.approx(-math.log(0.1), rel=1e-4)


def test_training_needs_topics_when_the_discriminator_is_on():
    batch = random_batch()
    batch.topics = None
    with pytest.raises(ValueError, match="topics"):
        tiny()(batch)
    assert math.isfinite(tiny(discriminator=False)(batch)["loss"].item())


# ---- 9. coverage (the second training phase) -----------------------------------------------


def test_coverage_forward_equals_step_by_step_decoding_and_its_loss():
    model = with_coverage()
    batch = random_batch()
    out = model(batch)
    log_probs = teacher_forced_log_probs(model, batch)  # [B, S, V]
    target = torch.cat([batch.summary, torch.zeros(batch.n_pairs, 1, dtype=torch.long)], 1)
    target.scatter_(1, batch.summary_lengths.unsqueeze(1), EOS_ID)
    mask = length_mask(batch.summary_lengths + 1, target.shape[1])
    gathered = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(out["token_nll"][mask], gathered[mask], atol=1e-5)
    # the coverage loss of the attention decode_step used: sum_t sum_k min(a_t, sum_{s<t} a_s)
    state = model.encode(batch)
    prev = torch.cat([torch.full((batch.n_pairs, 1), BOS_ID), batch.summary], 1)
    expected = torch.zeros(target.shape)
    past = {"c": 0.0, "d": 0.0}
    for t in range(target.shape[1]):
        with torch.no_grad():
            parts, state = model._decode(state, prev[:, t : t + 1])  # decode_step's attention
        for key, attn in (("c", parts.seg.attn[:, 0]), ("d", parts.doc.attn[:, 0])):
            expected[:, t] += torch.minimum(attn, torch.as_tensor(past[key])).sum(-1)
            past[key] = past[key] + attn
    assert out["coverage"].item() > 0
    assert math.isclose(
        out["coverage"].item(), (expected * mask).sum().item() / out["n_tokens"], rel_tol=1e-5
    )
    assert torch.allclose(out["loss"], out["nll"] + out["kl"] + out["coverage"])


def test_coverage_starts_from_the_model_without_it():
    plain, covered = tiny(), tiny(coverage=True)
    missing = covered.load_state_dict(plain.state_dict(), strict=False).missing_keys
    assert sorted(missing) == ["doc.decoder.coverage", "seg.decoder.coverage"]
    batch = random_batch()
    assert torch.allclose(plain(batch)["token_nll"], covered(batch)["token_nll"], atol=1e-6)
    assert plain(batch)["coverage"].item() == 0
    out = covered.train()(batch)
    out["loss"].backward()
    assert covered.doc.decoder.coverage.grad.abs().item() > 0


@pytest.mark.parametrize("copy", [True, False])
def test_the_decoder_is_the_papers_formula_over_its_precomputed_values(copy):
    """Decoder.forward mixes values mapped once per input (Decoder.source) instead of the token
    states: the same as the formula it stands for, scores s_t W_a h_k, ctx_t = Σ a_k h_k,
    tanh(combine([s_t; ctx_t])), p_gen = σ(copy_gate([s_t; ctx_t; e_t]))."""
    torch.set_default_dtype(torch.float64)
    try:
        decoder = tiny(copy=copy).doc.decoder
        a, beams, m, steps = 2, 3, 5, 4
        memory = torch.randn(a, m, decoder.attn.in_features)  # [A, M, H]
        mask = torch.ones(a, m, dtype=torch.bool)
        mask[1, 3:] = False
        h = torch.randn(a * beams, decoder.lstm.hidden_size)
        keys, values = decoder.source(memory)
        state = BranchState(
            h, torch.zeros_like(h), keys, values, mask, torch.zeros(a, m, dtype=torch.long),
            torch.ones(a * beams, dtype=torch.bool), beams=beams,
        )  # fmt: skip
        emb = torch.randn(a * beams, steps, decoder.lstm.input_size)
        out, _ = decoder(emb, state)
        states = out.states  # [B, S, D]
        rows = memory.repeat_interleave(beams, 0)  # [B, M, H]: each row its pair's tokens
        scores = states @ decoder.attn(rows).transpose(1, 2)  # [B, S, M]
        attn = torch.softmax(
            scores.masked_fill(~mask.repeat_interleave(beams, 0)[:, None], -1e30), -1
        )
        ctx = attn @ rows  # [B, S, H]
        hidden = torch.tanh(decoder.combine(torch.cat([states, ctx], -1)))
        assert torch.allclose(out.attn, attn, atol=1e-12)
        assert torch.allclose(out.logits, decoder.out(hidden), atol=1e-12)
        if copy:
            gate = decoder.copy_gate(torch.cat([states, ctx, emb], -1)).squeeze(-1)
            assert torch.allclose(out.p_gen, torch.sigmoid(gate), atol=1e-12)
        else:
            assert out.p_gen is None
    finally:
        torch.set_default_dtype(torch.float32)
