"""`ServiceLimits`: what the service accepts (request sizes, time limits, queue length), and the
request body limits they imply. Apart from the app, so that the app, its routes and its schemas
all read it without importing one another in a circle. Checked like every settings dataclass
(`denoisesum.config.check`): each setting against BOUNDS, then `validate()` for one setting
against another."""

from dataclasses import dataclass
from typing import ClassVar

from denoisesum.config import Range, above, at_least
from denoisesum.errors import ConfigError

MAX_ID_CHARS = 256  # a batch set's id (bounded so that the body limit can be sized)

# sizing the body limits (ServiceLimits.body_limits)
ESCAPED_CHAR_BYTES = 12  # the most one character can take in JSON: an escaped surrogate pair
REVIEW_OVERHEAD = 32  # a review's quotes, comma, line break and indentation
SET_OVERHEAD = 128  # a set's keys, brackets and indentation
BODY_SLACK = 4096  # the rest: the top-level keys, brackets and white space


@dataclass
class ServiceLimits:
    max_reviews: int = 100  # reviews in one set (the model reads read_reviews of them)
    max_review_chars: int = 5000  # characters in one review
    max_sets: int = 16  # review sets in one batch request
    timeout_s: float = 60.0  # a request waiting or running longer gets a 503/504
    max_batch_sets: int = 8  # review sets decoded together in one summarize_batch call
    max_pending_sets: int = 64  # review sets waiting for the model; more: 503 at once
    max_body_bytes: int | None = None  # a cap on every endpoint's body limit (body_limits())
    max_buffered_bytes: int | None = None  # request bodies held at once, all requests together
    #   (None: the largest body limit); a body that would pass it gets 503
    header_timeout_s: float = 10.0  # a request head must arrive within this of its first byte
    body_timeout_s: float = 10.0  # a body that stalls this long gets 408
    # each setting's valid values (config.py checks them; None is no value)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "max_reviews": at_least(1),
        "max_review_chars": at_least(1),
        "max_sets": at_least(1),
        "timeout_s": above(0),
        "max_batch_sets": at_least(1),
        "max_pending_sets": at_least(1),
        "max_body_bytes": at_least(1024),
        "max_buffered_bytes": at_least(1),
        "header_timeout_s": above(0),
        "body_timeout_s": above(0),
    }

    def validate(self) -> None:
        """One setting against another (each one's range: BOUNDS): a full batch request must
        fit in the queue and in the bytes held at once."""
        if self.max_pending_sets < self.max_sets:
            why = (
                f"{self.max_pending_sets} must be at least max_sets ({self.max_sets}): a full "
                "batch request must fit"
            )
            raise ConfigError(f"max_pending_sets {why}", key="max_pending_sets", reason=why)
        largest = max(self.body_limits().values())
        if self.max_buffered_bytes is not None and self.max_buffered_bytes < largest:
            why = (
                f"{self.max_buffered_bytes:,} must be at least the largest body limit "
                f"({largest:,}): a full batch request must fit"
            )
            raise ConfigError(f"max_buffered_bytes {why}", key="max_buffered_bytes", reason=why)

    def body_limits(self) -> dict[str, int]:
        """The largest request body per endpoint, in bytes: room for the largest request the
        limits allow, however a JSON encoder writes it (capped by max_body_bytes).

        A review may hold max_review_chars characters as pydantic counts them, in code points.
        Escaped, as encoders write non-ASCII by default (Python's json.dumps), a character takes
        up to 12 bytes: "\\ud83d\\ude00" for one astral character (a UTF-16 surrogate pair, two
        6-byte escapes); a character of the Basic Multilingual Plane takes at most 6 ("\\u00e9"),
        and unescaped UTF-8 at most 4. So a review takes max_review_chars * 12 bytes, plus
        REVIEW_OVERHEAD for its quotes, comma, line break and indentation (pretty-printed JSON);
        a set adds its id (MAX_ID_CHARS escaped characters) and keys, and every body BODY_SLACK
        for the rest. Any other path takes BODY_SLACK (no endpoint reads a body there)."""
        review = self.max_review_chars * ESCAPED_CHAR_BYTES + REVIEW_OVERHEAD
        one_set = self.max_reviews * review
        batch_set = one_set + MAX_ID_CHARS * ESCAPED_CHAR_BYTES + SET_OVERHEAD
        limits = {
            "/v1/summarize": one_set + BODY_SLACK,
            "/v1/summarize/batch": self.max_sets * batch_set + BODY_SLACK,
        }
        if self.max_body_bytes is not None:
            limits = {path: min(limit, self.max_body_bytes) for path, limit in limits.items()}
        return limits

    def buffer_limit(self) -> int:
        """Bytes of request bodies held at once, all requests together."""
        if self.max_buffered_bytes is not None:
            return self.max_buffered_bytes
        return max(self.body_limits().values())
