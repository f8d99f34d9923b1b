"""What `denoisesum fit` is asked for (FitRequest: the command line's words) and the settings it
resolves to (fit_config: the preset, --from's model, --dev, --config, --set, --budget), apart
from recipe.py so that the stages (stages.py) and the loop (recipe.py) both read them without
reading each other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from denoisesum.config import build, merge
from denoisesum.data.corpus import FieldNames
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.errors import ConfigError, InputError
from denoisesum.fit import adapt
from denoisesum.fit.config import (
    FitConfig,
    apply_budget,
    load_fit_config,
)
from denoisesum.fit.presets import DEFAULT_PRESET, preset_settings
from denoisesum.noising.plan import review_set_sizes

Log = Callable[[str], None]


@dataclass
class FitRequest:
    """What the `fit` command line says."""

    corpus: list[str]
    output: Path
    preset: str = DEFAULT_PRESET
    dev: Path | None = None  # review sets with reference summaries
    budget_hours: float | None = None
    lm: Path | None = None  # a trained BiLM to reuse
    noise_lm: Path | None = None  # a trained BiLM to noise with (default: the LM above)
    config: Path | None = None
    overrides: list[str] = field(default_factory=list)
    fields: FieldNames = field(default_factory=FieldNames)
    skip_bad: bool = False
    base: str | None = None  # --from: a trained summarizer to adapt (a directory or a name)

    @property
    def trains_lm(self) -> bool:
        """An LM is trained unless one is given: --lm, or --noise-lm when --from starts the
        summarizer (then nothing else would read an LM)."""
        return self.lm is None and not (self.base is not None and self.noise_lm is not None)


def fit_config(request: FitRequest) -> FitConfig:
    """The preset, what --from takes from its model, what --dev implies (N from the dev sets,
    selection on dev ROUGE), --config, --set, then --budget."""
    settings = preset_settings(request.preset)
    if request.base is not None:
        if request.lm is not None:
            raise ConfigError(
                "--lm starts the summarizer from an LM and --from from a trained "
                "summarizer: give one (--noise-lm DIR noises the pairs with an LM)"
            )
        settings = merge(settings, adapt.base_settings(adapt.resolve_base(request.base)))
    base = build(FitConfig, settings)
    if request.dev is not None:
        base.synthesize.n_mean, base.synthesize.n_std = review_set_sizes(request.dev)
        base.train.train.select_on = "dev-rouge"
    cfg = load_fit_config(request.preset, request.config, request.overrides, base=base)
    if cfg.decode.levers and request.dev is None:
        raise ConfigError(
            "decode.levers are chosen on dev ROUGE: they need --dev (review sets "
            "with reference summaries)"
        )
    if cfg.train.train.select_on == "dev-rouge" and request.dev is None:
        raise ConfigError(
            "train.train.select_on = 'dev-rouge' needs --dev (review sets with reference summaries)"
        )
    if request.budget_hours is not None:
        apply_budget(cfg, request.budget_hours, train_lm=request.trains_lm)
    return cfg


def read_dev_sets(path: Path) -> list:
    sets = list(read_review_sets(path))
    missing = [s.entity_id for s in sets if not s.summaries]
    if not sets or missing:
        raise InputError(
            "--dev needs review sets with reference summaries"
            + (f" (none for {', '.join(missing[:5])})" if missing else " (the file is empty)"),
            path=path,
            field="summaries",
        )
    return sets
