"""The parts of the DenoiseSum model (models/denoisesum.py is the model itself): its config, the
tensor helpers of its attention, copy and loss, the decoding state that beam search carries and
reorders between steps, and the two blocks it is built of (a branch: fusion of one noise kind,
and its decoder). Apart from denoisesum.py so that the model reads top to bottom in one file of
a few hundred lines, with these read as its vocabulary; the design decisions and the shape legend
(B pairs, B* rows while decoding, M memory tokens, S steps, D, H, E, V, K) are that module's
docstring, and every comment here uses them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from denoisesum.config import Range, at_least
from denoisesum.models import packed
from denoisesum.models.bilm import length_mask

EPS = 1e-10  # added to probabilities before the log (see denoisesum.py's docstring)
# some rows of a decoder's output layer, e.g. a vocabulary shortlist: (weight [V', D], bias [V']),
# or those rows packed (models/packed.py)
OutRows = tuple[torch.Tensor, torch.Tensor] | packed.PackedLinear | packed.PackedBlocks


@dataclass
class DenoiseSumConfig:
    """Paper sizes (§4). Each switch removes exactly the parameters of its module."""

    vocab_size: int = 30000  # set from the vocabulary actually built
    embed_dim: int = 300
    hidden_dim: int = 256  # size of s_t (decoder); also of h_k, d_j unless encoder_dim is set
    encoder_dim: int = 0  # units per encoder direction; 0: hidden_dim / 2 (the released code)
    dropout: float = 0.1
    n_topics: int = 100  # discriminator output size: 100 LDA topics for Yelp, 50 for RT
    segment_noise: bool = True  # branch c: denoise + fuse + attention decoder, and the gate
    document_noise: bool = True  # branch d: denoise + fuse + attention/copy decoder, and the gate
    explicit_denoising: bool = True  # off: d̂_j = d_j
    copy: bool = True  # partial copy in decoder d
    discriminator: bool = True  # off: no topic MLP, kl = 0
    coverage: bool = False  # See et al. (2017) coverage in both decoders' attention (phase 2)
    # condition the decoders on the summary's opinion (issue 31; not in the paper): a learned
    # vector per rounded star rating (0 = unknown) added to every decoder input embedding
    opinion: bool = False
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "vocab_size": at_least(5, "the 4 special tokens and a word"),
        "embed_dim": at_least(1),
        "hidden_dim": at_least(1),
        "encoder_dim": at_least(0, "0: hidden_dim / 2"),
        "dropout": Range(0, 1, high_open=True),
        "n_topics": at_least(1),
    }


# ---------------------------------------------------------------------------------------------
# helpers


def group_by_pair(
    values: torch.Tensor, pair: torch.Tensor, n_pairs: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """values [N, ...] of items belonging to pair [N] -> ([B, W, ...], mask [B, W]).

    Items keep their order within a pair; slots past a pair's count are zeros (PAD_ID for ids)
    and False in the mask. W = the largest count, at least 1 so that empty batches still work.
    """
    onehot = F.one_hot(pair, n_pairs)  # [N, B]
    counts = onehot.sum(0)  # [B]
    slot = (onehot.cumsum(0) - 1).gather(1, pair.unsqueeze(1)).squeeze(1)  # [N] rank in its pair
    width = max(1, int(counts.max()))
    out = values.new_zeros((n_pairs, width, *values.shape[1:]))
    return out.index_put((pair, slot), values), length_mask(counts, width)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """Softmax over `dim` restricted to mask (broadcastable); all-masked slices give all zeros
    (not NaN, not uniform), which is what an empty branch needs."""
    scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim) * mask


def copy_distribution(attn: torch.Tensor, src_ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """attn [B, M] over source tokens with ids src_ids [B, M] -> [B, V] copy distribution.

    scatter_add, not an indexed assignment: a word appearing k times in the source gets the sum of
    its k attention weights (the released code kept only one of them).
    """
    return attn.new_zeros(attn.shape[0], vocab_size).scatter_add_(1, src_ids, attn)


def copy_mass_at(attn: torch.Tensor, src_ids: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """copy_distribution gathered at target [B, S], without building [B, S, V]:
    attn [B, S, M], src_ids [B, M] -> [B, S]."""
    hits = src_ids.unsqueeze(1) == target.unsqueeze(2)  # [B, S, M]
    return (attn * hits).sum(-1)


def kl_divergence(p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) per row: p [B, K] (zeros allowed: 0 log 0 = 0), log_q [B, K] finite -> [B]."""
    return (torch.xlogy(p, p) - p * log_q).sum(-1)


