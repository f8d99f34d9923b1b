"""Beam search on hand-built Markov "models" (exact expectations) and on a tiny DenoiseSum."""

import contextlib
import itertools
import math
import random
from dataclasses import dataclass, replace
from types import SimpleNamespace

import pytest
import torch

from denoisesum.data.batch import inference_batch
from denoisesum.data.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID
from denoisesum.errors import ConfigError
from denoisesum.evaluation.style import restated_sentences
from denoisesum.inference.beam import SearchConfig, beam_search, stepped_by
from denoisesum.inference.constraints import (
    Said,
    SaidRules,
    WordLists,
    WordMasks,
    constraint_mask,
)
from denoisesum.inference.policy import SummaryPolicy, banned_words
from denoisesum.models.denoisesum import DenoiseSum, DenoiseSumConfig

A, B, C, D, E = range(4, 9)  # word ids after the 4 specials
V = 9


pytestmark = pytest.mark.usefixtures("one_thread")


@dataclass
class MarkovState:
    entity: torch.Tensor  # [B*] which table each row uses

    def index_select(self, index: torch.Tensor) -> "MarkovState":
        return MarkovState(self.entity.index_select(0, index))

    def with_copy_ids(self, positions: torch.Tensor) -> "MarkovState":
        return self  # nothing copied


class Markov:
    """log p(w_t | w_{t-1}) from a fixed transition table per entity: tables [B, V, V]."""

    def __init__(self, tables: torch.Tensor) -> None:
        self.log_tables = torch.log(tables / tables.sum(-1, keepdim=True))
        self.steps = 0

    def encode(self, batch) -> MarkovState:
        return MarkovState(torch.arange(batch.n_pairs))

    def decode_step(self, state: MarkovState, prev: torch.Tensor, words=None):
        self.steps += 1
        return self.log_tables[state.entity, prev], state


def banning(always: torch.Tensor) -> WordMasks:
    """Word masks that ban exactly `always` [V] and list no content words."""
    none = torch.zeros(V, dtype=torch.bool)
    return WordMasks(always, none, none)


def fake_batch(n: int = 1):
    return SimpleNamespace(n_pairs=n, reviews=torch.zeros(n, 1, dtype=torch.long))


def table(rows: dict[int, dict[int, float]], floor: float = 1e-6) -> torch.Tensor:
    """[V, V] transition probabilities: `rows[prev][next]`, everything else `floor` (</s>:
    far below it, so that no stray hypothesis ends and fills the beam's finished list)."""
    t = torch.full((V, V), floor)
    t[:, EOS_ID] = 1e-12
    for prev, nexts in rows.items():
        for nxt, p in nexts.items():
            t[prev, nxt] = p
    return t


def decode(tables, **config) -> list[list[int]]:
    tables = torch.stack(tables) if isinstance(tables, list) else tables.unsqueeze(0)
    cfg = SearchConfig(**{"min_words": 0, **config})
    hyps = beam_search(Markov(tables), fake_batch(len(tables)), cfg)
    return [h[0].tokens for h in hyps]


def repeats_ngram(words: list[int], n: int) -> bool:
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return len(grams) != len(set(grams))


# ---- search -----------------------------------------------------------------------------


def test_beam_finds_the_sequence_greedy_misses():
    # greedy takes A (0.55) then the best of a flat row (0.34): 0.187;
    # B (0.45) then C (0.9) is 0.405
    t = table(
        {
            BOS_ID: {A: 0.55, B: 0.45},
            A: {C: 0.34, D: 0.33, E: 0.33},
            B: {C: 0.9, D: 0.1},
            C: {EOS_ID: 1.0},
            D: {EOS_ID: 1.0},
            E: {EOS_ID: 1.0},
        }
    )
    assert decode(t, beam=1) == [[A, C]]
    assert decode(t, beam=2) == [[B, C]]
    assert decode(t) == [[B, C]]  # the default beam of 5


