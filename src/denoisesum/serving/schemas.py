"""The request and response bodies (pydantic models), and the error JSON: `ServiceError`, the
`{"error": {...}}` body, and validation errors as a field path and one line per bad field."""

# no `from __future__ import annotations`: the request models are made inside request_models,
# and pydantic must see their field types as objects, not as names of that function's locals

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    StringConstraints,
    model_serializer,
    model_validator,
)

from denoisesum.errors import plain_validation_message
from denoisesum.serving.limits import MAX_ID_CHARS, ServiceLimits

MAX_LISTED_ERRORS = 20


# ---- request bodies -------------------------------------------------------------------------


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("review is empty (or only white space)")
    return text


def _optional(description: str):
    """A field that may be left out or null (None), with its description in the schema."""
    return Field(default=None, description=description)


Stars = Annotated[float, Field(ge=0, le=10)] | None
RATINGS = _optional(
    "Each review's stars (null where unknown), the opinion the summary follows; without them "
    "the model's rating model reads the reviews."
)
Slice = Literal["all", "complaints", "praise"]
SLICE = Field(
    default="all",
    description=(
        "Summarize all reviews, or only the complaints (at most 3 stars) or the praise (at "
        "least 4). A set with no review of the slice gets an empty summary and a warning."
    ),
)


Method = Literal["opinions", "denoisesum"] | None
METHOD = _optional(
    "opinions: every review read, the opinions reviewers share, each sentence attributed to "
    "its reviews; denoisesum: the paper's abstractive summary (beam applies). Default: the "
    "model's."
)
MaxWords = Annotated[int, Field(ge=1, le=1000)] | None
MAX_WORDS = _optional(
    "Words at most; the summary ends at its last sentence end within them (default: the "
    "model's setting)."
)
Beam = Annotated[int, Field(ge=1, le=20)] | None
BEAM = _optional("Beam size, 1 (greedy) to 20 (default: the model's).")
FIRST_PERSON = _optional(
    "The voice: true allows I/me/my (a reviewer's voice), false bans them (default: the "
    "model's setting)."
)


def request_models(limits: ServiceLimits) -> tuple[type[BaseModel], type[BaseModel]]:
    """The request bodies, with the limits in their schema (so /docs shows them)."""
    Review = Annotated[
        StrictStr, StringConstraints(max_length=limits.max_review_chars), AfterValidator(_not_blank)
    ]
    Reviews = Annotated[
        list[Review],
        Field(
            min_length=1,
            max_length=limits.max_reviews,
            description=f"The entity's reviews: 1 to {limits.max_reviews} non-empty texts of at "
            f"most {limits.max_review_chars} characters.",
        ),
    ]

    class RatedReviews(BaseModel):
        reviews: Reviews
        ratings: list[Stars] | None = RATINGS

        @model_validator(mode="after")
        def _one_rating_per_review(self):
            if self.ratings is not None and len(self.ratings) != len(self.reviews):
                raise ValueError(
                    f"ratings has {len(self.ratings)} values for "
                    f"{len(self.reviews)} reviews (one per review, null if "
                    "unknown)"
                )
            return self

    class SummarizeRequest(RatedReviews):
        model_config = ConfigDict(
            extra="forbid",
            json_schema_extra={
                "examples": [
                    {
                        "reviews": [
                            "The ramen was rich and the staff friendly.",
                            "Great broth, but we waited 30 minutes.",
                        ]
                    }
                ]
            },
        )
        method: Method = METHOD
        slice: Slice = SLICE
        max_words: MaxWords = MAX_WORDS
        beam: Beam = BEAM
        first_person: bool | None = FIRST_PERSON

    class ReviewSetIn(RatedReviews):
        model_config = ConfigDict(extra="forbid")
        id: Annotated[StrictStr, StringConstraints(max_length=MAX_ID_CHARS)] | None = Field(
            default=None, description=f"Echoed in the result; at most {MAX_ID_CHARS} characters."
        )

    class BatchRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        sets: list[ReviewSetIn] = Field(
            min_length=1,
            max_length=limits.max_sets,
            description=f"1 to {limits.max_sets} review sets, summarized independently.",
        )
        method: Method = METHOD
        slice: Slice = SLICE
        max_words: MaxWords = MAX_WORDS
        beam: Beam = BEAM
        first_person: bool | None = FIRST_PERSON

    return SummarizeRequest, BatchRequest


# ---- response bodies ------------------------------------------------------------------------


class ReviewSupportOut(BaseModel):
    index: int = Field(description="Position of the review in the request's list.")
    score: float = Field(
        description="IDF-weighted share of the sentence's content words "
        "found in this review (0 to 1)."
    )
    matched: list[str]


class SentenceOut(BaseModel):
    text: str
    start: int = Field(description="Character offset of the sentence in the summary.")
    end: int
    score: float = Field(description="The best review's score.")
    supported: bool
    reviews: list[ReviewSupportOut] = Field(description="Supporting reviews, best first.")
    missing: list[str] = Field(description="Content words found in no review.")
    contradicted: bool = Field(
        default=False,
        description=("The reviews that share its words say the opposite (then not supported)."),
    )
    stars: float | None = Field(default=None, description="The rating model's reading.")


class SupportOut(BaseModel):
    sentences: list[SentenceOut]
    supported_share: float = Field(description="Share of supported sentences.")
    threshold: float = Field(description="A sentence is supported when its score is at least this.")
    contradicted_share: float = Field(default=0.0, description="Share of contradicted sentences.")
    warnings: list[str] = Field(
        default_factory=list,
        description=(
            "Said when most sentences are unsupported (the reviews may be outside the model's "
            "domain)."
        ),
    )


