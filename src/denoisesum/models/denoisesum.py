"""DenoiseSum summarizer (paper §3.2-3.3; docs/method.md §2).

One training pair is a set of noisy reviews X = X_c ∪ X_d (segment noise, document noise) and the
clean summary y. The model encodes every review with one shared BiLSTM, corrects each review
vector (explicit denoising), fuses the corrected vectors of each noise kind into one state s_0 per
kind, and decodes y with two LSTM decoders started from those states: decoder c attends over the
segment-noise tokens of its pair, decoder d attends over and copies from the document-noise tokens
(segment-noised text is ungrammatical, so it is never copied). A learned gate mixes their word
distributions. A discriminator predicts the summary's topic distribution from the fused states.

Batch layout and builders: data/batch.py (at inference every review is read by both branches).
Its config, tensor helpers, decoding state and blocks (Branch, Decoder): denoisesum_parts.py;
this file is the model, top to bottom.

Design decisions (not fixed by the paper):
- hidden_dim is the decoder's size. By default the encoder's two directions get hidden_dim/2
  each (as in the released code), so h_k and d_j have hidden_dim values and the fused s_0 is
  literally the decoder LSTM's initial hidden state (cell 0). `encoder_dim` sets each direction's
  size instead, so that one language model with LSTMs of hidden_dim units can start both the
  encoder and the decoders (the paper pretrains all of them); s_0 then passes through a learned
  bridge (tanh of a linear map) to the decoder's size.
- Attention is bilinear (s_t^T W_a h_k, Luong et al. 2015) and the decoders do not feed the
  attention context back into the LSTM, so teacher forcing runs each LSTM over the whole summary
  at once and scores all steps with one batched matmul. Additive attention would need a
  [B, S, M, H] tensor, far too big for long multi-review inputs on a CPU.
- Copy is pointer-generator style (See et al. 2017) over the fixed vocabulary, with no extended
  vocabulary for out-of-vocabulary source words: an <unk> in the source can be copied as <unk>,
  and decoding should ban <unk> (as the released code's decoder does).
- A pair with no review of one kind (possible in synthetic data, never at inference) gets a zero
  fused state and zero attention for that branch, and the gate is fixed to the other branch
  (lambda = 1 when it has no document-noise review, 0 when it has no segment-noise review), so its
  distribution is the other branch's, exactly normalised and never NaN. A pair with no review of
  any kind the model uses is an error.
- Probabilities are mixed in probability space (the copy distribution is a sum of attention
  masses, not a softmax) and logged as log(p + EPS): a word whose probability underflows to 0
  costs at most -log(EPS) ≈ 23 nats instead of an infinite loss and a NaN gradient.
- An ablated model ignores the reviews of a noise kind it has no branch for, so one synthetic
  data set serves every ablation. `copy` has no effect without the document branch.
- Opinion (config.opinion, issue 31): the summary's star rating (batch.ratings: 0 unknown,
  1..5) picks a vector o [E] that is added to the embedding of every decoder input word, in
  both decoders, so the gate and the copy gate, which read that embedding, see it too. Its
  table starts at zero: a model fine-tuned from a checkpoint without it starts as that
  checkpoint, and row 0 (unknown) is what a model without opinion computes until trained.

Shapes: B pairs (B* = pairs x beams while decoding), R reviews, T review length, N reviews of one
kind in a pair (max), M tokens of one kind in a pair (max), S summary steps (L + 1), E embed,
D hidden_dim (decoder), H encoder states (2 x encoder_dim; D by default), V vocab, K topics.
"""

from __future__ import annotations

import torch
from torch import nn

from denoisesum.data.batch import BOTH, DOCUMENT, N_OPINIONS, SEGMENT, SummaryBatch, of_kind
from denoisesum.data.vocab import PAD_ID
from denoisesum.errors import ConfigError
from denoisesum.models.bilm import add_boundaries, length_mask, reverse_within_length
from denoisesum.models.denoisesum_parts import (
    EPS,
    Branch,
    BranchState,
    DecodeParts,
    DecoderOut,
    DecodeState,
    DenoiseSumConfig,
    Fused,
    OutRows,
    copy_distribution,
    copy_mass_at,
    encoder_size,
    generate_or_copy,
    group_by_pair,
    kl_divergence,
    mix,
)


