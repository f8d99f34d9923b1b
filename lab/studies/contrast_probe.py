"""Context-aware (contrastive) decoding on the DEV set (issue 14), each probe paired against the
model's own decoding:

    python -m lab.studies.contrast_probe denoisesum-yelp ../shared/data/yelp/meansum_dev.jsonl \
        --null-from ../shared/data/yelp/corpus/part-15.jsonl.xz \
        [--null-count 8] [--null-words 40 120] --probes "a0.5:alpha=0.5,plausible=0.1;a1:alpha=1" \
        [--null runs/contrast/null.json] [--json runs/contrast/dev.json] [--markdown FILE] \
        [--generic]

The model's summaries say what every business's reviews say ("great food, friendly staff"): its
decoders lean on what they learned of reviews in general more than on the reviews they are given.
Context-aware decoding (Shi et al. 2024, "Trusting Your Evidence") scores each step's word w by
how much more likely the entity's reviews x make it than a context that says nothing in
particular, x0:

    score(w) = (1 + alpha) log p(w | x, y<t) - alpha log p(w | x0, y<t), renormalized

x0 is a "null" review set: `--null-count` reviews (of `--null-words` words) of as many
different businesses of `--null-from` (a corpus file the model may have trained on: it is an
input, not a target), the same for every entity, kept in `--null` so a run is reproducible. Its
summary is the model's generic summary, so dividing by it removes the generic. The plausibility
cut (Li et al. 2023, "Contrastive Decoding") keeps the contrast from promoting words the model
itself finds unlikely: words with p(w | x) < plausible * max_w p(w | x) are ruled out (the max
over the words the search may produce: not <unk>, which the model can copy).

A probe is `name:key=value,...` (values TOML) with keys `alpha` (0: the model's own decoding)
and `plausible` (0: no cut; the cut alone decodes no null). `--generic` adds a row that gives
every entity the model's summary of the null reviews, and for scale the ROUGE of another
business's human summary. Rows (each kept with a hash of the null reviews), paired tests and
the resuming JSON file are those of lab/studies/_harness.py. Dev only. Each step runs the
decoders twice, so decoding costs about twice the model's own.

Measured with the shipped Yelp model (lab/results/archive/contrastive.md): the summaries name what
their reviews name (the dish, the clerk) and say fewer words no review says, and dev ROUGE falls
with alpha (R1 -1.2 at 0.25, -3.7 at 0.5): the generic sentences it removes are the ones the
human summaries share. Not a shipped setting.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import torch

from benchmarks.common import emit, parse_variants
from denoisesum.data.batch import SummaryBatch, inference_batch
from denoisesum.data.corpus import CorpusReader
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.data.vocab import EOS_ID, SPECIALS, UNK_ID
from denoisesum.errors import DenoiseSumError
from denoisesum.evaluation.rouge import rouge_f1_per_entity
from denoisesum.inference.beam import DecodeStateLike, DecodingModel
from denoisesum.inference.shortlist import ShortlistModel
from denoisesum.io import write_json
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

PROBE_KEYS = ("alpha", "plausible")


@dataclass
class ContrastState:
    inner: DecodeStateLike  # the decoders reading the entity's reviews
    null: DecodeStateLike | None  # the same decoders reading the null reviews (None: alpha 0)

    def index_select(self, index: torch.Tensor) -> ContrastState:
        null = None if self.null is None else self.null.index_select(index)
        return ContrastState(self.inner.index_select(index), null)


class ContrastModel:
    """The beam-search protocol over `model` with each step's words scored against what the
    model says after `null_reviews` (word ids) instead (the module docstring's score)."""

    def __init__(
        self, model: DecodingModel, null_reviews: list[list[int]], alpha: float, plausible: float
    ) -> None:
        self.model, self.null_reviews = model, null_reviews
        self.alpha, self.log_plausible = alpha, math.log(plausible) if plausible > 0 else None

    def encode(self, batch: SummaryBatch) -> ContrastState:
        inner = self.model.encode(batch)
        if self.alpha == 0:  # the cut alone needs no null
            return ContrastState(inner, None)
        null = self._encode_null(inference_batch([self.null_reviews]).to(batch.reviews.device))
        return ContrastState(
            inner,
            null.index_select(  # one row per entity
                torch.zeros(batch.n_pairs, dtype=torch.long, device=batch.reviews.device)
            ),
        )

    def _encode_null(self, null: SummaryBatch) -> DecodeStateLike:
        """The null's state. Over a shortlist, the encoder reads the null's own words (the
        shortlist need not hold them: it is the entity's), and copying a word off the shortlist
        lands on <unk>, which the search never produces."""
        if not isinstance(self.model, ShortlistModel):
            return self.model.encode(null)
        state = self.model.model.encode(null)
        if state.doc is not None:
            position = self.model.position[state.doc.ids]  # -1 off the shortlist
            state.doc = dataclasses.replace(
                state.doc, ids=position.where(position >= 0, torch.full_like(position, UNK_ID))
            )
        return state

    def decode_step(
        self, state: ContrastState, prev_tokens: torch.Tensor, words: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, ContrastState]:
        """prev_tokens [B*] -> contrasted log p(w_t) [B*, V'], next states. words [B*, V']
        bool: each row's own words (sets decoded together over a shortlist)."""
        given, inner = self.model.decode_step(state.inner, prev_tokens, words=words)  # [B*, V']
        scores, null = given, None
        if state.null is not None:
            # the models' log(p + EPS) keeps both finite: no -inf - -inf = nan to guard against
            generic, null = self.model.decode_step(state.null, prev_tokens, words=words)
            scores = (1 + self.alpha) * given - self.alpha * generic
        if self.log_plausible is not None:  # against the most likely word the search may produce
            producible = given.clone()
            producible[:, : len(SPECIALS)] = float("-inf")
            producible[:, EOS_ID] = given[:, EOS_ID]
            floor = producible.max(-1, keepdim=True).values + self.log_plausible  # [B*, 1]
            scores = scores.masked_fill(given < floor, float("-inf"))
        return torch.log_softmax(scores, -1), ContrastState(inner, null)


class ConstantSummarizer:
    """Stands in for a Summarizer in `run_variant`: the same summary for every review set."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.config = tokens, None

    def summarize_tokens_batch(self, review_sets, batch_size: int = 8) -> list[list[str]]:
        return [self.tokens] * len(review_sets)


def other_references(sets: list) -> str:
    """For scale beside the `generic` row: rouge-score F1 of another business's human summary,
    the mean over every ordered pair of businesses (their first references)."""
    refs = [s.summaries[0] for s in sets]
    if len(refs) < 2:
        return ""
    scores = rouge_f1_per_entity(
        [h for i in range(len(refs)) for j, h in enumerate(refs) if j != i],
        [[r] for i, r in enumerate(refs) for _ in range(len(refs) - 1)],
    )
    means = " / ".join(f"{sum(v) / len(v):.2f}" for v in scores.values())
    return (
        f"\nAnother business's human summary, scored against each business's (the mean over "
        f"its {len(scores['rouge1']):,} ordered pairs), has R1/R2/RL {means}.\n"
    )


def pick_null(
    paths: list[str],
    count: int,
    seed: int = 0,
    pool: int = 20_000,
    words: tuple[int, int] = (40, 120),
) -> list[str]:
    """`count` reviews of `count` different businesses, drawn at random (seeded) among the
    first `pool` reviews of `paths` that have between words[0] and words[1] words."""
    fitting = [
        r for r in islice(CorpusReader(paths), pool) if words[0] <= len(r.text.split()) <= words[1]
    ]
    random.Random(seed).shuffle(fitting)
    chosen: dict[str, str] = {}
    for review in fitting:
        chosen.setdefault(review.entity_id, review.text)
        if len(chosen) == count:
            return list(chosen.values())
    raise SystemExit(
        f"--null-from: fewer than {count} businesses with reviews of "
        f"{words[0]}-{words[1]} words in the first {pool:,} reviews"
    )


def load_null(path: Path, sources: list[str], count: int, words: tuple[int, int]) -> list[str]:
    """The null reviews kept in `path`, else `count` picked from `sources` and kept there."""
    if path.exists():
        try:
            texts = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise SystemExit(f"{path}: not a JSON list of review texts ({err})") from None
        if not (isinstance(texts, list) and texts and all(isinstance(t, str) for t in texts)):
            raise SystemExit(f"{path}: not a JSON list of review texts")
        return texts
    if not sources:
        raise SystemExit(f"--null-from is needed to pick the null reviews ({path} does not exist)")
    if count < 1:
        raise SystemExit(f"--null-count must be at least 1, not {count}")
    texts = pick_null(sources, count, words=tuple(words))
    write_json(path, texts)
    return texts


def probe_values(probe: dict) -> tuple[float, float]:
    """A probe's (alpha, plausible), checked: a bad one is one line, before any work."""
    check_keys(probe, PROBE_KEYS)
    try:
        alpha, plausible = float(probe.get("alpha", 0)), float(probe.get("plausible", 0))
    except (TypeError, ValueError):
        raise SystemExit(f"--probes: alpha and plausible must be numbers ({probe})") from None
    if not (math.isfinite(alpha) and alpha >= 0 and 0 <= plausible < 1):
        raise SystemExit(f"--probes: alpha must be a number >= 0 and plausible in [0, 1) ({probe})")
    return alpha, plausible


def contrast(probe: dict, null_ids: list[list[int]]):
    """The wrap of one probe (the identity when alpha and plausible are both 0)."""
    alpha, plausible = probe_values(probe)
    if alpha == 0 and plausible == 0:
        return unchanged
    return lambda model: ContrastModel(model, null_ids, alpha, plausible)


def main() -> None:
    parser = dev_parser(__doc__.splitlines()[0])
    parser.add_argument("--probes", required=True)
    parser.add_argument("--null-from", nargs="*", default=[], help="corpus files or globs")
    parser.add_argument("--null-count", type=int, default=8)
    parser.add_argument(
        "--null-words",
        type=int,
        nargs=2,
        default=(40, 120),
        metavar=("MIN", "MAX"),
        help="the null reviews' length in words",
    )
    parser.add_argument("--null", type=Path, default=Path("runs/contrast/null.json"))
    parser.add_argument("--json", type=Path, default=Path("runs/contrast/dev.json"))
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument(
        "--generic",
        action="store_true",
        help="also a row `generic`: the model's summary of the null reviews, "
        "given for every entity (what the contrast divides out, alone)",
    )
    args = parser.parse_args()
    probes = parse_variants(args.probes)
    for probe in probes.values():
        probe_values(probe)
    sets = list(read_review_sets(args.dev))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    null_texts = load_null(args.null, args.null_from, args.null_count, args.null_words)
    summarizer = ProbeSummarizer.from_pretrained(args.model)
    try:
        null_ids = summarizer.encode_reviews(null_texts, where=f"{args.null}: ")
    except DenoiseSumError as err:
        raise SystemExit(str(err)) from None
    # a stored row is reused only if it was decoded against these very null reviews
    null = hashlib.sha256(json.dumps(null_texts).encode()).hexdigest()[:16]
    base = summarizer.config
    rows = json.loads(args.json.read_text()) if args.json.exists() else {}

    def measure(probe: dict) -> dict:
        summarizer.wrap = contrast(probe, null_ids)
        return run_variant(summarizer, base, sets, {})

    measure_rows(rows, probes, args.json, measure, {"null": null})
    if args.generic and rows.get("generic", {}).get("null") != null:
        summarizer.wrap = unchanged
        tokens = summarizer.summarize_tokens_batch([null_texts])[0]
        rows["generic"] = {
            **run_variant(ConstantSummarizer(tokens), base, sets, {}),
            "changes": {"summary": "the null reviews', for every entity"},
            "null": null,
        }
    paired_tests(rows)
    write_json(args.json, rows)
    sources = " ".join(f"'{s}'" for s in args.null_from)
    command = (
        f"python -m lab.studies.contrast_probe {args.model} {args.dev} --null-from {sources} "
        f"--null-count {args.null_count} --null-words {' '.join(map(str, args.null_words))} "
        f'--probes "{args.probes}" --null {args.null} --json {args.json}'
        + (" --generic" if args.generic else "")
    )
    emit(
        f"# Context-aware decoding (dev set)\n\n```bash\n{command}\n```\n\n"
        + table(rows, args.model, args.dev, len(sets))
        + (other_references(sets) if args.generic else ""),
        args.markdown,
    )


if __name__ == "__main__":
    main()
