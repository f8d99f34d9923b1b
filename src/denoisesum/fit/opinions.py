"""What the opinions method reads in a fitted model directory (opinions/method.py): the corpus's
aspect lexicon and a rating model. `--from` brings the base model's rating model, whose aspects
are joined with the corpus's; without it, a corpus with stars trains a rating model of its own
(the `denoisesum rating` model on a sample), so a user's own model can say opinions too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from denoisesum.io import write_json
from denoisesum.models.rating import REPORT_FILENAME, RatingModel, find_rating_model
from denoisesum.opinions.aspects import FILENAME as ASPECTS
from denoisesum.opinions.aspects import (
    Lexicon,
    build_lexicon,
    evaluative_words,
    merge_lexicons,
    sample_reviews,
)

ASPECT_REVIEWS_PER_ENTITY, ASPECT_REVIEWS = 12, 100_000  # reviews read for the lexicon
RATED_REVIEWS = 50_000  # rated reviews sampled to train a rating model on, a tenth held out
MIN_RATED = 200  # fewer rated reviews (or one star value only): no rating model of its own


def own_rating_model(reader, out: Path, seed: int = 0) -> RatingModel | None:
    """A rating model trained on the corpus's own stars, saved in `out` with its report; None
    when the corpus has too few rated reviews, or all of one rating."""
    from dataclasses import asdict

    from denoisesum.training.rating import rated_sample, train_rating_model

    rated = rated_sample(reader, RATED_REVIEWS, seed)
    if len(rated) < MIN_RATED or len({round(stars) for _, stars in rated}) < 2:
        return None
    held = len(rated) // 10
    model, report = train_rating_model(rated[held:], rated[:held])
    model.save(out)
    write_json(out / REPORT_FILENAME, asdict(report))
    return model


def make_opinion_parts(reader, base_dir: Path | None, out: Path) -> tuple[str, dict[str, Any]]:
    """The aspect lexicon (and, without a base model, a rating model) in `out`."""
    rating = find_rating_model(base_dir) if base_dir is not None else None
    trained = False
    if rating is None:
        rating = own_rating_model(reader, out)
        trained = rating is not None
    reviews = sample_reviews(reader, ASPECT_REVIEWS_PER_ENTITY, ASPECT_REVIEWS)
    lexicon = build_lexicon(reviews, evaluative_words(rating) if rating is not None else [])
    if base_dir is not None and (base_dir / ASPECTS).is_file():
        lexicon = merge_lexicons(lexicon, Lexicon.load(base_dir))
    lexicon.save(out)
    said = "; a rating model trained on the corpus's stars" if trained else ""
    if rating is None:
        said = "; no rating model (the corpus has too few stars): the model keeps denoisesum"
    return (
        f"{len(lexicon.terms):,} aspects, from {len(reviews):,} reviews of "
        f"{lexicon.entities:,} entities{said}",
        {"aspects": len(lexicon.terms), "reviews": len(reviews), "own_rating": trained},
    )
