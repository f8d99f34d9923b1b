"""The settings of `denoisesum fit`: one config with a section per stage, each holding the config
dataclass that stage's own command reads (so any setting of `train-lm`, `synthesize`, `topics` or
`train` can be changed here, with the same names):

    [lm]          LMRunConfig          (denoisesum train-lm)
    [synthesize]  SynthesisConfig      (denoisesum synthesize)
    [topics]      TopicsStageConfig    (denoisesum topics: kind, source and the LDA settings)
    [train]       SummarizerRunConfig  (denoisesum train: [train.model], [train.train], ...)
    [decode]      DecodeChoiceConfig   (how the decoding min_length is chosen)
    [export]      ExportConfig         (how the exported weights are stored)
    [evaluate]    HeldOutConfig        (the businesses held out and scored at the end)
    workers, budget_lm_share           (top level)

Built from the preset, then a TOML file (--config), then `key=value` overrides (--set
train.train.lr=0.002), then what the command line decides (--budget, --dev). The paths that
link the stages (train.data.topics, train.train.init_lm, train.train.dev_set) are fit's: giving
them is an error.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from denoisesum.config import Range, above, at_least, between, build, load_config
from denoisesum.errors import ConfigError
from denoisesum.evaluation.heldout import HeldOutConfig
from denoisesum.fit.presets import preset_settings
from denoisesum.inference.beam import SearchConfig
from denoisesum.inference.policy import SummaryPolicy, split_settings
from denoisesum.noising.config import SynthesisConfig
from denoisesum.topics.models import LDAConfig
from denoisesum.training.denoiser_config import SummarizerRunConfig
from denoisesum.training.lm import LMRunConfig


@dataclass
class TopicsStageConfig(LDAConfig):
    """`denoisesum topics`: kind "lda" (LDAConfig's settings) or "human" (the corpus' category
    field); LDA learns from the review corpus (source "corpus") or from the pairs' real reviews
    (source "pairs": the summaries and document-noise reviews, already tokenized)."""

    kind: str = "lda"
    source: str = "corpus"

    def validate(self) -> None:
        if self.kind not in ("lda", "human"):
            why = f"must be 'lda' or 'human', got {self.kind!r}"
            raise ConfigError(f"topics.kind {why}", key="kind", reason=why)
        if self.source not in ("corpus", "pairs"):
            why = f"must be 'corpus' or 'pairs', got {self.source!r}"
            raise ConfigError(f"topics.source {why}", key="source", reason=why)

    def lda(self) -> LDAConfig:
        return LDAConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(LDAConfig)})


@dataclass
class DecodeChoiceConfig:
    """How the exported model's decoding is chosen. With a dev set: the min_length with the best
    mean of rouge-score R1/R2/RL F1 over `min_lengths` on its first `dev_entities` review sets
    (0: all); then, when `levers` are given, each is decoded with that min_length and compared
    with it (paired tests), and the best mean is kept (evaluation.decoded.choose_variant).
    Without a dev set: the median length of
    the candidate summaries the pairs were made from, and no levers. Then, dev set or not, the
    mixed_band of `mixed_bands` chosen on the held-out businesses."""

    min_length: int | None = None  # a fixed value: no choice made
    min_lengths: list[int] = field(default_factory=list)  # [] = the 25/50/75th percentiles
    dev_entities: int = 0
    summaries_sampled: int = 10000  # candidate summaries read for the median (no dev set)
    # name -> decoding changes (settings of the search or the policy by their names, as
    # inference/policy.py), e.g. {"restate": {"restate_overlap": 0.5}} (TOML: a table)
    levers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the mixed_band values (SummaryPolicy: stars either side of 3 within which reviews of both
    # minds get no sweeping verdict, and with mixed_sides a two-sided summary) tried besides the
    # decoding's own on the businesses held out of training ([evaluate]): the one whose summaries
    # agree most often with their reviews' opinion is kept, the decoding's own on a tie. The
    # shipped 0.25 was narrowed for MeanSum's ROUGE, which a corpus without references does not
    # weigh, and a wider band agrees more often on mixed reviews
    # (docs/results/adaptation-choice.md). []: no choice
    mixed_bands: list[float] = field(default_factory=lambda: [0.5])
    # the exported model's vocabulary shortlist (SummarizerConfig.shortlist, 0: every word),
    # which the dev searches above decode with too; None: the training's summarize.shortlist
    shortlist: int | None = None
    # each setting's valid values (config.py checks them; None is no value)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "min_length": at_least(0),
        "min_lengths": at_least(0),
        "dev_entities": at_least(0, "0: all"),
        "summaries_sampled": at_least(1),
        "shortlist": at_least(0, "0: every word"),
        "mixed_bands": between(0, 2, "stars either side of 3"),
    }

    def validate(self) -> None:
        for name, changes in self.levers.items():  # known keys, right types, ranges
            parts = split_settings(changes, f"levers.{name}: ")
            build(SearchConfig, parts["search"], f"levers.{name}.")
            build(SummaryPolicy, parts["policy"], f"levers.{name}.")


@dataclass
class ExportConfig:
    """How the exported model's weights are stored."""

    # as fp16: half the size on disk, and on a CPU decoding reads them packed
    # (models/packed.py), faster than fp32; the rounding can change a few summaries, not how
    # good they are (docs/results/fit-fp16.md); false: fp32, the trained weights byte for byte
    fp16_weights: bool = True