def exhaustive(log_table: torch.Tensor, cfg: SearchConfig) -> tuple[list[int], float]:
    """Best hypothesis by enumerating every allowed sequence up to max_words words."""
    words = range(len(SPECIALS), log_table.shape[0])
    best, best_score = None, -math.inf
    for length in range(cfg.min_words, cfg.max_words + 1):
        for seq in itertools.product(words, repeat=length):
            if any(a == b for a, b in itertools.pairwise(seq)) or repeats_ngram(list(seq), 3):
                continue
            path = [BOS_ID, *seq, EOS_ID]
            log_p = sum(float(log_table[a, b]) for a, b in itertools.pairwise(path))
            score = log_p / (length + 1) ** cfg.length_penalty
            if score > best_score:
                best, best_score = list(seq), score
    return best, best_score


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_beam_wider_than_the_search_space_is_exhaustive(alpha, seed):
    torch.manual_seed(seed)
    t = torch.rand(V, V) ** 3 + 1e-3  # peaked rows, so the length penalty matters
    t[:, EOS_ID] *= 4
    cfg = SearchConfig(beam=400, min_words=1, max_words=3, length_penalty=alpha)
    hyps = beam_search(Markov(t.unsqueeze(0)), fake_batch(), cfg)[0]
    want, score = exhaustive(torch.log(t / t.sum(-1, keepdim=True)), cfg)
    assert hyps[0].tokens == want
    assert hyps[0].score == pytest.approx(score, abs=1e-4)
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


def test_length_normalisation_prefers_a_longer_confident_summary():
    # A </s> costs log 0.5 in total (-0.69, mean -0.35 over 2 tokens); B C D </s> costs
    # log(0.45*0.99^3) = -0.83, mean -0.21 over 4: plain beam search takes the short one
    t = table(
        {BOS_ID: {A: 0.5, B: 0.45}, A: {EOS_ID: 1.0}, B: {C: 0.99}, C: {D: 0.99}, D: {EOS_ID: 0.99}}
    )
    assert decode(t, beam=3, length_penalty=0.0) == [[A]]
    assert decode(t, beam=3, length_penalty=1.0) == [[B, C, D]]


def test_greedy_is_beam_one():
    torch.manual_seed(3)
    tables = torch.rand(4, V, V) + 1e-3
    cfg = SearchConfig(beam=1, min_words=2, max_words=8)
    model = Markov(tables)
    got = [h[0].tokens for h in beam_search(model, fake_batch(4), cfg)]
    for e in range(4):  # the constrained argmax, step by step
        words, prev = [], BOS_ID
        while len(words) <= cfg.max_words:
            always = torch.tensor([i in (PAD_ID, UNK_ID, BOS_ID) for i in range(V)])
            ban = constraint_mask(torch.tensor([words], dtype=torch.long), banning(always), cfg)[0]
            prev = int(model.log_tables[e, prev].masked_fill(ban, -math.inf).argmax())
            if prev == EOS_ID:
                break
            words.append(prev)
        assert got[e] == words


# ---- constraints ------------------------------------------------------------------------


def test_min_length_holds_back_the_end():
    t = table({i: {EOS_ID: 0.9} for i in range(V)}, floor=0.01)  # </s> is always the best
    for min_words in (0, 1, 4):
        assert len(decode(t, min_words=min_words)[0]) == min_words


def test_max_length_forces_the_end():
    t = table({}, floor=1.0)  # uniform; </s> is rare enough never to win early
    t[:, EOS_ID] = 1e-9
    for max_words in (1, 3, 7):
        assert len(decode(t, max_words=max_words)[0]) == max_words


def test_specials_are_never_produced():
    # <unk>, <pad> and <s> are the most likely next words everywhere
    t = table(
        {i: {UNK_ID: 0.5, PAD_ID: 0.2, BOS_ID: 0.2, A: 0.05, B: 0.05} for i in range(V)}, floor=1e-3
    )
    for beam in (1, 5):
        words = decode(t, beam=beam, min_words=5, max_words=12)[0]
        assert len(words) >= 5 and not set(words) & {PAD_ID, UNK_ID, BOS_ID, EOS_ID}


def test_no_immediate_repeat():
    t = table({i: {i: 0.9} for i in range(4, V)} | {BOS_ID: {A: 1.0}}, floor=1e-3)
    assert (
        decode(t, min_words=6, max_words=6, no_immediate_repeat=False, no_repeat_ngram=0)[0]
        == [A] * 6
    )
    words = decode(t, min_words=6, max_words=6, no_repeat_ngram=0)[0]
    assert all(a != b for a, b in itertools.pairwise(words))