class DenoiseSum(nn.Module):
    # weights that start at zero, so that a checkpoint without them loads as the same model
    ZERO_INIT_KEYS = ("opinion.weight",)

    def __init__(self, config: DenoiseSumConfig) -> None:
        super().__init__()
        c = self.config = config
        if not (c.segment_noise or c.document_noise):
            raise ConfigError("model: at least one of segment_noise and document_noise must be on")
        if c.hidden_dim % 2 and not c.encoder_dim:
            raise ConfigError(
                f"model.hidden_dim={c.hidden_dim} must be even (two directions) "
                "unless model.encoder_dim is set"
            )
        if c.encoder_dim < 0:
            raise ConfigError(f"model.encoder_dim={c.encoder_dim} must be >= 0")
        self.embed = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=PAD_ID)
        # two unidirectional LSTMs (like bilm.py), so the BiLM's pretrained directions can be loaded
        self.enc_fwd = nn.LSTM(c.embed_dim, encoder_size(c) // 2, batch_first=True)
        self.enc_bwd = nn.LSTM(c.embed_dim, encoder_size(c) // 2, batch_first=True)
        self.drop = nn.Dropout(c.dropout)
        self.seg = Branch(c, SEGMENT, copy=False) if c.segment_noise else None
        self.doc = Branch(c, DOCUMENT, copy=c.copy) if c.document_noise else None
        both = c.segment_noise and c.document_noise
        self.gate = nn.Linear(c.embed_dim + 2 * c.hidden_dim, 1) if both else None
        n_fused = int(c.segment_noise) + int(c.document_noise)
        self.discriminator = (
            nn.Sequential(
                nn.Linear(n_fused * c.hidden_dim, c.hidden_dim),
                nn.Tanh(),
                nn.Dropout(c.dropout),
                nn.Linear(c.hidden_dim, c.n_topics),
            )
            if c.discriminator
            else None
        )
        # created last and from zeros (no random draw), so that every other module is
        # initialised exactly as without it; zero: the model starts as one without opinion
        self.opinion = (
            nn.Embedding(N_OPINIONS, c.embed_dim, _weight=torch.zeros(N_OPINIONS, c.embed_dim))
            if c.opinion
            else None
        )  # [6, E]: 0 unknown, 1..5 stars

    def branches(self) -> dict[str, Branch]:
        return {name: b for name, b in (("seg", self.seg), ("doc", self.doc)) if b is not None}

    def pack(self, on: bool = True) -> bool:
        """The decoders' step weights packed as fp16 for CPU inference (Decoder.pack), or
        not; True when they are."""
        decoders = [b.decoder for b in self.branches().values()]
        for d in decoders:
            d.pack(on)
        return all(bool(d.packed) for d in decoders)

    # ---- encoder ----------------------------------------------------------------------------

    def encode_reviews(
        self, ids: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids [R, T], lengths [R] -> token states h [R, T, H], review vectors d [R, H]."""
        x = self.drop(self.embed(ids))  # [R, T, E]
        fwd, _ = self.enc_fwd(x)  # [R, T, H/2]; right padding never reaches a real position
        # reversing within each length keeps the padding at the end for the backward pass too
        bwd, _ = self.enc_bwd(reverse_within_length(x, lengths))
        bwd = reverse_within_length(bwd, lengths)  # [R, T, H/2]; bwd[:, t] has read ids[:, t:]
        rows = torch.arange(len(ids), device=ids.device)
        d = torch.cat([fwd[rows, lengths - 1], bwd[:, 0]], dim=-1)  # [R, H]
        return torch.cat([fwd, bwd], dim=-1), d

    def fuse_reviews(
        self, d: torch.Tensor, pair: torch.Tensor, kind: torch.Tensor, n_pairs: int
    ) -> dict[str, Fused]:
        """Review vectors d [R, H] -> explicit denoising and fusion, per noise kind."""
        out = {}
        for name, branch in self.branches().items():
            sel = of_kind(kind, branch.kind)  # [R]
            grouped, mask = group_by_pair(d[sel], pair[sel], n_pairs)  # [B, N, H], [B, N]
            out[name] = branch(grouped, mask)
        return out

    def _memory(
        self, branch: Branch, s0: torch.Tensor, h: torch.Tensor, batch: SummaryBatch
    ) -> BranchState:
        """The tokens of the branch's reviews grouped by pair: its attention source."""
        sel = of_kind(batch.review_kind, branch.kind)  # [R]
        tok = length_mask(batch.review_lengths, h.shape[1]) & sel.unsqueeze(1)  # [R, T]
        tok_pair = batch.review_pair.unsqueeze(1).expand_as(tok)[tok]  # [n_tokens]
        memory, mask = group_by_pair(self.drop(h[tok]), tok_pair, batch.n_pairs)  # [B, M, H]
        ids, _ = group_by_pair(batch.reviews[tok], tok_pair, batch.n_pairs)  # [B, M]
        coverage = memory.new_zeros(mask.shape) if self.config.coverage else None  # [B, M]
        return BranchState(
            s0,
            torch.zeros_like(s0),
            *branch.decoder.source(memory),
            mask,
            ids,
            mask.any(1),
            coverage,
        )

    def _encode(self, batch: SummaryBatch) -> tuple[DecodeState, dict[str, Fused]]:
        batch = self._active_reviews(batch)
        h, d = self.encode_reviews(batch.reviews, batch.review_lengths)  # [R, T, H], [R, H]
        fused = self.fuse_reviews(d, batch.review_pair, batch.review_kind, batch.n_pairs)
        seg = None if self.seg is None else self._memory(self.seg, fused["seg"].s0, h, batch)
        doc = None if self.doc is None else self._memory(self.doc, fused["doc"].s0, h, batch)
        present = torch.stack([s.present for s in (seg, doc) if s is not None]).any(0)  # [B]
        if not bool(present.all()):
            missing = torch.nonzero(~present).flatten().tolist()
            raise ValueError(f"pairs {missing} have no review of a noise kind this model uses")
        return DecodeState(seg, doc, self._opinion_vector(batch)), fused

    def _opinion_vector(self, batch: SummaryBatch) -> torch.Tensor | None:
        """[B, E] the opinion vector of each pair (None without model.opinion); a batch without
        ratings has unknown opinion (class 0) everywhere."""
        if self.opinion is None:
            return None
        ratings = batch.ratings
        if ratings is None:
            ratings = torch.zeros(batch.n_pairs, dtype=torch.long, device=batch.reviews.device)
        if ratings.shape != (batch.n_pairs,):
            raise ValueError(f"batch.ratings must be [{batch.n_pairs}], got {list(ratings.shape)}")
        return self.opinion(ratings)  # [B, E]

    def _active_reviews(self, batch: SummaryBatch) -> SummaryBatch:
        """Drop the reviews of a noise kind whose branch is ablated; check the rest."""
        kinds = [branch.kind for branch in self.branches().values()] + [BOTH]
        keep = torch.isin(batch.review_kind, torch.tensor(kinds, device=batch.reviews.device))
        if bool((batch.review_lengths[keep] < 1).any()):
            raise ValueError("every review needs at least one word")
        if bool(keep.all()):
            return batch
        return SummaryBatch(
            batch.reviews[keep],
            batch.review_lengths[keep],
            batch.review_pair[keep],
            batch.review_kind[keep],
            batch.n_pairs,
            batch.summary,
            batch.summary_lengths,
            batch.topics,
            batch.ratings,
        )

    @torch.no_grad()
    def encode(self, batch: SummaryBatch) -> DecodeState:
        """Inference: the state to start decoding from (feed BOS_ID as the first prev_tokens)."""
        return self._encode(batch)[0]

    # ---- decoder ----------------------------------------------------------------------------

    def _decode(
        self,
        state: DecodeState,
        prev: torch.Tensor,
        rows: tuple[OutRows | None, OutRows | None] = (None, None),
    ) -> tuple[DecodeParts, DecodeState]:
        """prev [B*, S] previous words -> both decoders' outputs and the gate, and new state;
        rows: the output rows of the segment and the document decoder (decode_step's)."""
        seg_rows, doc_rows = rows
        emb = self.embed(prev)  # [B*, S, E]
        if state.opinion is not None:
            emb = emb + state.opinion.unsqueeze(1)  # the same opinion at every step
        emb = self.drop(emb)
        seg = doc = None
        new = DecodeState(None, None, state.opinion)
        if self.seg is not None:
            seg, new.seg = self.seg.decoder(emb, state.seg, seg_rows)
        if self.doc is not None:
            doc, new.doc = self.doc.decoder(emb, state.doc, doc_rows)
        lam = None
        if self.gate is not None:
            gate_in = torch.cat([emb, seg.states, doc.states], dim=-1)  # [B*, S, E+2D]
            lam = torch.sigmoid(self.gate(gate_in)).squeeze(-1)  # [B*, S]
            has_c = state.seg.present.unsqueeze(1)  # [B*, 1]
            has_d = state.doc.present.unsqueeze(1)
            # an empty branch has nothing to say: all weight to the other one
            lam = torch.where(has_c & has_d, lam, has_c.to(lam.dtype))
        return DecodeParts(seg, doc, lam), new

    @torch.no_grad()
    def decode_step(
        self,
        state: DecodeState,
        prev_tokens: torch.Tensor,
        seg_rows: OutRows | None = None,
        doc_rows: OutRows | None = None,
        words: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, DecodeState]:
        """prev_tokens [B*] (BOS_ID first) -> log p(w_t) [B*, V] and the next state, with
        p = λ p_c + (1-λ) p_d.
        With seg_rows and doc_rows (the same V' rows of each decoder's output layer), V is V': the
        distribution over those words only, and state.doc.ids must hold positions among them (a
        shortlist does this). words [B*, V] bool: each row's own words among them (rows with
        shortlists of their own decoded together); the others get p 0.
        """
        parts, new = self._decode(state, prev_tokens.unsqueeze(1), (seg_rows, doc_rows))

        def generated(o: DecoderOut) -> torch.Tensor:  # [B*, V]
            logits = o.logits[:, 0]
            if words is not None:  # (where: one op, and faster than masked_fill here)
                logits = torch.where(words, logits, -torch.inf)
            return torch.softmax(logits, -1)

        lam = None if parts.lam is None else parts.lam[:, 0:1]  # [B*, 1]
        p_c = None if parts.seg is None else generated(parts.seg)  # [B*, V]
        p_d = None
        if parts.doc is not None:
            p_vocab = generated(parts.doc)  # [B*, V]
            p_copy = p_gen = None
            if parts.doc.p_gen is not None:
                v = parts.doc.logits.shape[-1]  # V, or V' with doc_rows
                p_copy = copy_distribution(parts.doc.attn[:, 0], state.doc.row_ids(), v)  # [B*, V]
                p_gen = parts.doc.p_gen[:, 0:1]  # [B*, 1]
            p_d = generate_or_copy(p_vocab, p_copy, p_gen)
        return torch.log(mix(p_c, p_d, lam) + EPS), new

    # ---- training ---------------------------------------------------------------------------

    def _target_prob(
        self, parts: DecodeParts, state: DecodeState, target: torch.Tensor
    ) -> torch.Tensor:
        """p(w_t) at the target words only, target [B, S] -> [B, S]: the same formula as
        decode_step, gathered instead of materialising a mixed [B, S, V] distribution."""

        def vocab_prob(o: DecoderOut) -> torch.Tensor:  # softmax(logits)[target], [B, S]
            log_p = torch.log_softmax(o.logits, -1)  # [B, S, V]
            return log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1).exp()

        p_c = None if parts.seg is None else vocab_prob(parts.seg)
        p_d = None
        if parts.doc is not None:
            copy = copy_mass_at(parts.doc.attn, state.doc.ids, target)  # [B, S]
            p_d = generate_or_copy(vocab_prob(parts.doc), copy, parts.doc.p_gen)
        return mix(p_c, p_d, parts.lam)

    def forward(self, batch: SummaryBatch) -> dict:
        """Teacher-forced losses: loss = nll + kl + coverage; nll (and coverage, the decoders'
        coverage losses summed, 0 without coverage) are means over real target tokens (the
        words and </s>); token_nll [B, S] has -log p per target (0 on padding)."""
        state, fused, parts, target, mask = self.teacher_forced(batch)
        p = self._target_prob(parts, state, target)  # [B, S]
        token_nll = -torch.log(p + EPS) * mask
        n_tokens = int(mask.sum())
        nll = token_nll.sum() / n_tokens
        kl = self._kl(fused, batch.topics) if self.discriminator is not None else nll.new_zeros(())
        coverage = (
            sum(
                (
                    (o.coverage_loss * mask).sum()
                    for o in parts.outputs()
                    if o.coverage_loss is not None
                ),
                nll.new_zeros(()),
            )
            / n_tokens
        )
        return {
            "loss": nll + kl + coverage,
            "nll": nll,
            "kl": kl,
            "coverage": coverage,
            "n_tokens": n_tokens,
            "token_nll": token_nll,
        }

    def teacher_forced(
        self, batch: SummaryBatch
    ) -> tuple[DecodeState, dict[str, Fused], DecodeParts, torch.Tensor, torch.Tensor]:
        """Encode the reviews and run the decoders over the summary fed back word by word:
        (state, fused, parts, target [B, S], mask [B, S] of the real targets: words and </s>)."""
        if batch.summary is None or batch.summary_lengths is None:
            raise ValueError("teacher forcing needs batch.summary and batch.summary_lengths")
        state, fused = self._encode(batch)
        seq = add_boundaries(batch.summary, batch.summary_lengths)  # [B, L+2]
        prev, target = seq[:, :-1], seq[:, 1:]  # [B, S]
        mask = length_mask(batch.summary_lengths + 1, target.shape[1])  # [B, S]
        parts, _ = self._decode(state, prev)
        return state, fused, parts, target, mask

    def topic_log_probs(self, fused: dict[str, Fused]) -> torch.Tensor:
        """log q(z) [B, K] from the fused states [s_c; s_d]."""
        return torch.log_softmax(
            self.discriminator(torch.cat([f.s0 for f in fused.values()], -1)), -1
        )

    def _kl(self, fused: dict[str, Fused], topics: torch.Tensor | None) -> torch.Tensor:
        if topics is None:
            raise ValueError("the discriminator is on but the batch has no topics")
        return kl_divergence(topics, self.topic_log_probs(fused)).mean()
