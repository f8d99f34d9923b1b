"""How the DenoiseSum method decodes: the search's settings (beam.SearchConfig, what
`beam_search` reads) and the summary policy (SummaryPolicy: first person, opinion, sides,
contradiction: what the method does around the search), each a frozen value validated once
(config.check / config.build).

A model directory saves both ("summarize": {"search": {...}, "policy": {...}}); per-call options
never change them: `decoding_with` makes a new `Decoding` from them and the options, which is
passed down to the search (as Hugging Face's `generate` takes a GenerationConfig per call).
Every option is a setting by its own name (`option_names()`): max_words, min_words, beam,
first_person, opinion_weight, ...
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from denoisesum.config import Range, at_least, between, build, check_choice
from denoisesum.errors import ConfigError
from denoisesum.inference.beam import SearchConfig
from denoisesum.inference.selection import SELECT_MODES

AGAINST_SCOPES = ("all", "overall", "below-positive", "off")
FIRST_PERSON_WORDS = ("i", "me", "my", "mine", "myself", "i'm")


@dataclass(frozen=True)
class SummaryPolicy:
    """What the DenoiseSum method does around the search: which words it may not say, the
    opinion it steers toward, how it summarizes reviews of both minds, and which candidate
    summary it keeps (inference/opinion.py: contradictions)."""

    # first-person words allowed (False: the `first_person_words` are banned, rt-style summaries)
    first_person: bool = True
    first_person_words: tuple[str, ...] = FIRST_PERSON_WORDS
    # opinion steering (SearchConfig.opinion_weight): steering starts below these stars: an
    # entity whose reviews read at least so is not steered, one below it toward lower stars by
    # (target - opinion_tone) x opinion_weight
    opinion_tone: float = 4.5
    # the most stars steering pulls down (0: no limit): one-star reviews steered by their whole
    # distance from opinion_tone get word salad of complaints ("avoid the puppy, shitty employees")
    opinion_reach: float = 0.0
    # among the finished hypotheses, the best one with no self-contradiction and no clause
    # against the reviews (inference/opinion.py), else the best with its offending sentences cut
    avoid_contradiction: bool = False
    # with avoid_contradiction and a rating model: among the hypotheses, first those whose
    # opinion (the rating model's polarity) is the target's
    follow_opinion: bool = False
    # with avoid_contradiction: reviews of both minds, whose stars lie within mixed_band of 3,
    # get no sweeping verdict on the place ("the best pizza in town", "we will be back"): their
    # summary tells what is good and what is not, and leaves the verdict to the reader; 0: off
    mixed_band: float = 0.0
    # with mixed_band: such reviews, when some praise (>= 4 stars) and some complain (<= 2), are
    # summarized as their praise and their complaints apart, each side in half the words, the
    # side of more reviews first, each opening with whose opinion it is ("Some reviewers praise
    # it: ... Others complain: ...", text.SIDE_OPENINGS): one search over both writes praise
    # and complaints in one breath ("great food ... the food is bland"), and cutting the
    # contradiction leaves one side
    mixed_sides: bool = False
    # with mixed_sides: each side's words in proportion to its reviews (between a third and two
    # thirds of the summary), and openings that say how many reviewers it speaks for ("Most
    # reviewers praise it: ... One reviewer complains: ...", text.SIDE_COUNTED): halves read
    # as a place divided down the middle where one review of eight complains
    side_shares: bool = False
    # with mixed_sides and avoid_contradiction: each side keeps only sentences that take its
    # side: the praise loses a sentence with a complaint in it ("it's a little pricey for the
    # price"), the complaints one with praise (the rating model's polarity of each clause)
    side_polarity: bool = False
    # which clauses against the reviews count there: "all" (on any aspect: "a little pricey"
    # where reviewers call the prices fair), "overall" (a verdict on the place the reviews
    # contradict: "you will not be disappointed" of a one-star business), "below-positive"
    # (every aspect for reviews that read below positive, where praise of what reviewers
    # complain about misleads most; the overall verdict for the others), "off"
    against_reviews: str = "all"
    BOUNDS: ClassVar[dict[str, Range]] = {
        "opinion_tone": between(1, 5, "stars"),
        "opinion_reach": between(0, 4, "stars; 0: no limit"),
        "mixed_band": between(0, 2, "stars either side of 3; 0: off"),
    }

    def validate(self) -> None:
        check_choice("against_reviews", self.against_reviews, AGAINST_SCOPES)


@dataclass(frozen=True)
class Decoding:
    """One call's decoding: the search's settings and the summary policy."""

    search: SearchConfig = field(default_factory=SearchConfig)
    policy: SummaryPolicy = field(default_factory=SummaryPolicy)


@dataclass
class SummarizerConfig:
    """The DenoiseSum method's settings (a model directory's "summarize" section): reading,
    precision, the search and the policy."""

    max_review_tokens: int = 150  # each review is cut to its first words (encoder cost is linear)
    # an entity's first max_reviews reviews are considered (the rest are ignored); the model
    # reads read_reviews of them (all when there are no more), chosen by `select`: "central"
    # (most similar to the others: inference/selection.py), "first", or "random" (seeded)
    max_reviews: int = 1000
    read_reviews: int = 8
    select: str = "central"
    seed: int = 0  # for select = "random"
    # bfloat16 matmuls and LSTMs (torch.autocast): about 2x faster on CPUs with AVX512-BF16
    # or AMX (decoding is bound by reading the 30k-word output layers every step); on CPUs
    # without them fp32, with a warning (models/precision.py); log-probabilities change in the
    # third digit, so a close beam may go another way
    bf16: bool = False
    # on a CPU in fp32, decoding steps read the decoders' weights packed as fp16 and multiply
    # in fp32 (models/packed.py): for a saved model, whose weights are fp16 numbers, the same
    # products up to the order of their sums, with half the memory traffic
    packed_fp16: bool = True
    # decode over the `shortlist` most frequent words plus the input's words (0: the whole
    # vocabulary): cheaper output layers, normalised over fewer words (inference/shortlist.py)
    shortlist: int = 0
    search: SearchConfig = field(default_factory=SearchConfig)  # frozen: see policy.py
    policy: SummaryPolicy = field(default_factory=SummaryPolicy)
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "max_review_tokens": at_least(1),
        "max_reviews": at_least(1),
        "read_reviews": at_least(1),
        "seed": at_least(0),
        "shortlist": at_least(0, "0: every word"),
    }

    def validate(self) -> None:
        for name, ok, why in [
            ("select", self.select in SELECT_MODES, f"must be one of {', '.join(SELECT_MODES)}"),
        ]:
            if not ok:
                value = getattr(self, name)
                raise ConfigError(f"{name}={value!r} {why}", key=name, reason=f"{value!r} {why}")

    @property
    def decoding(self) -> Decoding:
        """The search's settings and the summary policy, as one value."""
        return Decoding(self.search, self.policy)

    def with_settings(self, **settings: Any) -> SummarizerConfig:
        """A copy whose search and policy have these settings (by their names), validated: how
        to set a Summarizer up with other decoding (`summarizer.config = ...`), for every call."""
        parts = split_settings(settings)
        search = build(SearchConfig, {**_plain(self.search), **parts["search"]}, "search.")
        policy = build(SummaryPolicy, {**_plain(self.policy), **parts["policy"]}, "policy.")
        return dataclasses.replace(self, search=search, policy=policy)


