"""Evaluation of summaries against human references.

Scorers (each documents its tokenization; all score tokenized and raw text alike):
    rouge   ROUGE-1/2/L F1, Google rouge-score (stemmed, rougeL), mean over references (rouge.py)
    pooled  ROUGE-1/2/L F1 as py-rouge computes it, counts pooled over references (pooled.py)
    su4     ROUGE-SU4 recall, official Perl ROUGE-1.5.5 (su4.py; needs perl + XML::Parser)
    meteor  METEOR 1.5, official jar via pycocoevalcap (meteor.py; needs java)
Every score is per entity, then averaged over entities, with a percentile bootstrap interval over
entities; `compare` runs a paired approximate randomization test between two systems (stats.py).
"""

from denoisesum.evaluation.inputs import load_predictions, load_references
from denoisesum.evaluation.report import (
    DEFAULT_METRICS,
    METRIC_GROUPS,
    EvaluationReport,
    compare,
    evaluate,
)
from denoisesum.evaluation.stats import PairedTest

__all__ = [
    "DEFAULT_METRICS",
    "METRIC_GROUPS",
    "EvaluationReport",
    "PairedTest",
    "compare",
    "evaluate",
    "load_predictions",
    "load_references",
]