def test_trigram_blocking():
    # a strong cycle A B C A B C ...
    t = table({BOS_ID: {A: 1.0}, A: {B: 0.9}, B: {C: 0.9}, C: {A: 0.9}}, floor=1e-3)
    looping = decode(t, min_words=9, max_words=9, no_repeat_ngram=0)[0]
    assert looping == [A, B, C] * 3
    for beam in (1, 5):
        words = decode(t, beam=beam, min_words=9, max_words=9)[0]
        assert len(words) == 9 and not repeats_ngram(words, 3)
        assert words[:4] == [A, B, C, A]  # blocked only where the trigram would repeat


def test_an_entity_with_every_word_banned_keeps_what_it_has():
    # only A is allowed, it may not follow itself and </s> must wait for 3 words: stuck at t=1
    cfg = SearchConfig(min_words=3)
    hyps = beam_search(Markov(table({}, floor=1.0)[None]), fake_batch(), cfg, [B, C, D, E])[0]
    assert [(h.tokens, h.finished) for h in hyps] == [([A], False)]


def test_constraint_mask_bans_what_would_repeat_a_trigram():
    cfg = SearchConfig(min_words=0, no_immediate_repeat=False)
    history = torch.tensor([[A, B, C, A, B], [A, B, A, B, A], [A, B, C, D, E]])
    ban = constraint_mask(history, banning(torch.zeros(V, dtype=torch.bool)), cfg)
    assert ban[0].nonzero().flatten().tolist() == [C]  # "a b" was followed by c
    assert ban[1].nonzero().flatten().tolist() == [B]  # "b a" was followed by b
    assert not ban[2, len(SPECIALS) :].any()  # specials are always banned


DOT = E  # the sentence end in the tests below


def masks(content=(A, B, C), ends=(DOT,)) -> WordMasks:
    return WordMasks.build(WordLists((), content, ends), V, "cpu")


def test_a_content_word_comes_back_only_in_a_later_sentence():
    cfg = SearchConfig(
        min_words=0, no_immediate_repeat=False, no_repeat_ngram=0, no_repeat_in_sentence=True
    )
    history = torch.tensor([[A, D, B], [A, DOT, B], [D, D, D]])
    ban = constraint_mask(history, masks(), cfg)
    assert ban[0, [A, B]].all() and not ban[0, [C, D]].any()  # D is no content word
    assert ban[1, B] and not ban[1, A]  # A was in the finished sentence
    assert not ban[2, len(SPECIALS) :].any()  # specials are always banned


def test_max_word_repeats_counts_the_whole_summary():
    cfg = SearchConfig(
        min_words=0, no_immediate_repeat=False, no_repeat_ngram=0, max_word_repeats=2
    )
    ban = constraint_mask(torch.tensor([[A, DOT, A, B, DOT, D, D]]), masks(), cfg)
    # D is used twice too, but it is no content word
    assert ban[0, len(SPECIALS) :].nonzero().flatten().tolist() == [A - len(SPECIALS)]


def test_sentence_blocking_changes_the_decoded_words():
    # the likeliest path says "a b a ." ; with the rule, A cannot come back before the "."
    t = table(
        {BOS_ID: {A: 0.9}, A: {B: 0.9}, B: {A: 0.8, C: 0.1}, C: {DOT: 0.9}, DOT: {EOS_ID: 0.9}},
        floor=1e-4,
    )
    t[A, EOS_ID] = 0.5
    cfg = SearchConfig(min_words=3, max_words=4, no_repeat_ngram=0, length_penalty=0.0)
    words = WordLists((), [A, B, C], [DOT])
    loose = beam_search(Markov(t[None]), fake_batch(), cfg, words=words)[0][0].tokens
    assert loose == [A, B, A]
    cfg = replace(cfg, no_repeat_in_sentence=True)
    strict = beam_search(Markov(t[None]), fake_batch(), cfg, words=words)[0][0].tokens
    assert strict == [A, B, C, DOT]


def test_a_sentence_that_restates_an_earlier_one_cannot_end():
    cfg = SearchConfig(
        min_words=0, no_immediate_repeat=False, no_repeat_ngram=0, restate_overlap=0.5
    )
    history = torch.tensor(
        [
            [A, B, DOT, B, A],  # the same two content words: restated
            [A, B, DOT, C, A],  # half of {C, A} was said: restated
            [A, B, DOT, C, D],  # one content word (D is none): may end
            [A, B, C, D, A],
        ]
    )  # no earlier sentence
    ban = constraint_mask(history, masks(), cfg)
    assert ban[:, DOT].tolist() == [True, True, False, False]
    assert ban[:, EOS_ID].tolist() == [True, True, False, False]
    assert not ban[0, [A, B, C, D]].any()  # only ending is banned: it must say something new