SEARCH_KEYS = tuple(f.name for f in dataclasses.fields(SearchConfig))
POLICY_KEYS = tuple(f.name for f in dataclasses.fields(SummaryPolicy))
# the options most callers give first, then every other setting
FIRST_OPTIONS = ("max_words", "min_words", "beam", "first_person", "opinion_weight")


def option_names() -> list[str]:
    """Every per-call decoding option: a setting of the search or the policy by its name."""
    rest = [k for k in SEARCH_KEYS + POLICY_KEYS if k not in FIRST_OPTIONS]
    return [*FIRST_OPTIONS, *rest]


def split_settings(flat: dict[str, Any], where: str = "") -> dict[str, dict[str, Any]]:
    """Settings by their names -> {"search": {...}, "policy": {...}}; an unknown name is a
    ConfigError listing the valid ones."""
    unknown = sorted(k for k in flat if k not in SEARCH_KEYS and k not in POLICY_KEYS)
    if unknown:
        valid = ", ".join(option_names())
        raise ConfigError(
            f"{where}unknown setting {', '.join(map(repr, unknown))}; valid settings: {valid}",
            key=unknown[0],
            reason=f"unknown setting (valid: {valid})",
        )
    return {
        "search": {k: v for k, v in flat.items() if k in SEARCH_KEYS},
        "policy": {k: v for k, v in flat.items() if k in POLICY_KEYS},
    }


