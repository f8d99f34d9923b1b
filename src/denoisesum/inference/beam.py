"""Length-normalised beam search (docs/method.md §2 "Decoding"), batched over entities.

Works with any model exposing the DenoiseSum decoding protocol:

    state = model.encode(batch)                            # one row per entity
    log_probs, state = model.decode_step(state, prev)      # prev [B*] -> [B*, V], next state
    state = state.index_select(rows)                       # reorder / duplicate rows (beams)

Every entity keeps `beam` live hypotheses (rows entity-major: entity a's beams are rows
a*K .. a*K+K-1). Each step scores all K*V continuations of an entity, and takes its best 2K:
a `</s>` among the best K ends that hypothesis (it moves to the entity's finished list), and the
best K that do not end stay live. This is the usual scheme (fairseq's): taking 2K guarantees K
live continuations, since at most K of them (one per beam) can be `</s>`.

Scores. Live beams are ranked by their summed log-probability; a finished hypothesis is scored
by that sum divided by length**alpha, where length counts its words plus `</s>` (the sum covers
both). alpha = 1 is the per-token average; alpha = 0 is plain beam search, which prefers short
outputs. An entity stops when it has `beam` finished hypotheses (or at max_words, where
`</s>` is forced), and leaves the batch then, so the others decode faster.

Constraints (inference/constraints.py): what may not come next (specials, </s> before
min_words, repeats, restated sentences), set to -inf before the beams are chosen.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import torch

from denoisesum.config import Range, at_least, between, check
from denoisesum.data.vocab import BOS_ID, EOS_ID
from denoisesum.errors import ConfigError
from denoisesum.inference.constraints import (
    EMPTY,
    SaidRules,
    WordLists,
    WordMasks,
    constraint_mask,
    reads_said,
)
from denoisesum.threads import pace

MIN_MAX_WORDS = 15  # length_ratio never allows fewer words than this (nor than max_words)


@dataclass(frozen=True)
class SearchConfig:
    """What the beam search reads (the summary policy, inference/policy.py, steers the rest). A
    frozen value: per-call options make a new one (policy.decoding_with), never change it."""

    beam: int = 5  # beam size; 1 = greedy
    min_words: int = 10  # words before </s> may be produced
    max_words: int = 100  # words at most; </s> is forced after them
    length_penalty: float = 1.0  # alpha: finished scores are sum log p / (words + 1) ** alpha
    no_repeat_ngram: int = 3  # ban a word that would repeat an n-gram of the hypothesis; 0: off
    no_immediate_repeat: bool = True  # ban w_t == w_{t-1}
    no_repeat_in_sentence: bool = False  # ban a content word already in the current sentence
    max_word_repeats: int = 0  # a content word appears at most this often; 0: no limit
    restate_overlap: float = 0.0  # no sentence ends restating one earlier sentence; 0: off
    # length that follows the input: an entity's min_words is at most length_ratio x the
    # words of the reviews read, and its max_words at most twice that (never below
    # min_words); 0: the fixed min_words and max_words for every entity
    length_ratio: float = 0.0
    end_at_sentence: bool = False  # </s> only right after a sentence end (. ! ?)
    # opinion steering: each step adds opinion_weight x the caller's per-entity word bias (the
    # rating model's pull of each word toward the target stars: policy.SummaryPolicy)
    opinion_weight: float = 0.0
    # each setting's valid values (config.py checks them); a beam of thousands exhausts memory
    BOUNDS: ClassVar[dict[str, Range]] = {
        "beam": between(1, 1000, "1: greedy"),
        "min_words": at_least(0),
        "max_words": between(1, 1000),
        "length_penalty": between(0, 10),
        "no_repeat_ngram": at_least(0, "0: off"),
        "max_word_repeats": at_least(0, "0: no limit"),
        "restate_overlap": between(0, 1, "0: off"),
        "length_ratio": between(0, 10, "0: off"),
        "opinion_weight": between(0, 100, "0: off"),
    }

    def validate(self) -> None:
        """One setting against another (each one's range: BOUNDS)."""
        if self.min_words > self.max_words:
            why = f"must be between 0 and max_words ({self.max_words})"
            raise ConfigError(
                f"min_words={self.min_words!r} {why}",
                key="min_words",
                reason=f"{self.min_words!r} {why}",
            )


@dataclass
class Hypothesis:
    tokens: list[int]  # word ids, without <s> and </s>
    score: float  # length-normalised: log_prob / (len(tokens) + 1) ** alpha
    log_prob: float  # sum of the log-probabilities of the words and </s>
    finished: bool = True  # False only for the fallback when no hypothesis could end


class DecodeStateLike(Protocol):
    def index_select(self, index: torch.Tensor) -> DecodeStateLike: ...


class DecodingModel(Protocol):
    def encode(self, batch) -> DecodeStateLike: ...

    # words [B*, V] bool: each row's own words, given where a search has per-entity vocabularies
    # (sets decoded together over their own shortlists, searches joined in the service)
    def decode_step(
        self, state: DecodeStateLike, prev_tokens: torch.Tensor, words: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, DecodeStateLike]: ...


def beam_search(
    model: DecodingModel,
    batch,
    config: SearchConfig | None = None,
    banned_ids: Sequence[int] = (),
    words: WordLists | None = None,
    bias: torch.Tensor | None = None,
    allowed: torch.Tensor | None = None,
) -> list[list[Hypothesis]]:
    """Decode every entity of `batch` (a SummaryBatch from `inference_batch`). banned_ids:
    words never produced (joined to words.banned). bias [B, V]: added to each step's log p of
    entity b's words, times config.opinion_weight. allowed [B, V] bool: the words entity b's
    distribution is over (ShortlistModel.entity_words; None: every word).

    Returns, per entity in batch order, up to `beam` hypotheses, best first.
    """
    config = config or SearchConfig()
    check(config, "search.")  # its bounds and validate(): it may be made in Python
    words = words or WordLists()
    words = dataclasses.replace(words, banned=[*map(int, words.banned), *banned_ids])
    search = _Search(model, batch, config, words)
    search.bias = bias if config.opinion_weight else None
    search.allowed = allowed
    run = getattr(_STEPPER, "run", None)
    return search.run() if run is None else run(search)


# A thread's stepper (`stepped_by`): where its searches run instead of alone, one step at a time
# with other threads' searches (serving/continuous.py: a request's search joins the running ones
# between steps).
_STEPPER = threading.local()


@contextlib.contextmanager
def stepped_by(run: Callable[[_Search], list[list[Hypothesis]]]) -> Iterator[None]:
    """Inside the block, this thread's beam_search calls hand their search to `run` (which
    returns its results once it has stepped it to the end) instead of running it alone."""
    _STEPPER.run = run
    try:
        yield
    finally:
        _STEPPER.run = None


def length_bounds(batch, config: SearchConfig) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Per entity (min_words [B], max_words [B]) from the words of its reviews
    (config.length_ratio; None when it is off)."""
    if not config.length_ratio:
        return None
    words = torch.zeros(batch.n_pairs, dtype=torch.long, device=batch.reviews.device)
    words.index_add_(0, batch.review_pair, batch.review_lengths)
    low = (words * config.length_ratio).floor().long().clamp(max=config.min_words)
    # a one-line review still gets a sentence: at least MIN_MAX_WORDS words of room
    high = (2 * words * config.length_ratio).ceil().long().clamp(min=MIN_MAX_WORDS)
    return low, torch.maximum(high.clamp(max=config.max_words), low)


def _leaves(obj) -> list[torch.Tensor]:
    """The tensors of a (nested) dataclass state, in field order; tuples and lists of states
    (an ensemble's) are walked in order too."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if dataclasses.is_dataclass(obj):
        return [t for f in dataclasses.fields(obj) for t in _leaves(getattr(obj, f.name))]
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in _leaves(item)]
    return []


def _rebuild(obj, leaves: Iterator[torch.Tensor]):
    """`obj` with its tensors replaced, in `_leaves` order."""
    if isinstance(obj, torch.Tensor):
        return next(leaves)
    if dataclasses.is_dataclass(obj):
        return type(obj)(
            **{f.name: _rebuild(getattr(obj, f.name), leaves) for f in dataclasses.fields(obj)}
        )
    if isinstance(obj, (tuple, list)):
        return type(obj)(_rebuild(item, leaves) for item in obj)
    return obj


class _Reorder:
    """Reorders the decoding state's rows, skipping the tensors decode_step never replaces.

    Those are encoder outputs (DenoiseSum's memory, keys, masks: [B*, M, D] each): one entity's
    data, identical in the entity's K rows, so moving beams within an entity leaves them as they
    are. Copying them every step would cost more than the step itself (8 reviews x 100 words:
    16 MB per step at beam 5). They are copied only when an entity leaves the batch. A tensor
    is static while decode_step returns that very object; once replaced, it is per-beam (the
    LSTM state) and always reordered. States that are not dataclasses are always index_select'ed.
    """

    def __init__(self, state) -> None:
        self.static = [True] * len(_leaves(state)) if dataclasses.is_dataclass(state) else None

    def __call__(self, old, new, rows: torch.Tensor, same_entities: bool):
        if self.static is not None:
            before, after = _leaves(old), _leaves(new)
            if len(before) != len(after) or type(old) is not type(new):
                self.static = None
            else:
                self.static = [
                    s and a is b for s, a, b in zip(self.static, before, after, strict=True)
                ]
        if self.static is None or not same_entities:
            return new.index_select(rows)
        moved = (
            t if s else t.index_select(0, rows)
            for s, t in zip(self.static, _leaves(new), strict=True)
        )
        return _rebuild(new, moved)


class _Search:
    """The loop state of one beam search. A = entities still decoding, K = beam size,
    t = words generated so far."""

    def __init__(
        self,
        model: DecodingModel,
        batch,
        config: SearchConfig,
        words: WordLists,
    ) -> None:
        self.model, self.config = model, config
        self.k = k = config.beam
        n = batch.n_pairs
        self.device = device = batch.reviews.device
        state = model.encode(batch)
        rows = torch.arange(n, device=device).repeat_interleave(k)
        if hasattr(state, "select_beams"):  # keeps each entity's source once (DecodeState)
            self.state = state.select_beams(rows, None, k)
        else:
            self.state = state.index_select(rows)
        self.reorder = _Reorder(self.state)
        self.entity = torch.arange(n, device=device)  # [A] batch index of each live entity
        self.tokens = torch.zeros(n, k, 0, dtype=torch.long, device=device)  # [A, K, t]
        # the K rows of an entity start identical: only one may expand, or the beam would fill
        # with K copies of the same hypothesis
        self.scores = torch.full((n, k), -torch.inf, device=device)  # [A, K] summed log p
        self.scores[:, 0] = 0.0
        self.prev = torch.full((n * k,), BOS_ID, dtype=torch.long, device=device)  # [A*K]
        self.finished: list[list[Hypothesis]] = [[] for _ in range(n)]
        # [n] len(finished[e]), kept on the device: no host-to-device copy each step
        self.n_finished = torch.zeros(n, dtype=torch.long, device=device)
        self.masks: WordMasks | None = None  # built at the first step
        # [A*K] what each row's hypothesis has said (constraints.Said), where a constraint
        # reads it; kept row by row as the beams move
        self.said = [EMPTY] * (n * k) if reads_said(config) else None
        self.words = words
        self.bias: torch.Tensor | None = None  # [n, V] per-entity word bias (opinion)
        self.bounds = length_bounds(batch, config)  # per entity (min, max) lengths, or None
        self.cancelled: torch.Tensor | None = None  # [n] bool: stop decoding these entities
        # entities joined from other searches (join): [n] the step each began at (its words are
        # the last t - born of tokens, after <pad>s), and [n, V] the words each may produce
        self.born: torch.Tensor | None = None
        self.allowed: torch.Tensor | None = None
        self._rows_of: torch.Tensor | None = None  # the entities _rows_cache was made for
        self._rows_cache: dict = {}

    def run(self) -> list[list[Hypothesis]]:
        while len(self.entity):
            self.step()
        return self.results()

    def results(self) -> list[list[Hypothesis]]:
        """Per entity of the batch, up to `beam` hypotheses, best first."""
        return [sorted(hyps, key=lambda h: -h.score)[: self.k] for hyps in self.finished]

    def in_columns(self, cols: torch.Tensor, width: int) -> None:
        """Move a search to another output space (serving/continuous.py: the union of the
        shortlists of searches that decode together): its word position p becomes position
        cols[p] of `width`, or leaves where cols[p] is -1 (a word no live entity may produce,
        nor has); the new positions are words it may not produce."""
        n, v = len(self.finished), len(cols)
        masks = self._word_masks(v)
        kept = torch.nonzero(cols >= 0).flatten()
        to = cols[kept]

        def move(x: torch.Tensor, fill) -> torch.Tensor:  # [.., V] -> [.., width]
            out = x.new_full((*x.shape[:-1], width), fill)
            out[..., to] = x[..., kept]
            return out

        self.masks = WordMasks(*(move(m, False) for m in masks.fields()))
        self.bias = None if self.bias is None else move(self.bias, 0.0)
        allowed = torch.ones(n, v, dtype=torch.bool, device=self.device)
        self.allowed = move(allowed if self.allowed is None else self.allowed, False)
        self.tokens, self.prev = cols[self.tokens], cols[self.prev]
        if self.said is not None:
            to_list = cols.tolist()
            self.said = [said.moved(to_list) for said in self.said]
        self.state = self.state.with_copy_ids(cols)
        for hyps in self.finished:
            for h in hyps:
                h.tokens = cols[h.tokens].tolist() if h.tokens else []
        # what join reads and concatenates, made explicit
        fields = self._per_entity()
        self.born, self.cancelled = fields["born"], fields["cancelled"]
        self.bounds = fields["low"], fields["high"]
        self._rows_of = None  # its per-row views are of the old space

    def join(self, other: _Search) -> None:
        """Take in the entities of `other`, a search not yet stepped, over the same model,
        settings and output space (in_columns): from the next step on they decode beside
        this search's own, each from its first word and ending on its own. Everything is
        built before anything changes, so a join that fails leaves this search as it was."""
        n, t = len(self.finished), self.tokens.shape[2]
        mine, theirs = self._per_entity(), other._per_entity()
        theirs["born"] = theirs["born"] + t  # their words follow t <pad>s
        joined = {
            name: torch.cat(
                [
                    x if x is not None else s._blank(name)
                    for s, x in ((self, mine[name]), (other, theirs[name]))
                ]
            )
            for name in mine
            if mine[name] is not None or theirs[name] is not None
        }
        pairs = zip(self.masks.fields(), other.masks.fields(), strict=True)
        masks = WordMasks(*(a | b for a, b in pairs))
        pad = torch.zeros(len(other.entity), self.k, t, dtype=torch.long, device=self.device)
        state = self.state.joined(other.state)
        self.state, self.masks = state, masks
        self.bounds = (joined.pop("low"), joined.pop("high"))
        for name, value in joined.items():
            setattr(self, name, value)
        self.tokens = torch.cat([self.tokens, pad])
        self.entity = torch.cat([self.entity, other.entity + n])
        self.scores = torch.cat([self.scores, other.scores])
        self.prev = torch.cat([self.prev, other.prev])
        if self.said is not None:
            self.said = self.said + other.said
        self.finished = self.finished + other.finished
        self.n_finished = torch.cat([self.n_finished, other.n_finished])

    def _per_entity(self) -> dict[str, torch.Tensor | None]:
        """The tensors with one row per entity ([n] or [n, V]) that join concatenates, None
        where never set (_blank: what that means)."""
        low, high = self.bounds or (self._blank("low"), self._blank("high"))
        return {
            "born": self.born if self.born is not None else self._blank("born"),
            "cancelled": self.cancelled if self.cancelled is not None else self._blank("cancelled"),
            "low": low,
            "high": high,
            "allowed": self.allowed,
            "bias": self.bias,
        }

    def _blank(self, name: str) -> torch.Tensor:
        """A per-entity tensor where this search never set it: born at step 0, nothing
        cancelled, the config's lengths, every word allowed, no bias."""
        n, v, c = len(self.finished), len(self.masks.always), self.config
        fills = {"born": 0, "cancelled": False, "low": c.min_words, "high": c.max_words}
        if name in fills:
            return torch.full((n,), fills[name], device=self.device)  # long, or bool
        if name == "allowed":
            return torch.ones(n, v, dtype=torch.bool, device=self.device)
        return torch.zeros(n, v, device=self.device)

    def _word_masks(self, vocab_size: int) -> WordMasks:
        if self.masks is None:
            self.masks = WordMasks.build(self.words, vocab_size, self.device)
        return self.masks

    def step(self) -> None:
        """One step: decode_step's log p [A*K, V] and next state, then the bookkeeping."""
        pace()  # torch's threads follow the CPU's load (threads.py)
        if self.allowed is None:
            log_probs, state = self.model.decode_step(self.state, self.prev)
        else:  # each entity's distribution over its own words (a ShortlistModel's union)
            log_probs, state = self.model.decode_step(
                self.state, self.prev, self._rows()["allowed"]
            )
        rows, live, a = self.advance(log_probs)
        if len(live) and hasattr(state, "select_beams"):
            self.state = state.select_beams(rows, None if len(live) == a else live, self.k)
        elif len(live):
            self.state = self.reorder(self.state, state, rows, len(live) == a)

    def advance(self, log_probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """One step's bookkeeping, given its log p [A*K, V] (decode_step on this search's
        state and `prev`): finished hypotheses collected, beams chosen, ended entities left
        out. Returns the rows of that step's new state to keep [A'*K], the entities that go
        on [A'] (indices among the A) and A."""
        a, k, t = self.tokens.shape
        v = log_probs.shape[1]
        history = self.tokens.view(a * k, t)
        rows = self._rows()
        bounds = rows["bounds"]  # [A*K] each, or None
        # words so far: t, or per entity [A] where entities joined at other steps
        length = t if self.born is None else t - rows["born"]
        rows_length = None if self.born is None else length.repeat_interleave(k)
        masks = self._word_masks(v)
        ban = constraint_mask(history, masks, self.config, bounds, rows_length, self.said)
        if self.allowed is not None:
            ban |= ~rows["allowed"]
        if self.bias is not None:
            weight = self.config.opinion_weight
            log_probs = log_probs + weight * rows["bias"]
        log_probs = torch.where(ban, -torch.inf, log_probs)
        cand = (self.scores.unsqueeze(-1) + log_probs.view(a, k, v)).view(a, k * v)
        top, idx = cand.topk(min(2 * k, k * v), dim=1)  # [A, 2K], best first
        beam, word = idx // v, idx % v  # [A, 2K]
        is_eos = word == EOS_ID
        ended = is_eos[:, :k] & top[:, :k].isfinite()  # [A, K]
        self._collect(top[:, :k], beam[:, :k], ended, length)
        self.n_finished.index_add_(0, self.entity, ended.sum(1))
        # the best K continuations that do not end: non-</s> first, each group in score order
        order = is_eos.long() * 2 * k + torch.arange(top.shape[1], device=self.device)
        keep = order.argsort(1)[:, :k]  # [A, K]
        scores, beam, word = top.gather(1, keep), beam.gather(1, keep), word.gather(1, keep)
        old_tokens, old_scores = self.tokens, self.scores
        tokens = torch.cat(
            [old_tokens.gather(1, beam.unsqueeze(-1).expand(-1, -1, t)), word.unsqueeze(-1)], -1
        )  # [A, K, t+1]
        enough = self.n_finished[self.entity] >= k  # [A]
        stuck = ~scores.isfinite().any(1)  # every word banned: no hypothesis can go on
        high = self.config.max_words if self.bounds is None else rows["high"]
        done = enough | stuck | (length >= high)  # [A]
        if self.cancelled is not None:  # entities whose caller gave up (a request's deadline)
            done |= self.cancelled[self.entity]
        if bool(stuck.any()):  # (only with a tiny vocabulary)
            for i in torch.nonzero(stuck & ~enough).flatten().tolist():
                words = (
                    old_tokens[i] if self.born is None else old_tokens[i, :, t - int(length[i]) :]
                )
                self._fallback(i, words, old_scores[i])
        live = torch.nonzero(~done).flatten()  # [A']
        rows = (live.unsqueeze(1) * k + beam[live]).flatten()  # [A'*K] rows of the next state
        if len(live) < a:  # (else the same entities: their per-row views stay valid: _rows)
            self.entity = self.entity[live]
        self.tokens, self.scores = tokens[live], scores[live]
        self.prev = word[live].flatten()
        if self.said is not None:
            rules = SaidRules.of(masks, self.config)  # masks caches its id sets
            said = self.said
            self.said = [
                said[row].extend(w, rules)
                for row, w in zip(rows.tolist(), self.prev.tolist(), strict=True)
            ]
        if self.born is not None and len(live):  # <pad> columns no live entity needs go
            first = int(self.born[self.entity].min())
            if first:
                self.tokens, self.born = self.tokens[:, :, first:], self.born - first
                self._rows_of = None
        return rows, live, a

    def _rows(self) -> dict[str, torch.Tensor | None]:
        """The per-entity tensors each step reads, gathered for the live entities (per row
        where a step reads rows): kept while the live entities are the same."""
        if self._rows_of is not self.entity:
            e, k = self.entity, self.k

            def per_row(x: torch.Tensor | None) -> torch.Tensor | None:
                return None if x is None else x[e].repeat_interleave(k, 0)

            self._rows_cache = {
                "bounds": None if self.bounds is None else tuple(map(per_row, self.bounds)),
                "high": None if self.bounds is None else self.bounds[1][e],
                "born": None if self.born is None else self.born[e],
                "allowed": per_row(self.allowed),
                "bias": per_row(self.bias),
            }
            self._rows_of = e
        return self._rows_cache

    def _collect(
        self, scores: torch.Tensor, beam: torch.Tensor, ended: torch.Tensor, length
    ) -> None:
        """Move the hypotheses that just produced </s> (ended [A, K]) to the finished lists.
        length: the words of each (t, or per entity [A])."""
        alpha, width = self.config.length_penalty, self.tokens.shape[2]
        i, j = torch.nonzero(ended).unbind(1)  # [E] each: entity i's beam j ended
        if not len(i):
            return
        # every list made at once: a few ops a step, not a few per hypothesis
        log_probs, entities = scores[i, j].tolist(), self.entity[i].tolist()
        rows = self.tokens[i, beam[i, j]].tolist()
        lengths = [length] * len(i) if isinstance(length, int) else length[i].tolist()
        for log_prob, row, entity, t in zip(log_probs, rows, entities, lengths, strict=True):
            self.finished[entity].append(
                Hypothesis(row[width - t :], log_prob / (t + 1) ** alpha, log_prob)
            )

    def _fallback(self, i: int, tokens: torch.Tensor, scores: torch.Tensor) -> None:
        """An entity whose every continuation is banned before any hypothesis ended (only
        possible with a tiny vocabulary): keep its live beams, marked unfinished."""
        entity = int(self.entity[i])
        if self.finished[entity]:
            return
        alpha, t = self.config.length_penalty, tokens.shape[1]
        for words, log_prob in zip(tokens.tolist(), scores.tolist(), strict=True):
            if log_prob > -torch.inf:
                self.finished[entity].append(
                    Hypothesis(words, log_prob / (t + 1) ** alpha, log_prob, finished=False)
                )
