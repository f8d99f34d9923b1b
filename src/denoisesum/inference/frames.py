"""pandas DataFrames in and out of the Python API (`summarize_frame`): a frame of
reviews, one row each, becomes review sets grouped by entity; the results become a frame of
summaries, one row per entity. pandas is optional (`pip install 'denoisesum[pandas]'`): only
this module imports it, when a frame is summarized.

    reviews:    entity_id | text                      | rating (optional)
                b1        | "The ramen was rich..."   | 5
                b1        | "Slow service, but..."    | 3
    summaries:  entity_id | summary | reviews_read | reviews_total | warnings (| support)

    from denoisesum.inference.frames import summarize_frame
    summaries = summarize_frame(summarizer, reviews, entity="business_id", text="text")
"""

from __future__ import annotations

from typing import Any

from denoisesum.errors import DenoiseSumError

COLUMNS = ("summary", "reviews_read", "reviews_total", "warnings")


def pandas():
    """The pandas module, or a one-line hint to install it."""
    try:
        import pandas as pd
    except ImportError:
        raise DenoiseSumError(
            "DataFrames need pandas, which is not installed: pip install "
            "'denoisesum[pandas]' (or pip install pandas)"
        ) from None
    return pd


def frame_review_sets(
    frame: Any, entity: str, text: str, rating: str | None
) -> tuple[list[Any], list[list[str]], list[list[float | None]] | None]:
    """(entity ids, their review texts, their stars or None) of a frame of reviews, entities
    in order of their first review, each one's reviews in frame order. A missing column, or a
    text that is not a string (NaN, a number), is an error naming it and the row."""
    pd = pandas()
    if not isinstance(frame, pd.DataFrame):
        raise DenoiseSumError(
            f"summarize_frame takes a pandas DataFrame, got {type(frame).__name__}"
        )
    for option, column in (("entity", entity), ("text", text), ("rating", rating)):
        if column is not None and column not in frame.columns:
            known = ", ".join(map(str, frame.columns))
            raise DenoiseSumError(
                f"{option}={column!r}: the frame has no such column (columns: {known})"
            )
    not_text = ~frame[text].map(lambda value: isinstance(value, str))
    if not_text.any():
        row = frame.index[not_text.to_numpy().argmax()]
        value = frame.at[row, text]
        raise DenoiseSumError(f"row {row!r}, column {text!r}: a review must be text, got {value!r}")
    ids, sets, stars = [], [], []
    for key, group in frame.groupby(entity, sort=False, dropna=False):
        ids.append(key)
        sets.append(group[text].tolist())
        if rating is not None:
            stars.append([None if pd.isna(v) else float(v) for v in group[rating]])
    return ids, sets, (stars if rating is not None else None)


def results_frame(entity: str, ids: list[Any], results: list, explain: bool) -> Any:
    """One row per entity: the entity column, then COLUMNS (reviews_read and reviews_total as
    nullable integers: empty when every review was read), and support with `explain`."""
    pd = pandas()
    columns = [entity, *COLUMNS, *(["support"] if explain else [])]
    rows = [
        [
            key,
            r.summary,
            r.reviews_read,
            r.reviews_total,
            list(r.warnings),
            *([r.support] if explain else []),
        ]
        for key, r in zip(ids, results, strict=True)
    ]
    out = pd.DataFrame(rows, columns=columns)
    for column in ("reviews_read", "reviews_total"):
        out[column] = out[column].astype("Int64")
    return out


def summarize_frame(
    summarizer: Any,
    frame: Any,
    entity: str = "entity_id",
    text: str = "text",
    rating: str | None = None,
    explain: bool = False,
    **options: Any,
) -> Any:
    """A pandas DataFrame of reviews (one row each: its entity, its text, optionally its
    stars) -> a DataFrame of summaries by `summarizer` (a Summarizer), one row per entity in
    order of its first review: the entity column, summary, reviews_read, reviews_total (empty
    when every review was read), warnings (a list), and support (a dict) with `explain`.
    options: those of Summarizer.summarize_results (slice, batch_size, max_words, ...)."""
    ids, sets, stars = frame_review_sets(frame, entity, text, rating)
    results = summarizer.summarize_results(sets, stars, explain, **options)
    return results_frame(entity, ids, results, explain)