@dataclass
class FitConfig:
    # each section is the config of the stage that `denoisesum COMMAND` runs on its own
    lm: LMRunConfig = field(default_factory=LMRunConfig, metadata={"command": "train-lm"})
    synthesize: SynthesisConfig = field(
        default_factory=SynthesisConfig, metadata={"command": "synthesize"}
    )
    topics: TopicsStageConfig = field(
        default_factory=TopicsStageConfig, metadata={"command": "topics"}
    )
    train: SummarizerRunConfig = field(
        default_factory=SummarizerRunConfig, metadata={"command": "train"}
    )
    decode: DecodeChoiceConfig = field(
        default_factory=DecodeChoiceConfig, metadata={"command": "fit"}
    )
    export: ExportConfig = field(default_factory=ExportConfig, metadata={"command": "fit"})
    # the businesses held out of training and scored at the end (evaluation/heldout.py)
    evaluate: HeldOutConfig = field(default_factory=HeldOutConfig, metadata={"command": "fit"})
    workers: int = 0  # tokenizer and synthesis processes; 0: one per core; 1: in this process
    budget_lm_share: float = 0.2  # with --budget: the LM's share of the training time
    # set by fit itself (the links between stages, the dev set) or by another key
    DERIVED: ClassVar[dict[str, str]] = {
        "train.summarize.max_review_tokens": "train.data.max_review_tokens",
        "train.data.topics": "fit (the topics stage's output)",
        "train.train.init_lm": "fit (the lm stage's output, or --lm)",
        "train.train.dev_set": "fit (--dev)",
    }

    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "workers": at_least(0, "0: one per core"),
        "budget_lm_share": Range(0, 1, low_open=True, high_open=True),
    }


def preset_config(preset: str) -> FitConfig:
    return build(FitConfig, preset_settings(preset))


def load_fit_config(
    preset: str,
    path: str | Path | None = None,
    overrides: Iterable[str] = (),
    base: FitConfig | None = None,
) -> FitConfig:
    """The preset's settings (or `base`, made from them), then the TOML file, then the
    `key=value` overrides."""
    return load_config(FitConfig, path, overrides, base=base or preset_config(preset))


BUDGET_HOURS = above(0)


def apply_budget(cfg: FitConfig, hours: float, train_lm: bool) -> dict[str, float]:
    """Split `hours` of training time between the LM (budget_lm_share of it, when fit trains
    one) and the summarizer, as their train.max_minutes; returns the minutes of each."""
    if not BUDGET_HOURS.contains(hours):  # NaN too: it would be written into the run's config
        raise ConfigError(f"--budget {hours} must be {BUDGET_HOURS} hours")
    minutes = hours * 60
    lm = round(minutes * cfg.budget_lm_share, 2) if train_lm else 0.0
    cfg.lm.train.max_minutes = lm
    cfg.train.train.max_minutes = round(minutes - lm, 2)
    return {"lm": lm, "train": cfg.train.train.max_minutes}


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': (1, 2)}} -> {'a.b': [1, 2]}: settings as JSON values, compared key by key."""
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    if not isinstance(value, dict):
        return {prefix: json.loads(json.dumps(value))}
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return out