class AttributionOut(BaseModel):
    text: str = Field(description="The summary sentence.")
    aspect: str = Field(description="What its opinion is about, as reviewers name it.")
    polarity: int = Field(description="-1 a complaint, 0 neutral, +1 praise.")
    reviews: list[int] = Field(description="Positions of the reviews holding the opinion.")
    count: int = Field(description="How many distinct reviews hold it.")
    total: int = Field(description="Of how many distinct reviews read.")


ATTRIBUTION = _optional(
    "Each sentence's opinion and the reviews holding it ('4 of 8 reviews'): the opinions "
    "method's answer; absent for the denoisesum method."
)


WARNINGS = Field(
    default_factory=list,
    description=(
        "Why the summary may not come from the reviews: they have no words, or most of their words "
        "are unknown to the model (another language?). Empty when the input is readable."
    ),
)


READ = _optional(
    "How many of the reviews the model read, only when it chose which: more reviews than its "
    "read_reviews setting (by default it reads the most central ones)."
)
TOTAL = _optional("How many reviews it was given, with reviews_read.")


class ReadCounts(BaseModel):
    """reviews_read and reviews_total are left out when they are None (no choice was made),
    attribution when the method gives none."""

    @model_serializer(mode="wrap")
    def _omit_counts_when_all_read(self, handler):
        data = handler(self)
        for key in ("reviews_read", "reviews_total", "attribution"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


class SummarizeResponse(ReadCounts):
    summary: str
    support: SupportOut
    attribution: list[AttributionOut] | None = ATTRIBUTION
    warnings: list[str] = WARNINGS
    reviews_read: int | None = READ
    reviews_total: int | None = TOTAL
    model: str


class BatchResult(ReadCounts):
    id: str | None
    summary: str
    support: SupportOut
    attribution: list[AttributionOut] | None = ATTRIBUTION
    warnings: list[str] = WARNINGS
    reviews_read: int | None = READ
    reviews_total: int | None = TOTAL


class BatchResponse(BaseModel):
    results: list[BatchResult]
    model: str


class FieldError(BaseModel):
    field: str = Field(description="Path into the request body, e.g. sets[1].reviews[0].")
    message: str
    type: str | None = None


class ErrorBody(BaseModel):
    status: int
    message: str = Field(description="One line for people; names the first bad field.")
    field: str | None = Field(description="The first bad field ('body': the whole body).")
    errors: list[FieldError] | None = Field(
        default=None, description="Every bad field (422 only; the first 20)."
    )


class ErrorResponse(BaseModel):
    error: ErrorBody


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": description}
    for status, description in (
        (400, "The body is not valid JSON."),
        (408, "The body stopped arriving (Connection: close)."),
        (413, "The body is larger than this endpoint takes."),
        (415, "The body is not sent as application/json."),
        (422, "A field is missing, of the wrong type, empty, too long, too many or unknown."),
        (
            503,
            "The queue is full, the request waited in it past the timeout, or request "
            "bodies fill the server's buffer (Retry-After).",
        ),
        (504, "Summarizing took longer than the timeout."),
    )
}


# ---- errors ---------------------------------------------------------------------------------


class ServiceError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.field, self.headers = status, message, field, headers


def field_path(loc: Sequence[Any]) -> str:
    """('body', 'sets', 1, 'reviews', 0) -> 'sets[1].reviews[0]'; the whole body: 'body'."""
    parts = list(loc[1:] if loc and loc[0] == "body" else loc)
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def error_response(
    status: int,
    message: str,
    field: str | None = None,
    errors: list[dict] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"status": status, "message": message, "field": field}
    if errors is not None:
        body["errors"] = errors
    return JSONResponse({"error": body}, status_code=status, headers=headers)


def validation_error(exc: RequestValidationError) -> JSONResponse:
    """400 when the body is not JSON at all; else 422 naming every bad field (the first 20)."""
    errors = list(exc.errors())
    for err in errors:
        if err.get("type") == "json_invalid":
            return _invalid_json(err)
    listed = [_field_error(err) for err in errors[:MAX_LISTED_ERRORS]]
    first = listed[0] if listed else {"field": "body", "message": "invalid request"}
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return error_response(
        422, f"{first['field']}: {first['message']}{more}", first["field"], listed
    )


def _invalid_json(err: dict) -> JSONResponse:
    ctx = err.get("ctx") or {}
    where = err.get("loc", ())[-1] if err.get("loc") else None
    detail = plain(str(ctx.get("error", "invalid JSON")))
    at = f" at character {where}" if isinstance(where, int) else ""
    return error_response(400, f"the body is not valid JSON: {detail}{at}", "body")


def unparsable_body(cause: BaseException | None) -> JSONResponse:
    """400 for a body FastAPI could not parse other than as bad JSON syntax (it says only
    "There was an error parsing the body"): the cause in the words the other 400s use."""
    if isinstance(cause, UnicodeDecodeError):
        detail = f"it is not UTF-8 (byte 0x{cause.object[cause.start]:02x} at byte {cause.start})"
    elif isinstance(cause, RecursionError):
        detail = "it is nested too deeply"
    else:
        detail = plain(str(cause)) if cause is not None else "it cannot be parsed"
    return error_response(400, f"the body is not valid JSON: {detail}", "body")


def plain(message: str) -> str:
    """A message without pydantic's prefix ("Value error, review is empty" -> "review is
    empty"), so that every message reads alike."""
    return plain_validation_message({"msg": message})


def _field_error(err: dict) -> dict:
    """One pydantic error as {"field", "message", "type"}, its message in plain words."""
    message = plain_validation_message(err)
    return {"field": field_path(err.get("loc", ())), "message": message, "type": err.get("type")}