def mix(
    p_c: torch.Tensor | None, p_d: torch.Tensor | None, lam: torch.Tensor | None
) -> torch.Tensor:
    """p = λ p_c + (1-λ) p_d; with one branch ablated, that branch's p. Any trailing shape."""
    if p_c is None or p_d is None:
        return p_c if p_d is None else p_d
    return lam * p_c + (1 - lam) * p_d


def generate_or_copy(
    p_vocab: torch.Tensor, copy: torch.Tensor | None, p_gen: torch.Tensor | None
) -> torch.Tensor:
    """Decoder d's p_d = p_gen p_vocab + (1 - p_gen) p_copy (just p_vocab without copy)."""
    return p_vocab if p_gen is None else p_gen * p_vocab + (1 - p_gen) * copy


def _autocast_on(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4: no argument, and the CPU's has its own function
        cpu = device_type == "cpu"
        return torch.is_autocast_cpu_enabled() if cpu else torch.is_autocast_enabled()


def encoder_size(c: DenoiseSumConfig) -> int:
    """H: the size of the encoder's token states h_k and review vectors d_j (both directions)."""
    return 2 * c.encoder_dim if c.encoder_dim else c.hidden_dim


def _rows(x: torch.Tensor | None, index: torch.Tensor) -> torch.Tensor | None:
    return None if x is None else x.index_select(0, index)


def _pad_to(x: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    """x with zeros (False) after its end along `dim`, to `width`."""
    # F.pad's pairs run from the last dimension back: `dim` padded at its end
    return F.pad(x, [0, 0] * (x.dim() - 1 - dim) + [0, width - x.shape[dim]])


# ---------------------------------------------------------------------------------------------
# decoding state


@dataclass
class BranchState:
    """One decoder's state plus the source it attends to; every tensor is batch-first.

    The source (keys, values, mask, ids) is held once per pair, not once per row: row r reads
    pair r // beams. Beam search keeps `beams` rows per pair, and copying a pair's source into
    each of them would make every step read it `beams` times over (reading those [B*, M, H]
    tensors was most of a step's time)."""

    h: torch.Tensor  # [B*, D] decoder hidden s_t (starts at the fused s_0)
    c: torch.Tensor  # [B*, D] decoder cell (starts at 0)
    keys: torch.Tensor  # [A, D, M] W_a h_k of this kind's reviews' tokens (transposed)
    values: torch.Tensor  # [A, M, D(+1)] h_k through the context columns of combine (and copy_gate)
    mask: torch.Tensor  # [A, M] True on real tokens
    ids: torch.Tensor  # [A, M] word ids of those tokens (the copy source)
    present: torch.Tensor  # [B*] bool: the pair has at least one review of this kind
    coverage: torch.Tensor | None = None  # [B*, M] attention summed over past steps (coverage)
    beams: int = 1  # rows per pair: B* = A x beams, a pair's rows consecutive

    def index_select(self, index: torch.Tensor) -> BranchState:
        """Any rows, in any order (one row per index, beams = 1)."""
        pair = index // self.beams if self.beams > 1 else index
        return BranchState(
            _rows(self.h, index),
            _rows(self.c, index),
            _rows(self.keys, pair),
            _rows(self.values, pair),
            _rows(self.mask, pair),
            _rows(self.ids, pair),
            _rows(self.present, index),
            _rows(self.coverage, index),
        )

    def select_beams(
        self, rows: torch.Tensor, pairs: torch.Tensor | None, beams: int
    ) -> BranchState:
        """Beam search's reordering: rows [A' x beams] of the new state, pair-major, each
        pair's rows taken among its own; pairs [A'] the pairs kept, in order (None: all of
        them, and the source is not copied)."""

        def source(x: torch.Tensor) -> torch.Tensor:
            return x if pairs is None else x.index_select(0, pairs)

        return BranchState(
            _rows(self.h, rows),
            _rows(self.c, rows),
            source(self.keys),
            source(self.values),
            source(self.mask),
            source(self.ids),
            _rows(self.present, rows),
            _rows(self.coverage, rows),
            beams,
        )

    def row_ids(self) -> torch.Tensor:
        """[B*, M] the copy source's word ids of every row."""
        return self.ids if self.beams == 1 else self.ids.repeat_interleave(self.beams, 0)

    def joined(self, other: BranchState) -> BranchState:
        """This state's pairs and then other's (the same beams), their sources padded to the
        longer with masked positions, which attention gives weight 0: each pair's step is
        what it was alone (up to the order of float sums)."""
        m = max(self.mask.shape[1], other.mask.shape[1])

        def cat(a: torch.Tensor | None, b: torch.Tensor | None, dim: int = 1):
            if a is None:
                return None
            return torch.cat([_pad_to(a, m, dim), _pad_to(b, m, dim)])

        return BranchState(
            torch.cat([self.h, other.h]),
            torch.cat([self.c, other.c]),
            cat(self.keys, other.keys, dim=2),
            cat(self.values, other.values),
            cat(self.mask, other.mask),
            cat(self.ids, other.ids),
            torch.cat([self.present, other.present]),
            cat(self.coverage, other.coverage),
            self.beams,
        )


@dataclass
class DecodeState:
    """Everything decode_step needs. `index_select` reorders/duplicates rows (beams)."""

    seg: BranchState | None
    doc: BranchState | None
    # [B*, E] the opinion vector added to every decoder input (None: model.opinion is off); the
    # same in every beam of an entity, so beam search may leave it in place while beams move
    opinion: torch.Tensor | None = None

    def index_select(self, index: torch.Tensor) -> DecodeState:
        return DecodeState(
            *(None if b is None else b.index_select(index) for b in (self.seg, self.doc)),
            _rows(self.opinion, index),
        )

    def select_beams(
        self, rows: torch.Tensor, pairs: torch.Tensor | None, beams: int
    ) -> DecodeState:
        """index_select for beam search (BranchState.select_beams): each pair's source stays
        one copy, moved only when pairs leave."""
        return DecodeState(
            *(
                None if b is None else b.select_beams(rows, pairs, beams)
                for b in (self.seg, self.doc)
            ),
            _rows(self.opinion, rows),
        )

    def joined(self, other: DecodeState) -> DecodeState:
        """This state's rows and then other's (BranchState.joined): searches that decode
        together (beam._Search.join)."""
        return DecodeState(
            *(
                None if a is None else a.joined(b)
                for a, b in ((self.seg, other.seg), (self.doc, other.doc))
            ),
            None if self.opinion is None else torch.cat([self.opinion, other.opinion]),
        )

    def with_copy_ids(self, positions: torch.Tensor) -> DecodeState:
        """The copy source's word ids w as positions[w] (a search moved to another output
        space: beam._Search.in_columns); <pad> must stay 0."""
        if self.doc is None:
            return self
        return replace(self, doc=replace(self.doc, ids=positions[self.doc.ids]))


@dataclass
class Fused:
    d_hat: torch.Tensor  # [B, N, H] denoised review vectors, grouped by pair (zeros past count)
    mask: torch.Tensor  # [B, N] True on real reviews
    s0: torch.Tensor  # [B, D] fused state, bridged to the decoder's size when H != D (zeros for a
    # pair with no review of this kind and no bridge)


@dataclass
class DecoderOut:
    states: torch.Tensor  # [B, S, D] LSTM hidden states s_t
    logits: torch.Tensor  # [B, S, V] generation logits
    attn: torch.Tensor  # [B, S, M] attention over the branch's tokens (zeros if none)
    p_gen: torch.Tensor | None  # [B, S] probability of generating rather than copying
    coverage_loss: torch.Tensor | None = None  # [B, S] sum_k min(attn, coverage) (coverage on)


@dataclass
class DecodeParts:
    """Both decoders' outputs over S steps and the gate between them (None: branch ablated)."""

    seg: DecoderOut | None  # decoder c
    doc: DecoderOut | None  # decoder d
    lam: torch.Tensor | None  # [B, S] λ, the weight of p_c (None unless both branches are on)

    def outputs(self) -> list[DecoderOut]:
        return [o for o in (self.seg, self.doc) if o is not None]


# ---------------------------------------------------------------------------------------------
# modules


class Decoder(nn.Module):
    """LSTM with bilinear attention over one branch's tokens, optionally with copy."""

    def __init__(self, c: DenoiseSumConfig, copy: bool) -> None:
        super().__init__()
        d, h = c.hidden_dim, encoder_size(c)
        self.lstm = nn.LSTM(c.embed_dim, d, batch_first=True)
        self.attn = nn.Linear(h, d, bias=False)
        self.combine = nn.Linear(d + h, d)
        self.out = nn.Linear(d, c.vocab_size)
        self.copy_gate = nn.Linear(d + h + c.embed_dim, 1) if copy else None
        # w_c: how much past attention on a token shifts its score; 0 at first, so a second
        # training phase with coverage starts from exactly the model of the first
        self.coverage = nn.Parameter(torch.zeros(())) if c.coverage else None
        self.drop = nn.Dropout(c.dropout)
        # fp16-packed copies of the weights one decoding step reads (pack: inference on a CPU)
        self.packed: dict[str, packed.PackedLinear | None] = {}
        self._packed_versions: tuple[int, ...] = ()

    def forward(
        self, emb: torch.Tensor, st: BranchState, out_rows: OutRows | None = None
    ) -> tuple[DecoderOut, BranchState]:
        """emb [B, S, E] embeddings of w_{t-1} -> per-step outputs and the state after S steps.
        out_rows: rows of the output layer to score instead of the whole vocabulary (V' words)."""
        fast = self._fast(emb)  # read the packed weights (pack)
        states, h, c = self._lstm(emb, st, fast)  # [B, S, D], [B, D], [B, D]
        b, s, d = states.shape
        a, _, m = st.keys.shape  # A pairs, B = A x beams rows
        # a pair's rows (its beams) attend to its source in one matrix product: [A, beams*S, M]
        scores = torch.bmm(states.reshape(a, -1, d), st.keys)
        coverage, coverage_loss = st.coverage, None
        if self.coverage is None:
            attn = masked_softmax(scores, st.mask.unsqueeze(1), dim=-1)  # [A, beams*S, M]
        else:
            attn, coverage_loss, coverage = self._attend_with_coverage(scores.view(b, s, m), st)
            attn = attn.view(a, -1, m)
        # combine and copy_gate read [s_t; ctx_t] through linear maps, and ctx_t = sum_k a_k h_k,
        # so the context's part is the attention over the tokens' values (h_k already mapped):
        # [A, beams*S, M] x [A, M, D(+1)] reads half of what the [.., H] token states would
        mixed = torch.bmm(attn, st.values).view(b, s, -1)  # [B, S, D(+1)]
        attn = attn.view(b, s, m)
        mixed = mixed + self._from_state(states, fast)  # [B, S, D(+1)]
        hidden = self.drop(torch.tanh(mixed[..., :d]))  # [B, S, D]
        # [B, S, V], or [B, S, V'] over the given rows
        logits = self._logits(hidden, out_rows, fast)
        p_gen = None
        if self.copy_gate is not None:
            e = emb.shape[-1]
            p_gen = torch.sigmoid(mixed[..., d] + F.linear(emb, self.copy_gate.weight[0, -e:]))
        new = replace(st, h=h, c=c, coverage=coverage)
        return DecoderOut(states, logits, attn, p_gen, coverage_loss), new

    def pack(self, on: bool = True) -> None:
        """Decode with fp16-packed copies of the LSTM's, the state's and the output layer's
        weights (models/packed.py: the same products, half the memory traffic), outside
        autograd on a CPU, where every one is fp16-exact; off: the fp32 weights. Packed again
        when a weight has changed since."""
        if not on:
            self.packed = {}
        if not on or self._fresh():
            return
        lstm = self.lstm
        w_s, bias = self._state_weights()
        ready = {
            "ih": packed.pack(lstm.weight_ih_l0, lstm.bias_ih_l0),
            "hh": packed.pack(lstm.weight_hh_l0, lstm.bias_hh_l0),
            "state": packed.pack(w_s, bias),
        }
        self.packed = ready if all(ready.values()) else {}
        self._packed_versions = self._versions()

    def _versions(self) -> tuple[int, ...]:
        # read at every step: the modules' own parameter dicts (a Decoder's modules have none
        # of their own), a tenth of the time parameters() takes walking the module tree
        modules = (self, *self._modules.values())
        return tuple(p._version for m in modules for p in m._parameters.values() if p is not None)

    def _fresh(self) -> bool:
        """Packed, and no weight changed in place since (e.g. a training step)."""
        return bool(self.packed) and self._versions() == self._packed_versions

    def _fast(self, x: torch.Tensor) -> bool:
        """Whether this call reads the packed weights: packed and fresh (else unpacked), outside
        autograd and autocast."""
        if not self.packed or torch.is_grad_enabled() or _autocast_on(x.device.type):
            return False
        if not self._fresh():
            self.packed = {}
        return bool(self.packed)

    def _from_state(self, states: torch.Tensor, fast: bool) -> torch.Tensor:
        """combine's (and copy_gate's) part that reads s_t, biases included: [B, S, D(+1)]."""
        if fast:
            return self.packed["state"](states)
        w_s, bias = self._state_weights()
        return F.linear(states, w_s, bias)

    def _logits(self, hidden: torch.Tensor, out_rows: OutRows | None, fast: bool) -> torch.Tensor:
        """The output layer over hidden [B, S, D]: every word's logit, or the given rows'."""
        if isinstance(out_rows, tuple):
            return F.linear(hidden, *out_rows)
        if out_rows is not None:  # packed
            return out_rows(hidden)
        if fast:
            if "out" not in self.packed:  # made at first use: a shortlist never needs it
                self.packed["out"] = packed.pack(self.out.weight, self.out.bias)
            if self.packed["out"] is not None:  # (None: not fp16-exact)
                return self.packed["out"](hidden)
        return self.out(hidden)

    @torch.no_grad()  # decoding's (a shortlist's rows), whatever the caller's grad mode
    def out_rows(self, rows: torch.Tensor) -> OutRows:
        """The output layer's rows `rows` [V'] (vocabulary ids): (weight, bias), or packed where
        this decoder is (pack). Their leading run 0..n-1 (a shortlist's specials and most
        frequent words, in every batch) is packed once and kept: the shortest run seen so far
        (a block of rows gives the same numbers packed alone or with others)."""
        weight, bias = self.out.weight, self.out.bias
        n = int((rows == torch.arange(len(rows), device=rows.device)).cumprod(0).sum())
        if not self._fresh() or not n:  # (never from packs of weights since changed)
            return weight[rows], bias[rows]
        head = self.packed.get("out:head")
        if head is None or head.out_features > n:
            head = self.packed["out:head"] = packed.pack(weight[:n], bias[:n])
        if head is None:  # not fp16-exact
            return weight[rows], bias[rows]
        rest = rows[head.out_features :]
        if not len(rest):
            return head
        tail = packed.pack(weight[rest], bias[rest])
        if tail is None:
            return weight[rows], bias[rows]
        return packed.PackedBlocks([head, tail])

    def source(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The token states memory [A, M, H] as attention keys [A, D, M] and values
        [A, M, D(+1)] (the columns of combine, and of copy_gate, that read the context)."""
        d = self.combine.out_features
        values = F.linear(memory, self._reading(slice(d, d + memory.shape[-1])))
        return self.attn(memory).transpose(1, 2).contiguous(), values

    def _state_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The columns of combine (and copy_gate) that read s_t, and their biases: [D(+1), D]."""
        bias = self.combine.bias
        if self.copy_gate is not None:
            bias = torch.cat([bias, self.copy_gate.bias])
        return self._reading(slice(0, self.combine.out_features)), bias

    def _reading(self, columns: slice) -> torch.Tensor:
        """combine's weights over some of its inputs [s_t; ctx_t], and below them copy_gate's
        over the same ones (its input begins the same): [D(+1), len(columns)]."""
        w = self.combine.weight[:, columns]
        if self.copy_gate is None:
            return w
        return torch.cat([w, self.copy_gate.weight[:, columns]])

    def _lstm(
        self, emb: torch.Tensor, st: BranchState, fast: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The LSTM over emb [B, S, E] from (st.h, st.c): states [B, S, D] and the last h, c.
        One step at inference (beam search) goes through torch's fused LSTM cell: the module's
        oneDNN path costs about 3x as much for one step of 40 rows on a CPU (1.9 ms against
        0.63 ms, benchmarks/decoding_speed.py's machine). The same function, its float sums in
        another order (1e-6), or with fast its packed weights (pack); under autocast the module,
        which autocast knows."""
        one_step = emb.shape[1] == 1 and not torch.is_grad_enabled()
        if one_step and fast:
            h, c = packed.lstm_cell(emb[:, 0], st.h, st.c, self.packed["ih"], self.packed["hh"])
            return h.unsqueeze(1), h, c
        if one_step and not _autocast_on(emb.device.type):
            h, c = torch.lstm_cell(emb[:, 0], (st.h, st.c), *self.lstm._flat_weights)
            return h.unsqueeze(1), h, c
        states, (h, c) = self.lstm(
            emb, (st.h.unsqueeze(0).contiguous(), st.c.unsqueeze(0).contiguous())
        )
        return states, h[0], c[0]

    def _attend_with_coverage(self, scores: torch.Tensor, st: BranchState):
        """Step by step, since each step's attention depends on the earlier ones: score + w_c c_t
        with c_t the attention summed over steps < t; loss_t = sum_k min(a_t, c_t).
        scores [B, S, M] -> attn [B, S, M], coverage loss [B, S], coverage after S steps [B, M]."""
        coverage = st.coverage  # [B, M]
        mask = st.mask.repeat_interleave(st.beams, 0) if st.beams > 1 else st.mask  # [B, M]
        attn, loss = [], []
        for t in range(scores.shape[1]):
            a = masked_softmax(scores[:, t] + self.coverage * coverage, mask, dim=-1)  # [B, M]
            loss.append(torch.minimum(a, coverage).sum(-1))
            attn.append(a)
            coverage = coverage + a
        return torch.stack(attn, 1), torch.stack(loss, 1), coverage


class Branch(nn.Module):
    """Everything one noise kind owns: explicit denoising, fusion and its decoder."""

    def __init__(self, c: DenoiseSumConfig, kind: int, copy: bool) -> None:
        super().__init__()
        h = encoder_size(c)
        self.kind = kind  # SEGMENT or DOCUMENT: it reads the reviews of_kind(review_kind, kind)
        self.denoise = nn.Linear(2 * h, h) if c.explicit_denoising else None
        self.fuse = nn.Linear(h, h)
        # only when the encoder's states differ in size from the decoder's (encoder_dim set)
        self.bridge = nn.Linear(h, c.hidden_dim) if h != c.hidden_dim else None
        self.decoder = Decoder(c, copy)

    def forward(self, d: torch.Tensor, mask: torch.Tensor) -> Fused:
        """d [B, N, H] review vectors of this kind grouped by pair, mask [B, N] -> Fused."""
        m = mask.unsqueeze(-1)  # [B, N, 1]
        d_hat = d
        if self.denoise is not None:
            # q: the mean over this pair's reviews of this kind only, divided by their true count
            q = (d * m).sum(1) / m.sum(1).clamp_min(1)  # [B, H]
            correction = torch.tanh(self.denoise(torch.cat([d, q.unsqueeze(1).expand_as(d)], -1)))
            d_hat = d + correction  # [B, N, H]
        alpha = masked_softmax(self.fuse(d_hat), m, dim=1)  # [B, N, H] a gate per dimension
        s0 = (alpha * d_hat).sum(1)  # [B, H]
        if self.bridge is not None:
            s0 = torch.tanh(self.bridge(s0))  # [B, D]
        return Fused(d_hat, mask, s0)
