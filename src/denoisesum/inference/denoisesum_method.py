"""The DenoiseSum method (docs/method.md): a trained DenoiseSum model, its vocabulary, and the
settings it summarizes with (SummarizerConfig: reading, precision, the search and the summary
policy), behind the method interface of inference/methods.py. `Summarizer`
(summarizer.py) is its public facade.

A model directory (format and checks: models/store.py) of kind "denoisesum" may carry, beside
"kind" and "model", the settings to summarize with:

    config.json         {"kind": "denoisesum", "model": {...},
                         "summarize": {"max_review_tokens": 150, "read_reviews": 8,
                                       "search": {beam.SearchConfig fields},
                                       "policy": {policy.SummaryPolicy fields}}}

"summarize" is optional: absent keys take the SummarizerConfig defaults; one saved before the
search and the policy were apart (a "decode" table) is read as today's (policy.migrate_summarize).

Many reviews: the model reads at most `read_reviews` (8, the size of the sets it was trained on)
of an entity's reviews, by default the most central ones (`select`; inference/selection.py);
`reviews_read(reviews)` says which, `read_count(len(reviews))` how many, and `reading_fields`
what the summarize command and the service report (reviews_read, reviews_total).

Per call nothing here changes: `summarize_sets` makes the call's Decoding (policy.decoding_with)
and passes it down to the search, so threads may share one method.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path

import regex
import torch

from denoisesum.data.batch import inference_batch
from denoisesum.data.tokenizer import detokenize
from denoisesum.data.vocab import SPECIALS, Vocab
from denoisesum.errors import ConfigError, DenoiseSumError, InputError
from denoisesum.inference.beam import beam_search
from denoisesum.inference.constraints import WordLists
from denoisesum.inference.keep import consistent, end_at_sentence
from denoisesum.inference.methods import (
    MIN_KNOWN_SHARE,
    ReviewInput,
    SummaryOptions,
    SummaryResult,
    check_slice,
    empty_slice_message,
    in_slice,
    review_list,
)
from denoisesum.inference.policy import (
    Decoding,
    SummarizerConfig,
    banned_words,
    decoding_with,
    migrate_summarize,
)
from denoisesum.inference.selection import select_reviews
from denoisesum.inference.shortlist import ShortlistModel, shortlist_rows
from denoisesum.inference.sides import Sides, mixed_sides, side_plans
from denoisesum.inference.support import Explanation, SupportConfig
from denoisesum.inference.support import explain as explain_support
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.models.precision import resolve_device, use_bf16
from denoisesum.models.rating import RatingModel
from denoisesum.models.store import CONFIG, load_denoisesum, parse_section
from denoisesum.text import is_content_word

# An entity's reviews are flagged when fewer than this share of their words (tokens with a
# letter or digit) are in the model's vocabulary, or when they have no word at all. The MeanSum
# Yelp dev entities have 94-100% (median 99.4%); French reviews about 57%, German 41%, Spanish
# 43%, Chinese 0% (benchmarks/readability.py; docs/results/readability.md).
_HAS_WORD = regex.compile(r"[\p{L}\p{N}]")

# per entity to decode: its reviews' ids, the stars its summary should convey, its sides
Entity = tuple[list[list[int]], float | None, Sides | None]


def load_model(directory: str | Path) -> tuple[DenoiseSum, Vocab, SummarizerConfig]:
    """Read a model directory (format: models/store.py): the model in eval mode, its
    vocabulary and the summarizing settings saved with it (config.json's "summarize")."""
    model, vocab, config = load_denoisesum(directory)
    path = Path(directory) / CONFIG
    try:
        section = migrate_summarize(config.get("summarize", {}))
    except ConfigError as exc:
        raise InputError(exc.reason, path=path, field=exc.key or "summarize") from None
    return model, vocab, parse_section(SummarizerConfig, section, path, "summarize")


class DenoiseSumMethod:
    """The DenoiseSum method: a model, its vocabulary, and the settings to summarize with
    (`config`). device: "cpu", "auto" (the GPU when PyTorch sees one, else the CPU), "cuda" or
    "cuda:N"; on a GPU decoding runs in float16 autocast unless `half` is set to False."""

    name = "denoisesum"

    def __init__(
        self,
        model: DenoiseSum,
        vocab: Vocab,
        config: SummarizerConfig | None = None,
        device: str | torch.device = "cpu",
    ) -> None:
        self.device = resolve_device(device)
        # float16 autocast on a GPU: about half the memory traffic of the output layers; a
        # close beam may go another way than in fp32 (tests/test_device.py measures how often)
        self.half = self.device.type == "cuda"
        self.model = model.eval().to(self.device)
        self.vocab = vocab
        self.config = config or SummarizerConfig()
        self._classes: tuple[list[int], list[int], set[int]] | None = None  # _word_classes
        self._content_ids: torch.Tensor | None = None  # _word_classes' content words, a tensor
        self._bf16_ok: bool | None = None  # whether this device computes bf16 (_bf16)
        # how many stars a text reads as (the model directory's rating.npz): the reviews'
        # opinion when no stars are given, opinion steering and the contradiction checks
        self.rating: RatingModel | None = None
        self._pull: torch.Tensor | None = None  # [V] each word's pull on the stars (_word_pull)

    # ---- the method interface ---------------------------------------------------------------

    def decoding(self, settings: Mapping[str, object] | None = None) -> Decoding:
        """The Decoding of a call: the model's search and policy with the call's settings
        (policy.option_names(); an unknown one, or one out of range, is a ConfigError naming
        it). A new value: nothing of this method changes."""
        return decoding_with(self.config.decoding, dict(settings or {}))

    def summarize_sets(
        self, sets: Sequence[ReviewInput], options: SummaryOptions
    ) -> list[SummaryResult]:
        """One SummaryResult per set: the summary, its warnings (input_warnings; no review of
        the slice), reviews_read/reviews_total, and with options.explain each sentence's
        supporting reviews."""
        decoding = self.decoding(options.settings)
        check_slice(options.slice)
        tokens, empty = self.summary_tokens(sets, options.slice, decoding, options.batch_size)
        results = []
        for review_set, words, no_slice in zip(sets, tokens, empty, strict=True):
            reviews = review_set.reviews
            said = self.input_warnings(reviews)
            if no_slice:
                said.append(empty_slice_message(options.slice))
            text = " ".join(words) if options.raw else detokenize(words)
            result = SummaryResult(text, words, said, **self.reading_fields(len(reviews)))
            if options.explain:
                result = result.with_explanation(
                    self.evidence(reviews, result.summary, options.support)
                )
            results.append(result)
        return results

    def evidence(
        self, reviews: Sequence[str], summary: str, config: SupportConfig | None = None
    ) -> Explanation:
        """Which of the reviews support each sentence of `summary`, with scores (method and
        thresholds in `denoisesum.inference.support`)."""
        return explain_support(
            review_list(reviews), summary, self.vocab.tokenizer, config, self.rating
        )

    # ---- input ------------------------------------------------------------------------------

    def encode_reviews(self, reviews: Sequence[str], where: str = "") -> list[list[int]]:
        """Review texts -> the word ids the model reads: the reviews of `reviews_read`, each cut
        to max_review_tokens words."""
        encoded = self._encode_all(reviews, where)
        return [encoded[i] for i in self._select(encoded)]

    def reviews_read(self, reviews: Sequence[str]) -> list[int]:
        """Indices (into `reviews`, ascending) of the reviews the model reads: all of the first
        max_reviews when there are at most read_reviews, else read_reviews of them chosen by
        `config.select` (inference/selection.py)."""
        return self._select(self._encode_all(reviews))

    def read_count(self, total: int) -> int:
        """How many of `total` reviews the model reads (len(reviews_read), without reading)."""
        return min(total, self.config.max_reviews, self.config.read_reviews)

    def reading_fields(self, total: int) -> dict[str, int]:
        """{"reviews_read": n, "reviews_total": total} when the model chooses which of `total`
        reviews to read (more than read_reviews among the first max_reviews), else {}: what
        the summarize command and the service add to a summary."""
        if min(total, self.config.max_reviews) <= self.config.read_reviews:
            return {}
        return {"reviews_read": self.read_count(total), "reviews_total": total}

    def _select(self, encoded: list[list[int]]) -> list[int]:
        return select_reviews(
            encoded, self.config.read_reviews, self.config.select, self.config.seed
        )

    def _encode_all(self, reviews: Sequence[str], where: str = "") -> list[list[int]]:
        """Review texts -> word ids, cut to max_reviews reviews of max_review_tokens words."""
        reviews = review_list(reviews, where)
        if not reviews:
            raise DenoiseSumError(f"{where}no reviews to summarize")
        out = []
        for i, text in enumerate(reviews[: self.config.max_reviews]):
            if not isinstance(text, str):
                raise DenoiseSumError(f"{where}review {i} is a {type(text).__name__}, not text")
            tokens = self.vocab.tokenizer.tokenize(text)[: self.config.max_review_tokens]
            if not tokens:
                raise DenoiseSumError(f"{where}review {i} is empty")
            out.append(self.vocab.encode(tokens))
        return out

    def known_share(self, reviews: Sequence[str]) -> float | None:
        """The share of the words the model considers (tokens with a letter or digit, of the
        first max_reviews reviews, whichever of them it reads) that its vocabulary knows; None
        when there is no word at all."""
        tokens = [
            t
            for text in list(reviews)[: self.config.max_reviews]
            if isinstance(text, str)
            for t in self.vocab.tokenizer.tokenize(text)[: self.config.max_review_tokens]
        ]
        words = [t for t in tokens if _HAS_WORD.search(t)]
        return sum(t in self.vocab.index for t in words) / len(words) if words else None

    def input_warnings(self, reviews: Sequence[str]) -> list[str]:
        """Why the model may not be able to read these reviews (empty: nothing to say): no
        words at all (punctuation, emoji, invisible characters), or fewer than MIN_KNOWN_SHARE
        of the words it reads known to its vocabulary (another language, say)."""
        known = self.known_share(reviews)
        if known is None:
            return [
                "the reviews have no words (only punctuation, symbols or invisible "
                "characters): the summary cannot come from them"
            ]
        if known < MIN_KNOWN_SHARE:
            return [
                f"only {known:.0%} of the reviews' words are known to the model (below "
                f"{MIN_KNOWN_SHARE:.0%}; another language?): the summary is likely "
                "invented"
            ]
        return []

    # ---- summarizing ------------------------------------------------------------------------

    # inference mode, not only no_grad: each of a decoding step's few hundred small ops skips
    # autograd's bookkeeping (version counters, views' metadata): 1.13x the CPU time of steps
    # of 4 short review sets, as the service takes (docs/results/service.md)
    @torch.inference_mode()
    def summary_tokens(
        self,
        sets: Sequence[ReviewInput],
        slice: str,
        decoding: Decoding,
        batch_size: int = 8,
    ) -> tuple[list[list[str]], list[bool]]:
        """Tokenized summaries (lower-cased, PTB clitics: what ROUGE scripts expect), one per
        review set, decoded `batch_size` entities at a time, and per set whether no review of
        it belonged to the slice (no summary). A set's ratings: each review's stars (None
        where unknown), the opinion the summary follows; slice: "all", "complaints" or
        "praise" (methods.SLICES), the reviews the summary speaks for."""
        kept_sets, stars = [], []
        for i, review_set in enumerate(sets):
            kept, kept_stars = self.slice_reviews(
                review_set.reviews, review_set.ratings, slice, f"review set {i}: "
            )
            kept_sets.append(kept)
            stars.append(kept_stars)
        # a set with no review of the slice is skipped; an empty set is an error
        todo = [i for i, kept in enumerate(kept_sets) if kept or slice == "all"]
        entities: list[Entity] = []
        for i in todo:
            ids = self._encode_all(kept_sets[i], f"review set {i}: ")  # encode_reviews, keeping
            read = self._select(ids)  # which reviews it reads for their stars
            texts = [kept_sets[i][j] for j in read]
            read_stars = [stars[i][j] for j in read]
            target = self.target_stars(texts, read_stars)
            sides = None
            if slice == "all":
                sides = mixed_sides(
                    target,
                    decoding.policy,
                    functools.partial(self._given_or_read, texts, read_stars),
                )
            entities.append(([ids[j] for j in read], target, sides))
        out: list[list[str]] = [[] for _ in sets]
        found = self._decode_sides(entities, batch_size, decoding)
        for i, tokens in zip(todo, found, strict=True):
            out[i] = tokens
        return out, [not kept and slice != "all" for kept in kept_sets]

    def _decode_sides(
        self, entities: list[Entity], batch_size: int, decoding: Decoding
    ) -> list[list[str]]:
        """Per entity (its reviews' ids, target stars, _mixed_sides): _decode's summary, or for
        reviews of both minds the summaries of each side, each in its share of the words
        (_side_plans), joined."""
        whole = [e for e, (_, _, sides) in enumerate(entities) if sides is None]
        found = self._decode(
            [entities[e][0] for e in whole], batch_size, decoding, [entities[e][1] for e in whole]
        )
        out: list[list[str]] = [[] for _ in entities]
        for e, tokens in zip(whole, found, strict=True):
            out[e] = tokens
        split = [e for e, (_, _, sides) in enumerate(entities) if sides is not None]
        if not split:
            return out
        sides = [side for e in split for side in entities[e][2]]
        reviews = [[entities[e][0][j] for j in side[1]] for e in split for side in entities[e][2]]
        plans = [
            p
            for e in split
            for p in side_plans(entities[e][2], len(entities[e][0]), decoding.policy)
        ]
        side_tokens: list[list[str]] = [[] for _ in sides]
        search = decoding.search
        for share in sorted({share for _, share in plans}):  # one decode per share of the words
            todo = [i for i, (_, s) in enumerate(plans) if s == share]
            low, high = int(search.min_words * share), max(1, int(search.max_words * share))
            # a side's length cap, never mid-sentence (as the per-call max_words)
            side_search = dataclasses.replace(
                search, min_words=low, max_words=high, end_at_sentence=True
            )
            summaries = self._decode(
                [reviews[i] for i in todo],
                batch_size,
                Decoding(side_search, decoding.policy),
                [sides[i][2] for i in todo],
                side=True,
            )
            for i, tokens in zip(todo, summaries, strict=True):
                side_tokens[i] = tokens
        pairs = iter(zip((opening for opening, _ in plans), side_tokens, strict=True))
        for e in split:
            (first_opening, first), (second_opening, second) = next(pairs), next(pairs)
            if first and second:
                first, second = first_opening + first, second_opening + second
            out[e] = first + second
        return out

    # ---- opinion ----------------------------------------------------------------------------

    def slice_reviews(
        self,
        reviews: Sequence[str],
        stars: Sequence[float | None] | None,
        slice: str,
        where: str = "",
    ) -> tuple[list[str], list[float | None]]:
        """The reviews (and their stars) a summary of `slice` speaks for; no reviews when none
        belongs to it."""
        check_slice(slice)
        reviews = review_list(reviews, where)
        stars = list(stars) if stars is not None else [None] * len(reviews)
        if len(stars) != len(reviews):
            raise DenoiseSumError(
                f"{where}{len(stars)} ratings for {len(reviews)} reviews "
                "(one per review, None where unknown)"
            )
        if slice == "all":
            return list(reviews), stars
        if self.rating is None and None in stars:
            raise DenoiseSumError(
                f"slice={slice!r} needs every review's stars, or a model "
                "with a rating model (rating.npz) to read them"
            )
        read = self._given_or_read(reviews, stars)
        keep = in_slice(read, slice)
        return [reviews[i] for i in keep], [read[i] for i in keep]

    def _given_or_read(self, reviews: Sequence[str], stars: Sequence[float | None]) -> list[float]:
        """Each review's stars: the given ones, else the rating model's reading."""
        return [
            s if s is not None else self.rating.star(r) for r, s in zip(reviews, stars, strict=True)
        ]

    def target_stars(self, reviews: Sequence[str], stars: Sequence[float | None]) -> float | None:
        """The opinion a summary of these reviews should convey: their mean stars when every
        one is given, else the rating model's mean reading (None without a rating model)."""
        if stars and None not in stars:
            return sum(stars) / len(stars)
        return None if self.rating is None else float(self.rating.stars(reviews).mean())

    def _word_pull(self) -> torch.Tensor:
        """[V] each content word's pull on the stars, scaled so that the 99th percentile of
        its size is 1 (opinion_weight is then in nats per star of difference). Function words
        ("not", "no", "but") pull nothing: alone they push a summary toward "not bad", whose
        opinion is the opposite of the word's."""
        if self._pull is None:
            weights = self.rating.word_weights()
            content = set(self._word_classes()[0])
            pull = torch.tensor(
                [
                    weights.get(w, 0.0) if i in content else 0.0
                    for i, w in enumerate(self.vocab.tokens)
                ]
            )
            scale = float(pull.abs()[pull != 0].quantile(0.99)) if bool(pull.any()) else 1.0
            self._pull = (pull / scale).clamp(-1, 1)
        return self._pull

    def _word_classes(self) -> tuple[list[int], list[int], set[int]]:
        """(content words, sentence ends, ids the input-overlap score ignores) of the
        vocabulary: content words are alphabetic non-stopwords; ignored are the specials and
        tokens with no letter or digit."""
        if self._classes is None:
            tokens = self.vocab.tokens
            content = [i for i, w in enumerate(tokens) if i >= len(SPECIALS) and is_content_word(w)]
            ends = [self.vocab.index[w] for w in (".", "!", "?") if w in self.vocab.index]
            ignore = {
                i
                for i, w in enumerate(tokens)
                if i < len(SPECIALS) or not any(ch.isalnum() for ch in w)
            }
            self._classes = content, ends, ignore
        return self._classes

    def _content_tensor(self) -> torch.Tensor:
        """_word_classes' content words as a tensor (computed once)."""
        if self._content_ids is None:
            self._content_ids = torch.tensor(self._word_classes()[0])
        return self._content_ids

    def _decode(
        self,
        encoded: list[list[list[int]]],
        batch_size: int,
        decoding: Decoding,
        targets: list[float | None] | None = None,
        side: bool = False,
    ) -> list[list[str]]:
        """Per entity, the best hypothesis; with policy.avoid_contradiction, the best that
        neither contradicts itself nor the reviews (keep.consistent). targets: per entity, the
        stars the summary should convey (None: unknown); side: as in keep.consistent."""
        targets = targets or [None] * len(encoded)
        found = self._search(encoded, batch_size, decoding, targets)
        out = []
        for reviews, cands, target in zip(encoded, found, targets, strict=True):
            if not cands:
                out.append([])
            elif decoding.policy.avoid_contradiction and self.rating is not None:
                texts = [" ".join(self.vocab.decode(r)) for r in reviews]
                out.append(
                    consistent(
                        lambda i, cands=cands: self.vocab.decode(cands[i]),
                        len(cands),
                        0,
                        texts,
                        target,
                        decoding.policy,
                        self.rating,
                        side,
                    )
                )
            elif decoding.search.end_at_sentence:  # a summary stopped at max_words mid-sentence
                out.append(end_at_sentence(self.vocab.decode(cands[0])))
            else:
                out.append(self.vocab.decode(cands[0]))
        return out

    def _bf16(self) -> bool:
        """config.bf16 where this device computes bf16 (else fp32, with one warning)."""
        if self.config.bf16 and self._bf16_ok is None:
            self._bf16_ok = use_bf16(self.device, "bf16 decoding")
        return self.config.bf16 and bool(self._bf16_ok)

    def _autocast(self) -> torch.autocast:
        """The precision of decoding: bfloat16 with config.bf16 (where the device has it),
        else float16 on a GPU (`half`), else fp32."""
        if self._bf16():
            return torch.autocast(self.device.type, torch.bfloat16)
        half = self.half and self.device.type == "cuda"
        return torch.autocast(self.device.type, torch.float16, enabled=half)

    def warm(self) -> None:
        """Do now what the first summary would do once and keep: the vocabulary's word classes,
        the rating model's word pull, and the decoders' weights packed as fp16 (with a
        shortlist, the output layers' rows every shortlist starts with). The service calls it
        once, before its requests share the method, and before the processes of `serve
        --workers` fork (the packed weights take about 10 MiB, read at every step)."""
        self._word_classes()
        if self.config.shortlist:
            self._content_tensor()
        if self.rating is not None:
            self._word_pull()
        if self.model.pack(self._packing()) and self.config.shortlist:
            no_reviews = torch.empty(0, 0, dtype=torch.long, device=self.device)
            rows = shortlist_rows(no_reviews, self.config.shortlist, len(self.vocab))
            for branch in self.model.branches().values():
                branch.decoder.out_rows(rows)  # packs them, and keeps them (the "out:head")

    def _packing(self) -> bool:
        return self.config.packed_fp16 and self.device.type == "cpu" and not self._bf16()

    def _search(
        self,
        sources: list[list[list[int]]],
        batch_size: int,
        decoding: Decoding,
        targets: list[float | None] | None = None,
    ) -> list[list[list[int]]]:
        """Beam search over each review set: its hypotheses' word ids, best first. targets:
        the stars each summary should convey (the opinion of an opinion model, the steering
        of search.opinion_weight; None: unknown)."""
        targets = targets or [None] * len(sources)
        self.model.pack(self._packing())
        content, ends, _ = self._word_classes()
        if self.config.shortlist:  # a tensor: shortlist positions are looked up, not listed
            content = self._content_tensor()
        lists = WordLists(banned_words(decoding.policy, self.vocab.index), content, ends)
        out: list[list[list[int]]] = []
        for start in range(0, len(sources), batch_size):
            wanted = targets[start : start + batch_size]
            batch = inference_batch(sources[start : start + batch_size], wanted).to(self.device)
            model, words, ids, allowed = self.model, lists, list, None
            if self.config.shortlist:
                rows = shortlist_rows(batch.reviews, self.config.shortlist, len(self.vocab))
                model = ShortlistModel(self.model, rows)
                words = WordLists(
                    *(
                        model.positions(x)
                        for x in (lists.banned, lists.content, lists.sentence_ends)
                    )
                )
                ids = model.vocab_ids
                if batch.n_pairs > 1:  # each entity over its own shortlist, as alone
                    allowed = model.entity_words(batch, self.config.shortlist)
            bias = self._bias(wanted, model, decoding)
            with self._autocast():
                found = beam_search(
                    model, batch, decoding.search, words=words, bias=bias, allowed=allowed
                )
            out.extend([ids(h.tokens) for h in hyps] for hyps in found)
        return out

    def _bias(self, targets: list[float | None], model, decoding: Decoding) -> torch.Tensor | None:
        """[B, V] opinion steering: min(0, target - opinion_tone) x each word's pull (at most
        opinion_reach stars down), in the search's output space (a ShortlistModel's
        positions); None when off or nothing to steer. Only downward: the model's own voice is
        already positive (its summaries read 4.3-4.6 stars whatever the reviews), so reviews
        that read at least opinion_tone are summarized as the model would without steering."""
        policy = decoding.policy
        if (
            not decoding.search.opinion_weight
            or self.rating is None
            or all(t is None for t in targets)
        ):
            return None
        reach = policy.opinion_reach or float("inf")
        shift = torch.tensor(
            [
                max(-reach, min(0.0, t - policy.opinion_tone)) if t is not None else 0.0
                for t in targets
            ]
        )
        pull = self._word_pull()
        if isinstance(model, ShortlistModel):
            pull = pull[model.rows.cpu()]
        return (shift.unsqueeze(1) * pull.unsqueeze(0)).to(self.device)  # [B, V]