@pytest.mark.parametrize("moved", [False, True])
def test_the_search_keeps_what_each_beam_said_as_its_history_reads(said_checked, moved):
    # random transitions over content words A-C, stopword D and DOT, four entities of their own
    # tables: beams reorder and copy each other, and entities end at different steps; moved:
    # after 6 steps every word goes to another position (_Search.in_columns, as the service's
    # merged search does when the union of shortlists changes)
    gen = torch.Generator().manual_seed(0)
    tables = torch.rand(4, V, V, generator=gen) ** 4
    tables[:, :, EOS_ID] *= 0.05
    rules = {"no_repeat_in_sentence": True, "max_word_repeats": 3, "restate_overlap": 0.5}
    cfg = SearchConfig(beam=4, min_words=3, max_words=16, no_repeat_ngram=0, **rules)
    cfg = replace(cfg, no_immediate_repeat=False)
    words = WordLists((), [A, B, C], [DOT])

    def run(search):
        for _ in range(6):
            search.step()
        before = [s.sentence for s in search.said]
        search.in_columns(torch.cat([torch.arange(len(SPECIALS)), torch.arange(V - 1, 3, -1)]), V)
        assert [s.sentence for s in search.said] != before
        return search.run()

    with stepped_by(run) if moved else contextlib.nullcontext():
        beam_search(Markov(tables), fake_batch(4), cfg, words=words)
    assert len(said_checked) >= 10 and sum(said_checked) > 0  # some rows restated


def test_restating_agrees_with_the_style_measure():
    # ids -> words: A-C content words, D a stopword, DOT a sentence end; batches of rows with
    # different numbers of sentences, as in a beam
    text = {A: "apple", B: "bread", C: "cheese", D: "the", DOT: "."}
    rng = random.Random(3)
    for _ in range(60):
        length = rng.randint(1, 14)
        rows = [[rng.choice([A, B, C, D, DOT]) for _ in range(length)] for _ in range(5)]
        rules = SaidRules(*masks().sets(), repeats=0, restate=True)
        got = [said.restates(0.5) for said in Said.of_history(torch.tensor(rows), rules)]
        for history, flag in zip(rows, got, strict=True):
            done = history[: len(history) - history[::-1].index(DOT)] if DOT in history else []
            ended = restated_sentences(
                " ".join(text[w] for w in history) + " ."
            ) - restated_sentences(" ".join(text[w] for w in done))
            assert flag == (ended > 0), history


def test_restatement_blocking_changes_the_decoded_words():
    # likeliest: "a b . a b" then </s>; blocked (share 0.7), the second sentence must bring in
    # a new content word before it may end: "a b . a b c"
    t = table(
        {
            BOS_ID: {A: 0.9},
            A: {B: 0.9},
            B: {DOT: 0.5, EOS_ID: 0.4, C: 0.05},
            DOT: {A: 0.9},
            C: {EOS_ID: 0.9},
        },
        floor=1e-4,
    )
    cfg = SearchConfig(
        beam=3,
        min_words=5,
        max_words=7,
        no_repeat_ngram=0,
        no_immediate_repeat=False,
        length_penalty=0.0,
    )
    words = WordLists((), [A, B, C], [DOT])
    loose = beam_search(Markov(t[None]), fake_batch(), cfg, words=words)[0][0].tokens
    assert loose == [A, B, DOT, A, B]
    cfg = replace(cfg, restate_overlap=0.7)
    strict = beam_search(Markov(t[None]), fake_batch(), cfg, words=words)[0][0].tokens
    assert strict == [A, B, DOT, A, B, C]


def test_first_person_blocking():
    index = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3, "i": A, "my": B, "food": C, "good": D}
    assert banned_words(SummaryPolicy(), index) == []
    policy = SummaryPolicy(first_person=False)
    assert banned_words(policy, index) == [A, B]
    t = table(
        {BOS_ID: {A: 0.6, B: 0.3, C: 0.1}, A: {B: 0.9}, B: {C: 0.9}, C: {D: 0.9}, D: {EOS_ID: 0.9}}
    )
    model = Markov(t.unsqueeze(0))
    loose = beam_search(model, fake_batch(), SearchConfig(min_words=0))[0][0].tokens
    assert loose == [A, B, C, D]
    cfg = SearchConfig(min_words=0)
    strict = beam_search(model, fake_batch(), cfg, banned_words(policy, index))[0][0].tokens
    assert strict == [C, D]


