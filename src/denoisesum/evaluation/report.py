"""`evaluate()`: every metric per entity, their means with bootstrap intervals, and comparisons."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from denoisesum.errors import DenoiseSumError
from denoisesum.evaluation.inputs import check_ids, check_references
from denoisesum.evaluation.stats import (
    PairedTest,
    bootstrap_samples,
    paired_test,
    percentile_interval,
)

# Metric groups (what --metrics names) and the scores each produces, all on a 0-100 scale.
METRIC_GROUPS: dict[str, tuple[str, ...]] = {
    "rouge": ("rouge1", "rouge2", "rougeL"),
    "pooled": ("pooled_rouge1", "pooled_rouge2", "pooled_rougeL"),
    "su4": ("su4_recall",),
    "meteor": ("meteor",),
}
DEFAULT_METRICS = tuple(METRIC_GROUPS)
LABELS = {
    "rouge1": "ROUGE-1 F1  (rouge-score)",
    "rouge2": "ROUGE-2 F1  (rouge-score)",
    "rougeL": "ROUGE-L F1  (rouge-score)",
    "pooled_rouge1": "ROUGE-1 F1  (pooled, py-rouge style)",
    "pooled_rouge2": "ROUGE-2 F1  (pooled, py-rouge style)",
    "pooled_rougeL": "ROUGE-L F1  (pooled, py-rouge style)",
    "su4_recall": "ROUGE-SU4 R (ROUGE-1.5.5)",
    "meteor": "METEOR 1.5  (mean over entities)",
}
_WORD = re.compile(r"[a-z0-9]+")


def word_count(text: str) -> int:
    """Words as ROUGE counts them (runs of letters and digits): the same for tokenized and raw
    text, so prediction and reference lengths compare fairly."""
    return len(_WORD.findall(text.lower()))


def parse_metrics(text: str | Sequence[str]) -> tuple[str, ...]:
    """Metric groups from a comma-separated string (or a list), in order, without repeats."""
    text = text if isinstance(text, str) else ",".join(text)
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in METRIC_GROUPS]
    if unknown or not names:
        raise DenoiseSumError(
            f"unknown metric '{unknown[0] if unknown else text}'; choose from "
            f"{', '.join(METRIC_GROUPS)} (comma-separated)"
        )
    return names


def requested_metrics(
    text: str | None, default: str | Sequence[str] = DEFAULT_METRICS
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(metric groups to run, those of them that may be left out when their tool is missing),
    from a --metrics option: None (not given) runs the `default` groups, each optional; groups
    the user named are required."""
    if text is None:
        groups = parse_metrics(default)
        return groups, groups
    return parse_metrics(text), ()


def _su4_unavailable() -> str | None:
    from denoisesum.evaluation.su4 import unavailable

    return unavailable()


def _meteor_unavailable() -> str | None:
    from denoisesum.evaluation.meteor import unavailable

    return unavailable()


# The metric groups that run an external tool: why it cannot run here, or None.
AVAILABILITY: dict[str, Callable[[], str | None]] = {
    "su4": _su4_unavailable,
    "meteor": _meteor_unavailable,
}


def split_metrics(
    metrics: Sequence[str] | str, optional: Collection[str] = ()
) -> tuple[tuple[str, ...], dict[str, str]]:
    """(the groups of `metrics` that can run here, {group: why it cannot} for the others). Only
    groups in `optional` may be left out: a required group whose tool is missing is a
    DenoiseSumError, with the install hint of every missing tool, before any work."""
    groups = parse_metrics(metrics)
    missing = {
        g: reason for g in groups if g in AVAILABILITY if (reason := AVAILABILITY[g]()) is not None
    }
    required = [reason for g, reason in missing.items() if g not in optional]
    if required:
        raise DenoiseSumError("; ".join(required))
    return tuple(g for g in groups if g not in missing), missing


def not_computed_warning(group: str, reason: str) -> str:
    """The line said on standard error for an optional metric group that was left out."""
    return f"warning: metric '{group}' not computed: {reason}"


