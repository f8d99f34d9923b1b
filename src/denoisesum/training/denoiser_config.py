"""The settings of a summarizer run (`denoisesum train`, fit's train stage): the trainer's
[train] table, the run's tables together (model, vocab, data, train, summarize), and what they
resolve to when a run starts (the inputs it needs, the device, the autocast dtype). Apart from
denoiser.py so that fit's and the command line's configs, and the benchmarks, read them without
the trainer."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from denoisesum.config import Range, at_least, between, check_choice, config_from_dict
from denoisesum.errors import ConfigError
from denoisesum.models.denoisesum import DenoiseSumConfig
from denoisesum.models.precision import use_bf16
from denoisesum.summarizer import SummarizerConfig
from denoisesum.training.loop import LOOP_BOUNDS
from denoisesum.training.pairs import PairDataConfig, PairVocabConfig

SELECT_ON = ("synthetic-loss", "dev-rouge")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


@dataclass
class SummarizerTrainConfig:
    batch_size: int = 8  # pairs
    lr: float = 1e-3  # Adam
    grad_clip: float = 3.0  # the paper's "l2 constraint of 3"
    kl_weight: float = 1.0  # the paper adds the discriminator's KL to the NLL unweighted
    max_steps: int = 50000
    max_minutes: float = 0.0  # stop (and save) after this much training-step time; 0 = none
    eval_every: int = 1000
    save_every: int = 500
    log_every: int = 50
    patience: int = 5  # evaluations without improvement before stopping; 0 = never stop early
    select_on: str = "synthetic-loss"  # or "dev-rouge": decode dev_set, keep the best ROUGE
    dev_set: str = ""  # review-set file with reference summaries, for select_on = "dev-rouge"
    dev_entities: int = 0  # decode only the first ones (0 = all): each evaluation beam-searches
    seed: int = 1
    threads: int = 0  # torch CPU threads; 0 = all cores
    device: str = "auto"  # auto (CUDA when available), cpu, cuda
    precision: str = "auto"  # auto: bf16 autocast on CUDA (fp16 where unsupported), fp32 on CPU;
    # "bf16" on CPU too (autocast), "fp32" anywhere
    keep_checkpoints: int = 2
    init_lm: str = ""  # BiLM directory whose matching weights start the model (lm_init.py)
    # a trained summarizer directory to start from: the second phase, with model.coverage on
    # (its vocabulary is used; every weight must fit, the coverage weights start at 0)
    init_model: str = ""
    coverage_weight: float = 1.0  # the coverage loss's weight (See et al. 2017: 1)
    # weight of the old average per step: 0.999 averages over about the last 1,000 steps
    ema_decay: float = 0.0
    # model.opinion only: the share of training pairs whose rating is hidden (opinion class 0,
    # unknown), so the model also learns to summarize without a target opinion
    opinion_dropout: float = 0.1
    # model.opinion only: Adam's learning rate for the opinion table (0: train.lr). The table
    # starts at zero beside word embeddings of norm ~16 in the shipped model; at a fine-tuning
    # lr of 3e-4 it had grown to norm ~0.1 after 300 steps, too small to steer anything
    opinion_lr: float = 0.0
    # the NLL's weight on target words that no input review of the pair holds (1: the paper's
    # loss). A pair's summary is a real review and its inputs are noised copies and similar
    # reviews: about 11% of its content words are in none of them (lab/studies/pair_support.py),
    # and the loss teaches the model to write such words from nothing, the invented details
    # judges mark unsupported; 0 leaves them out of the loss (they still condition what follows)
    unsupported_weight: float = 1.0
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        **LOOP_BOUNDS,
        **dict.fromkeys(("batch_size", "log_every"), at_least(1)),
        **dict.fromkeys(("kl_weight", "coverage_weight"), at_least(0)),
        "patience": at_least(0, "0: never stop early"),
        "dev_entities": at_least(0, "0: all"),
        "ema_decay": Range(0, 1, high_open=True, note="0: off"),
        "opinion_dropout": between(0, 1),
        "opinion_lr": at_least(0, "0: train.lr"),
        "unsupported_weight": between(0, 1, "1: every target word counts alike"),
    }

    def validate(self) -> None:
        """The choices (each number's range: BOUNDS), and the two starting points."""
        check_choice("select_on", self.select_on, SELECT_ON)
        check_choice("device", self.device, DEVICES)
        check_choice("precision", self.precision, PRECISIONS)
        if self.init_lm and self.init_model:
            why = (
                "must be empty when init_lm is set: the two exclude each other (start from an "
                "LM, the first phase, or from a trained summarizer, the second)"
            )
            raise ConfigError(f"init_model {why}", key="init_model", reason=why)


@dataclass
class SummarizerRunConfig:
    model: DenoiseSumConfig = field(default_factory=DenoiseSumConfig)
    vocab: PairVocabConfig = field(default_factory=PairVocabConfig)
    data: PairDataConfig = field(default_factory=PairDataConfig)
    train: SummarizerTrainConfig = field(default_factory=SummarizerTrainConfig)
    # decoding of the dev-ROUGE evaluations, saved into the exported config.json: the model is
    # then selected with the decoding it will be used with
    summarize: SummarizerConfig = field(default_factory=SummarizerConfig)
    # reviews are cut at inference where they were cut in training: one setting for both
    DERIVED: ClassVar[dict[str, str]] = {"summarize.max_review_tokens": "data.max_review_tokens"}


def require_inputs(cfg: SummarizerRunConfig) -> None:
    """What a run reads, named: checked when it starts, not by `check` (fit builds its config
    first and fills train.init_lm and train.dev_set in later)."""
    t = cfg.train
    # train.init_model brings its own vocabulary, whatever vocab.source says
    if cfg.vocab.source == "lm" and not (t.init_lm or t.init_model):
        why = "'lm' takes the vocabulary of train.init_lm: set it too"
        raise ConfigError(f"config key 'vocab.source': {why}", key="vocab.source", reason=why)
    if t.select_on == "dev-rouge" and not t.dev_set:
        why = (
            "missing: train.select_on = 'dev-rouge' needs train.dev_set, a review-set file "
            "whose entities have reference summaries"
        )
        raise ConfigError(f"config key 'train.dev_set': {why}", key="train.dev_set", reason=why)


def pick_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device='cuda' but no CUDA device is available")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype; None means plain fp32. On CUDA, 'auto' is bf16 (fp16 where
    unsupported); on CPU, 'auto' is fp32 and 'bf16' is asked for explicitly (it pays on CPUs
    with AVX512-BF16 or AMX: benchmarks/train_throughput.py measures it; elsewhere it falls
    back to fp32 with a warning, models/precision.py)."""
    if device.type != "cuda":
        if precision == "fp16":
            raise ConfigError("train.precision='fp16' needs CUDA; on CPU use 'bf16' or 'fp32'")
        bf16 = precision == "bf16" and use_bf16(device, "train.precision='bf16'")
        return torch.bfloat16 if bf16 else None
    if precision == "auto":
        precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def resumed_config(cfg: SummarizerRunConfig, saved: dict[str, Any]) -> SummarizerRunConfig:
    """A resumed run's config: the run's model, vocabulary, data and data order (from its
    checkpoint); the new limits and schedule (from `cfg`)."""
    run = config_from_dict(SummarizerRunConfig, saved["run_config"])
    return dataclasses.replace(
        run,
        train=dataclasses.replace(cfg.train, seed=run.train.seed, batch_size=run.train.batch_size),
    )