def test_bad_settings_are_named():
    for bad, key in [
        ({"beam": 0}, "beam"),
        ({"min_words": 9, "max_words": 5}, "min_words"),
        ({"length_penalty": -1.0}, "length_penalty"),
        ({"max_word_repeats": -1}, "max_word_repeats"),
        ({"restate_overlap": 1.5}, "restate_overlap"),
    ]:
        with pytest.raises(ConfigError, match=f"'search.{key}'"):
            beam_search(Markov(torch.ones(1, V, V)), fake_batch(), SearchConfig(**bad))


# ---- batching ---------------------------------------------------------------------------


def test_batched_equals_one_entity_at_a_time():
    torch.manual_seed(4)
    tables = torch.rand(5, V, V) ** 2 + 1e-3
    tables[1, :, EOS_ID] = 50.0  # finishes at min_words, long before the others
    cfg = SearchConfig(beam=3, min_words=2, max_words=12)
    together = beam_search(Markov(tables), fake_batch(5), cfg)
    for e in range(5):
        alone = beam_search(Markov(tables[e : e + 1]), fake_batch(), cfg)[0]
        assert [h.tokens for h in together[e]] == [h.tokens for h in alone]
        assert [h.score for h in together[e]] == pytest.approx([h.score for h in alone])
    assert len(together[1][0].tokens) == 2


def test_finished_entities_leave_the_batch():
    tables = torch.ones(2, V, V)
    tables[0, :, EOS_ID] = 1e3  # entity 0 ends at once; entity 1 runs to max_words
    tables[1, :, EOS_ID] = 1e-9
    model = Markov(tables)
    hyps = beam_search(model, fake_batch(2), SearchConfig(beam=2, min_words=1, max_words=20))
    assert [len(h[0].tokens) for h in hyps] == [1, 20]
    assert model.steps == 21


def tiny_model_and_review_sets(seed: int, set_sizes: tuple[int, ...]):
    """A random tiny DenoiseSum and review sets of random word ids with the given sizes."""
    torch.manual_seed(seed)
    model = DenoiseSum(
        DenoiseSumConfig(vocab_size=40, embed_dim=8, hidden_dim=12, n_topics=3, dropout=0.0)
    ).eval()
    rng = random.Random(seed)
    sets = [
        [[rng.randrange(4, 40) for _ in range(rng.randint(2, 9))] for _ in range(n)]
        for n in set_sizes
    ]
    return model, sets


def test_tiny_denoisesum_batched_equals_alone():
    model, sets = tiny_model_and_review_sets(0, (3, 1, 5))
    cfg = SearchConfig(beam=4, min_words=3, max_words=15)
    together = beam_search(model, inference_batch(sets), cfg)
    for reviews, hyps in zip(sets, together, strict=True):
        alone = beam_search(model, inference_batch([reviews]), cfg)
        assert hyps[0].tokens == alone[0][0].tokens
        assert hyps[0].score == pytest.approx(alone[0][0].score, abs=1e-5)
        assert 3 <= len(hyps[0].tokens) <= 15 and UNK_ID not in hyps[0].tokens


class Opaque:
    """Hides a state's dataclass, so that beam search reorders it with plain index_select."""

    def __init__(self, state) -> None:
        self.state = state

    def index_select(self, index: torch.Tensor) -> "Opaque":
        return Opaque(self.state.index_select(index))


class OpaqueModel:
    def __init__(self, model) -> None:
        self.model = model

    def encode(self, batch) -> Opaque:
        return Opaque(self.model.encode(batch))

    def decode_step(self, state: Opaque, prev: torch.Tensor):
        log_probs, new = self.model.decode_step(state.state, prev)
        return log_probs, Opaque(new)


def test_skipping_the_static_encoder_tensors_changes_nothing():
    model, sets = tiny_model_and_review_sets(1, (2, 4, 1, 3))
    cfg = SearchConfig(beam=4, min_words=2, max_words=12)
    fast = beam_search(model, inference_batch(sets), cfg)
    plain = beam_search(OpaqueModel(model), inference_batch(sets), cfg)
    assert [[(h.tokens, h.score) for h in hyps] for hyps in fast] == [
        [(h.tokens, h.score) for h in hyps] for hyps in plain
    ]