Scorer = Callable[[list[str], list[list[str]]], tuple[dict[str, list[float]], dict[str, float]]]


def _rouge(hyps: list[str], refs: list[list[str]]):
    from denoisesum.evaluation.rouge import rouge_f1_per_entity

    return rouge_f1_per_entity(hyps, refs), {}


def _pooled(hyps: list[str], refs: list[list[str]]):
    from denoisesum.evaluation.pooled import PooledRouge

    scorer = PooledRouge()
    per_entity = [scorer.score(h, r) for h, r in zip(hyps, refs, strict=True)]
    return {
        f"pooled_{t}": [100 * s[t] for s in per_entity] for t in ("rouge1", "rouge2", "rougeL")
    }, {}


def _su4(hyps: list[str], refs: list[list[str]]):
    from denoisesum.evaluation.su4 import su4_recall

    return {"su4_recall": [100 * r for r in su4_recall(hyps, refs)]}, {}


def _meteor(hyps: list[str], refs: list[list[str]]):
    from denoisesum.evaluation.meteor import meteor

    segments, corpus = meteor(hyps, refs)
    return {"meteor": [100 * s for s in segments]}, {"meteor_corpus": 100 * corpus}


SCORERS: dict[str, Scorer] = {"rouge": _rouge, "pooled": _pooled, "su4": _su4, "meteor": _meteor}


@dataclass
class EvaluationReport:
    """Per-entity scores (0-100) of one system, with means and bootstrap intervals."""

    entity_ids: list[str]
    scores: dict[str, list[float]]
    prediction_words: list[int]
    reference_words: list[float]  # mean over the entity's references
    intervals: dict[str, tuple[float, float]]
    corpus: dict[str, float] = field(default_factory=dict)  # scores with no per-entity form
    seconds: dict[str, float] = field(default_factory=dict)  # time taken by each metric group
    # optional metric groups left out: why (a missing tool with its install hint, or its error)
    not_computed: dict[str, str] = field(default_factory=dict)
    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95

    @property
    def means(self) -> dict[str, float]:
        return {m: sum(v) / len(v) for m, v in self.scores.items()}

    def lengths(self) -> dict[str, float]:
        n = len(self.entity_ids)
        return {
            "prediction_words": sum(self.prediction_words) / n,
            "reference_words": sum(self.reference_words) / n,
        }

    def to_dict(self) -> dict:
        return {
            "entities": len(self.entity_ids),
            "scores": {
                m: {"mean": round(v, 4), "ci": [round(x, 4) for x in self.intervals[m]]}
                for m, v in self.means.items()
            },
            "corpus": {k: round(v, 4) for k, v in self.corpus.items()},
            "lengths": {k: round(v, 2) for k, v in self.lengths().items()},
            "bootstrap": {
                "resamples": self.resamples,
                "seed": self.seed,
                "confidence": self.confidence,
            },
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
            "not_computed": dict(self.not_computed),
        }

    def per_entity(self) -> list[dict]:
        return [
            {
                "entity_id": entity,
                **{m: round(v[i], 4) for m, v in self.scores.items()},
                "prediction_words": self.prediction_words[i],
                "reference_words": round(self.reference_words[i], 2),
            }
            for i, entity in enumerate(self.entity_ids)
        ]