def decoding_with(base: Decoding, options: dict[str, Any]) -> Decoding:
    """A new Decoding: `base` with per-call options (option_names(); a None value changes
    nothing), checked by the one validation of each part (config.build). A length cap
    (max_words) ends the summary at its last sentence end within it, and brings min_words down
    to it unless that is given too. A ConfigError names the option as given."""
    valid = option_names()
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(
            f"unknown option {', '.join(map(repr, unknown))}; valid options: {', '.join(valid)}",
            key=unknown[0],
            reason="unknown option",
        )
    changes = {name: value for name, value in options.items() if value is not None}
    if not changes:
        return base
    parts = split_settings(changes)
    cap = changes.get("max_words")
    if isinstance(cap, int) and not isinstance(cap, bool):  # a length cap, never mid-sentence
        parts["search"].setdefault("end_at_sentence", True)
        parts["search"].setdefault("min_words", min(base.search.min_words, cap))
    try:
        search = build(SearchConfig, {**_plain(base.search), **parts["search"]})
        policy = build(SummaryPolicy, {**_plain(base.policy), **parts["policy"]})
    except ConfigError as exc:
        name = (exc.key or "").split(".")[-1]
        raise ConfigError(f"option {name}: {exc.reason}", key=name, reason=exc.reason) from None
    return Decoding(search, policy)


def _plain(value: Any) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


def banned_words(policy: SummaryPolicy, index: dict[str, int]) -> list[int]:
    """Ids of the words the policy bans beyond the specials (index: token -> id)."""
    if policy.first_person:
        return []
    return sorted({index[w] for w in policy.first_person_words if w in index})


# ---- settings saved before the split (a "decode" table) ---------------------------------------

# a setting's earlier name -> its name now
RENAMED = {"beam_size": "beam", "min_length": "min_words", "max_length": "max_words"}
# settings the shipped model never used, removed: each with the value that meant "off"
REMOVED = {
    "input_bonus": 0.0,
    "input_words_only": False,
    "unsaid_penalty": 0.0,
    "rerank": False,
    "subsets": 0,
    "rerank_ngrams": None,  # any value: it only mattered with rerank
}


def migrate_summarize(section: dict[str, Any], where: str = "summarize") -> dict[str, Any]:
    """A "summarize" section as saved before the split (its settings in one "decode" table,
    max_length, block_first_person, ...) in today's form ("search" and "policy" tables); one
    in today's form is returned as it is. A removed setting that is on is a ConfigError."""
    if "decode" not in section:
        return section
    out = {k: v for k, v in section.items() if k != "decode"}
    flat: dict[str, Any] = {}
    for key, value in dict(section["decode"]).items():
        if key in REMOVED:
            off = REMOVED[key]
            if off is not None and value != off:
                raise ConfigError(
                    f"{where}.decode.{key}={value!r}: this setting was removed; only "
                    f"{off!r} (off) is accepted",
                    key=f"{where}.decode.{key}",
                    reason="removed setting",
                )
        elif key == "block_first_person":
            flat["first_person"] = not value
        elif key == "first_person":
            flat["first_person_words"] = value
        else:
            flat[RENAMED.get(key, key)] = value
    parts = split_settings(flat, f"{where}.decode: ")
    for name in ("search", "policy"):
        out[name] = {**parts[name], **dict(section.get(name, {}))}
    return out
