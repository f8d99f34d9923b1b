"""The seam a summarizing method plugs into (in the style of sumy's summarizers): what a method
is given (review sets, the call's options), what it answers (a SummaryResult per set), and the
registry of methods by name that the `Summarizer` facade (summarizer.py) chooses from
per call (`method="denoisesum"`; a model directory's config.json names its default).

    class Mine:
        name = "mine"
        def summarize_sets(self, sets, options): ...   # -> list[SummaryResult]

    register_method("mine", lambda summarizer: Mine())   # made at its first use, then kept

Options every method takes (SummaryOptions): slice ("all", "complaints", "praise"), explain,
raw, batch_size, and in `settings` max_words and first_person; a method validates the rest of
`settings` (its own: DenoiseSum's beam, min_words, opinion_weight, ...) and names the valid
ones when one is unknown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from denoisesum.errors import DenoiseSumError

if TYPE_CHECKING:
    from denoisesum.inference.support import Explanation, SupportConfig

# which reviews a summary speaks for: all of them, the complaints (reviews of at most
# COMPLAINT_STARS), or the praise (at least PRAISE_STARS); stars are the given ones, else the
# method's reading of them
SLICES = ("all", "complaints", "praise")
COMPLAINT_STARS, PRAISE_STARS = 3.0, 4.0
# fewer of the reviews' words known than this (to a model's vocabulary, to a corpus's words):
# the reviews are likely in another language, and a method says so
MIN_KNOWN_SHARE = 0.8
# the per-call options every method takes in SummaryOptions.settings
NEUTRAL_SETTINGS = ("max_words", "first_person")


class EmptySliceWarning(UserWarning):
    """No review of a set belongs to the asked slice (no complaint, no praise): no summary."""


class UnreadableInputWarning(UserWarning):
    """The reviews are mostly words the model does not know: its summary is likely invented."""


def empty_slice_message(slice: str) -> str:
    bound = "at most" if slice == "complaints" else "at least"
    stars = COMPLAINT_STARS if slice == "complaints" else PRAISE_STARS
    return f"no review belongs to the {slice} (reviews of {bound} {stars:g} stars): no summary"


def check_slice(slice: str) -> None:
    if slice not in SLICES:
        raise DenoiseSumError(f"slice={slice!r}: must be one of {', '.join(SLICES)}")


def in_slice(stars: Sequence[float], slice: str) -> list[int]:
    """The positions of the reviews a summary of `slice` speaks for, by each review's stars
    (given, else read): all, the complaints or the praise."""
    if slice == "all":
        return list(range(len(stars)))
    if slice == "complaints":
        return [i for i, s in enumerate(stars) if s <= COMPLAINT_STARS]
    return [i for i, s in enumerate(stars) if s >= PRAISE_STARS]


def review_list(reviews: Iterable[str], where: str = "") -> list[str]:
    """Review texts from any iterable (a list, a tuple, a generator, a pandas Series) as a
    list; a lone string, or anything that is not iterable, is an error."""
    if isinstance(reviews, str | bytes) or not isinstance(reviews, Iterable):
        raise DenoiseSumError(
            f"{where}reviews must be a list of review texts, got {type(reviews).__name__} "
            "(a list, a tuple or any iterable of strings)"
        )
    return list(reviews)


def review_set_list(review_sets: Iterable[Iterable[str]]) -> list[list[str]]:
    """Review sets from any iterable of iterables of texts, as lists."""
    if isinstance(review_sets, str | bytes) or not isinstance(review_sets, Iterable):
        raise DenoiseSumError(
            "review_sets must be a list of lists of review texts, got "
            f"{type(review_sets).__name__} (any iterable of iterables of strings)"
        )
    return [review_list(s, f"review set {i}: ") for i, s in enumerate(review_sets)]


@dataclass(frozen=True)
class ReviewInput:
    """One set of reviews to summarize: their texts and, optionally, each one's stars (None
    where unknown)."""

    reviews: list[str]
    ratings: list[float | None] | None = None


@dataclass(frozen=True)
class SummaryOptions:
    """One call's options. settings: max_words, first_person (every method), and the method's
    own (validated by it)."""

    slice: str = "all"
    explain: bool = False  # each sentence's supporting reviews (SummaryResult.explanation)
    support: SupportConfig | None = None  # the thresholds of explain
    raw: bool = False  # the summary as its tokens joined by spaces, not readable text
    batch_size: int = 8  # review sets a method may process together
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Attribution:
    """Where a summary sentence comes from: the reviews holding the opinion it says (their
    positions in the input) and how many they are of how many distinct reviews were read."""

    text: str
    aspect: str  # what the opinion is about, as reviewers name it
    polarity: int  # -1 a complaint, 0 neutral, +1 praise
    reviews: list[int]
    count: int  # distinct reviews holding it (a review posted twice counts once)
    total: int  # distinct reviews read

    @property
    def share(self) -> str:
        """ "12 of 40 reviews"."""
        return f"{self.count} of {self.total} reviews"


@dataclass
class SummaryResult:
    """One review set's summary and what its reader should know: the record that the
    summarize command writes (one line, one row) and the service answers, both only formatting
    it (`to_dict`)."""

    summary: str  # readable text ("" when no review belongs to the slice); tokens with raw=True
    tokens: list[str]  # the tokenized form (lower-cased, PTB clitics: what ROUGE scripts read)
    # why the summary may not come from the reviews: unreadable input, no review of the slice,
    # most sentences unsupported (with explain)
    warnings: list[str] = field(default_factory=list)
    # how many reviews the model read of how many it was given, when it chose which (more
    # than its read_reviews); None when it read them all
    reviews_read: int | None = None
    reviews_total: int | None = None
    explanation: Explanation | None = None  # each sentence's supporting reviews (explain=True)
    # each sentence's opinion and the reviews holding it (methods that say opinions: opinions)
    attribution: list[Attribution] | None = None

    @property
    def support(self) -> dict[str, Any] | None:
        """The explanation as JSON, without the summary it explains; None unless explained."""
        if self.explanation is None:
            return None
        return {k: v for k, v in self.explanation.to_dict().items() if k != "summary"}

    def with_explanation(self, explanation: Explanation) -> SummaryResult:
        """This result with its explanation, whose warnings join the result's."""
        return dataclasses.replace(
            self, explanation=explanation, warnings=self.warnings + explanation.warnings
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON record: summary; reviews_read and reviews_total when the model chose which
        reviews to read; warnings when there are any; support when explained; attribution
        when the method gives it."""
        record: dict[str, Any] = {"summary": self.summary}
        if self.reviews_read is not None:
            record["reviews_read"] = self.reviews_read
            record["reviews_total"] = self.reviews_total
        if self.warnings:
            record["warnings"] = list(self.warnings)
        if self.explanation is not None:
            record["support"] = self.support
        if self.attribution is not None:
            record["attribution"] = [dataclasses.asdict(a) for a in self.attribution]
        return record


class SummarizingMethod(Protocol):
    """A way to summarize review sets."""

    name: str

    def summarize_sets(
        self, sets: Sequence[ReviewInput], options: SummaryOptions
    ) -> list[SummaryResult]:
        """One SummaryResult per set, in order; its warnings said in it, never raised."""
        ...


# name -> how to make the method for a Summarizer (called once, at the method's first use)
MethodFactory = Callable[[Any], SummarizingMethod]
METHODS: dict[str, MethodFactory] = {}


def register_method(name: str, factory: MethodFactory) -> None:
    """Make `name` a method every Summarizer can summarize with (`method=name`)."""
    METHODS[name] = factory


def method_factory(name: str) -> MethodFactory:
    """The factory of the method called `name`; an unknown name lists the valid ones."""
    if name not in METHODS:
        raise DenoiseSumError(
            f"method={name!r}: no such summarizing method (methods: {', '.join(sorted(METHODS))})"
        )
    return METHODS[name]
