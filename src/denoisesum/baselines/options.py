"""The options of the baselines and the leaderboard, with their defaults, written only here.

The `baseline` and `leaderboard` commands take their defaults from this module when the CLI
starts, so it imports nothing heavy (no numpy, no scorers); `denoisesum.baselines` loads its
baselines on first use for the same reason.
"""

from __future__ import annotations

import shlex
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path

DEFAULT_WORDS = 60  # Yelp (MeanSum) references average about 58 words
DEFAULT_SEED = 0
DEFAULT_SAMPLE = 100_000  # corpus reviews a baseline learns from


@dataclass
class LeaderboardOptions:
    """Everything one leaderboard page is made from: the `denoisesum leaderboard` options,
    named and ordered as the command's."""

    gold: Path
    systems: list[Path] = field(default_factory=list)
    baselines: str = "first,random,clustroid,lexrank,word2vec,opinosis,oracle"
    predictions: list[str] = field(default_factory=list)
    metrics: str = "rouge,pooled,su4,meteor"
    limit: int | None = None
    words: int = DEFAULT_WORDS
    seed: int = DEFAULT_SEED
    corpus: list[str] = field(default_factory=list)
    sample: int = DEFAULT_SAMPLE
    word2vec_model: Path | None = None
    notes: Path | None = None
    title: str | None = None
    save_predictions: Path | None = None
    output: Path = Path("docs/results/leaderboard-yelp.md")

    def __post_init__(self) -> None:
        for name in ("systems", "predictions", "corpus"):  # the command gives None for none
            setattr(self, name, list(getattr(self, name) or []))

    def baseline_names(self) -> list[str]:
        return [n.strip() for n in self.baselines.split(",") if n.strip()]

    def command_line(self) -> str:
        """The shell command that makes this page: the gold file, then every option that differs
        from its default (a list repeats its option)."""
        parts = ["denoisesum", "leaderboard", str(self.gold)]
        for option in fields(self)[1:]:  # the first is the gold file, the command's argument
            value = getattr(self, option.name)
            if value is None or value == _default(option):
                continue
            flag = "--" + option.name.replace("_", "-")
            for item in value if isinstance(value, list) else [value]:
                parts += [flag, str(item)]
        return shlex.join(parts)


def _default(option: Field) -> object:
    return option.default_factory() if option.default is MISSING else option.default
