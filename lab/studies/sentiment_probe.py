"""How positive the model's summaries read against their reviews, and whether steering the words
toward the reviews' tone helps, on the DEV set (issue 14):

    python -m lab.studies.sentiment_probe denoisesum-yelp ../shared/data/yelp/meansum_dev.jsonl \
        --corpus '../shared/data/yelp/corpus/part-0[0-3].jsonl.xz' \
        --probes "s5:strength=5,center='summaries';r10:strength=10,center='reviews'" \
        [--lexicon runs/sentiment/lexicon.json] [--json runs/sentiment/dev.json] [--markdown FILE]

The tone of a text is its estimated star rating from a word-rating lexicon fit on the rated
reviews of `--corpus` (lab/studies/sentiment_lexicon.py; cached in `--lexicon`). The tone table
gives, per decoding, the mean estimated rating of the summaries, of their input reviews and of
the human summaries, and R1 by the reviews' estimated rating (thirds of the dev set).

A probe is `name:key=value,...` (values TOML) with these keys:
  strength = s   every step, word w's log-probability gets s · (t_e − c) · weight(w), then the
                 distribution is renormalized: t_e is the mean lexicon weight of entity e's input
                 words, so its low-rated words are pushed up where the reviews read worse than c
  center = "summaries" | "reviews"   c: the mean of t over the unsteered summaries (every
                 entity is pushed toward its reviews' tone) or over the dev reviews (each entity
                 away from the dev set's average tone)
Rows, paired tests and the resuming JSON file are those of lab/studies/_harness.py. Dev only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import emit, parse_variants
from denoisesum.data.batch import SummaryBatch
from denoisesum.data.corpus import CorpusReader
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.data.vocab import SPECIALS
from denoisesum.inference.beam import DecodeStateLike, DecodingModel
from denoisesum.inference.shortlist import ShortlistModel
from denoisesum.io import write_json
from denoisesum.models.bilm import length_mask
from denoisesum.summarizer import Summarizer
from lab.studies._harness import (
    ProbeSummarizer,
    check_keys,
    dev_parser,
    measure_rows,
    paired_tests,
    run_variant,
    table,
    unchanged,
)
from lab.studies.sentiment_lexicon import RatingLexicon

PROBE_KEYS = ("strength", "center")
CENTERS = ("summaries", "reviews")


def mean_nonzero(values: torch.Tensor) -> float:
    """Mean of the non-zero entries (the words the lexicon knows); 0.0 when there are none."""
    known = values[values != 0]
    return float(known.mean()) if len(known) else 0.0


@dataclass
class SteeredState:
    inner: DecodeStateLike
    bias: torch.Tensor  # [B*, V'] added to the word log-probs

    def index_select(self, index: torch.Tensor) -> SteeredState:
        return SteeredState(self.inner.index_select(index), self.bias.index_select(0, index))


class SteeredModel:
    """The beam-search protocol over `model` with each entity's words biased toward its
    reviews' tone (the module docstring's `strength`)."""

    def __init__(
        self, model: DecodingModel, weights: torch.Tensor, strength: float, center: float
    ) -> None:
        self.model, self.weights, self.strength, self.center = model, weights, strength, center
        # the weights of what the model scores: shortlist positions or the whole vocabulary
        self.out_weights = weights[model.rows] if isinstance(model, ShortlistModel) else weights

    def encode(self, batch: SummaryBatch) -> SteeredState:
        real = length_mask(batch.review_lengths, batch.reviews.shape[1])  # [R, T]
        mine = [batch.review_pair == b for b in range(batch.n_pairs)]  # [R] each
        tone = torch.tensor(
            [  # [B] mean weight of each entity's input words (vocabulary ids)
                mean_nonzero(self.weights[batch.reviews[rows][real[rows]]]) for rows in mine
            ]
        )
        bias = self.strength * (tone - self.center)[:, None] * self.out_weights[None, :]
        return SteeredState(self.model.encode(batch), bias.to(batch.reviews.device))

    def decode_step(
        self, state: SteeredState, prev_tokens: torch.Tensor, words: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, SteeredState]:
        """words [B*, V'] bool: each row's own words (sets decoded together)."""
        log_probs, inner = self.model.decode_step(state.inner, prev_tokens, words=words)
        return torch.log_softmax(log_probs + state.bias, -1), SteeredState(inner, state.bias)


def vocab_tone(weights: torch.Tensor, vocab, texts: list[str]) -> list[float]:
    """Per tokenized text (tokens joined by spaces), the mean weight of its known tokens."""
    return [mean_nonzero(weights[[vocab.index.get(t, 0) for t in text.split()]]) for text in texts]


def load_lexicon(path: Path, corpus: list[str]) -> RatingLexicon:
    if path.exists():
        return RatingLexicon.load(path)
    if not corpus:
        raise SystemExit(f"--corpus is needed to build the lexicon ({path} does not exist)")
    reviews = CorpusReader(corpus)
    lexicon = RatingLexicon.fit((r.text, r.rating) for r in reviews if r.rating is not None)
    lexicon.save(path)
    return lexicon


def accuracy(lexicon: RatingLexicon, heldout: list[str], n: int = 20_000) -> str:
    """How well the lexicon's estimates track the stars of `n` held-out rated reviews."""
    if not heldout:
        return ""
    rated = list(
        islice(((r.text, r.rating) for r in CorpusReader(heldout) if r.rating is not None), n)
    )  # reads no further than it needs
    guess = np.array([lexicon.rating(t) for t, _ in rated])
    stars = np.array([r for _, r in rated])
    return (
        f"The lexicon on {len(rated):,} held-out rated reviews: Pearson r "
        f"{np.corrcoef(guess, stars)[0, 1]:.2f} with their stars, mean absolute error "
        f"{np.abs(guess - stars).mean():.2f} stars (predicting the mean for all: "
        f"{np.abs(lexicon.mean - stars).mean():.2f}).\n\n"
    )


def tone_table(rows: dict[str, dict], lexicon: RatingLexicon, sets: list) -> str:
    """Mean estimated ratings per decoding, and R1 by the reviews' estimated rating."""
    inputs = np.array([lexicon.rating(" ".join(s.reviews)) for s in sets])
    refs = np.mean([lexicon.rating(s.summaries[0]) for s in sets])
    cuts = np.quantile(inputs, [1 / 3, 2 / 3])
    third = np.digitize(inputs, cuts)  # 0: the lowest-rated third of the dev reviews
    lines = [
        f"Estimated ratings (lexicon mean {lexicon.mean:.2f}, {len(lexicon.weights):,} "
        f"words): input reviews {inputs.mean():.2f}, human summaries {refs:.2f}. R1 by "
        f"the reviews' estimated rating: thirds of the dev set, cut at {cuts[0]:.2f} and "
        f"{cuts[1]:.2f}.",
        "",
        "| decoding | summaries' rating | corr. with reviews' | R1 low third | R1 middle | "
        "R1 high third |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name, row in rows.items():
        tone = np.array([lexicon.rating(t) for t in row["summaries"]])
        r1 = np.array(row["per_entity"]["rouge1"])
        parts = " | ".join(f"{r1[third == k].mean():.2f}" for k in range(3))
        lines.append(
            f"| {name} | {tone.mean():.2f} | {np.corrcoef(tone, inputs)[0, 1]:.2f} | {parts} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = dev_parser(__doc__.splitlines()[0])
    parser.add_argument("--probes", default="")
    parser.add_argument("--corpus", nargs="*", default=[], help="rated review files or globs")
    parser.add_argument(
        "--heldout",
        nargs="*",
        default=[],
        help="rated review files the lexicon was not fit on: its accuracy there",
    )
    parser.add_argument("--lexicon", type=Path, default=Path("runs/sentiment/lexicon.json"))
    parser.add_argument("--json", type=Path, default=Path("runs/sentiment/dev.json"))
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    args = parser.parse_args()
    probes = parse_variants(args.probes)
    for probe in probes.values():
        check_probe(probe)
    sets = list(read_review_sets(args.dev))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    lexicon = load_lexicon(args.lexicon, args.corpus)
    summarizer = ProbeSummarizer.from_pretrained(args.model)
    weights = torch.tensor(lexicon.token_weights(summarizer.vocab.tokens))
    weights[: len(SPECIALS)] = 0.0  # the specials carry no tone
    base = summarizer.config
    rows = json.loads(args.json.read_text()) if args.json.exists() else {}

    def measure(probe: dict) -> dict:
        summarizer.wrap = steering(probe, weights, summarizer, sets, rows)
        return run_variant(summarizer, base, sets, {})

    measure_rows(rows, probes, args.json, measure)
    paired_tests(rows)
    write_json(args.json, rows)
    corpus = " ".join(f"'{c}'" for c in args.corpus)
    command = (
        f"python -m lab.studies.sentiment_probe {args.model} {args.dev} --corpus {corpus} "
        f'--probes "{args.probes}" --lexicon {args.lexicon} --json {args.json}'
    )
    if args.heldout:
        command += " --heldout " + " ".join(f"'{h}'" for h in args.heldout)
    emit(
        f"# Sentiment probe (dev set)\n\n```bash\n{command}\n```\n\n"
        + accuracy(lexicon, args.heldout)
        + table(rows, args.model, args.dev, len(sets))
        + "\n"
        + tone_table(rows, lexicon, sets),
        args.markdown,
    )


def check_probe(probe: dict) -> None:
    """A bad probe is one line, before any work."""
    check_keys(probe, PROBE_KEYS)
    center = probe.get("center", "summaries")
    if center not in CENTERS:
        raise SystemExit(f"--probes: center must be one of {', '.join(CENTERS)}, not {center!r}")


def steering(probe: dict, weights: torch.Tensor, summarizer: Summarizer, sets: list, rows: dict):
    """The wrap of one probe (the identity for an empty one)."""
    check_probe(probe)
    if not probe:
        return unchanged
    center = probe.get("center", "summaries")
    texts = (
        rows["base"]["summaries"]
        if center == "summaries"
        else [
            " ".join(
                t for r in summarizer.encode_reviews(s.reviews) for t in summarizer.vocab.decode(r)
            )
            for s in sets
        ]
    )
    c = float(np.mean(vocab_tone(weights, summarizer.vocab, texts)))
    strength = float(probe.get("strength", 0))
    return lambda model: SteeredModel(model, weights, strength, c)


if __name__ == "__main__":
    main()