def evaluate(
    predictions: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    *,
    optional: Collection[str] = (),
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> EvaluationReport:
    """Score `predictions` (entity id -> summary) against `references` (entity id -> human
    summaries) with the metric groups named in `metrics` (see METRIC_GROUPS; a list or a
    comma-separated string). Entities are taken in the order of `references`.

    A group in `optional` whose tool is missing here (or fails) is left out and named, with
    the reason, in the report's `not_computed`; any other is an error, raised before scoring
    when its tool is missing (see `split_metrics`)."""
    metrics, not_computed = split_metrics(metrics, optional)
    check_references(references)
    check_ids(predictions, references)
    ids = list(references)
    hyps = [predictions[e] for e in ids]
    refs = [list(references[e]) for e in ids]
    scores: dict[str, list[float]] = {}
    corpus: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for group in metrics:
        start = time.perf_counter()
        try:
            group_scores, group_corpus = SCORERS[group](hyps, refs)
        except DenoiseSumError as exc:
            if group not in optional:
                raise
            not_computed[group] = str(exc)
            continue
        seconds[group] = time.perf_counter() - start
        scores.update(group_scores)
        corpus.update(group_corpus)
    if not scores:
        raise DenoiseSumError("no metric could be computed: " + "; ".join(not_computed.values()))
    samples = bootstrap_samples(len(ids), resamples, seed)
    intervals = {m: percentile_interval(v, samples, confidence) for m, v in scores.items()}
    return EvaluationReport(
        entity_ids=ids,
        scores=scores,
        intervals=intervals,
        corpus=corpus,
        seconds=seconds,
        prediction_words=[word_count(h) for h in hyps],
        reference_words=[sum(word_count(r) for r in rs) / len(rs) for rs in refs],
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        not_computed=not_computed,
    )


def compare(
    a: EvaluationReport, b: EvaluationReport, *, trials: int = 10000, seed: int = 0
) -> dict[str, PairedTest]:
    """Paired test (A - B) for every metric both reports have, on the same entities."""
    if a.entity_ids != b.entity_ids:
        raise DenoiseSumError(
            "the two reports cover different entities; evaluate both against the same references"
        )
    return {
        m: paired_test(
            a.scores[m],
            b.scores[m],
            trials=trials,
            resamples=a.resamples,
            seed=seed,
            confidence=a.confidence,
        )
        for m in a.scores
        if m in b.scores
    }


def _length_line(report: EvaluationReport, name: str = "") -> str:
    lengths = report.lengths()
    return (
        f"length (words){' of ' + name if name else ''}: predictions "
        f"{lengths['prediction_words']:.1f}, references {lengths['reference_words']:.1f}"
    )


def format_report(report: EvaluationReport) -> str:
    level = f"{report.confidence:.0%} CI"
    width = max(len(LABELS[m]) for m in report.scores)
    lines = [f"{'metric':<{width}}  {'score':>6}  {level}"]
    for m, mean in report.means.items():
        low, high = report.intervals[m]
        lines.append(f"{LABELS[m]:<{width}}  {mean:6.2f}  [{low:5.2f}, {high:5.2f}]")
    if "meteor_corpus" in report.corpus:
        lines.append(
            f"{'METEOR 1.5  (corpus level)':<{width}}  {report.corpus['meteor_corpus']:6.2f}"
        )
    lines.append(_length_line(report))
    lines.append(
        f"{len(report.entity_ids)} entities; intervals: percentile bootstrap over "
        f"entities, {report.resamples} resamples, seed {report.seed}"
    )
    lines += [f"not computed: {group}: {reason}" for group, reason in report.not_computed.items()]
    return "\n".join(lines)


def format_comparison(
    a: EvaluationReport, b: EvaluationReport, tests: Mapping[str, PairedTest]
) -> str:
    level = f"{a.confidence:.0%} CI of A-B"
    width = max(len(LABELS[m]) for m in tests)
    lines = [f"{'metric':<{width}}  {'A':>6}  {'B':>6}  {'A-B':>6}  {level:<17}  p"]
    for m, t in tests.items():
        lines.append(
            f"{LABELS[m]:<{width}}  {t.mean_a:6.2f}  {t.mean_b:6.2f}  "
            f"{t.difference:+6.2f}  [{t.ci_low:+5.2f}, {t.ci_high:+5.2f}]   "
            f"{t.p_value:.4f}"
        )
    lines.append(_length_line(a, "A"))
    lines.append(_length_line(b, "B"))
    trials = next(iter(tests.values())).trials if tests else 0
    lines.append(
        f"{len(a.entity_ids)} entities; p: two-sided approximate randomization, "
        f"{trials} trials; intervals: paired bootstrap, {a.resamples} resamples"
    )
    return "\n".join(lines)
