"""The presets of `denoisesum fit`: the settings of every stage, sized by hardware and time.

Each preset is what a fit config file (TOML) would hold, as a dict: sections [lm] (LMRunConfig),
[synthesize] (SynthesisConfig), [topics] (TopicsStageConfig), [train] (SummarizerRunConfig),
[decode] (DecodeChoiceConfig), [export] (ExportConfig) and the top-level keys of FitConfig. Keys
a preset leaves out keep their dataclass defaults (the paper's). In every preset the LM has the
summarizer's LSTM sizes (lm.model.hidden_dim = train.model.hidden_dim = train.model.encoder_dim,
equal embedding sizes), so that train.init_lm copies the embeddings and all four LSTMs
(training/lm_init.py): SIZES gives both their sizes at once.

    tiny       for tests: seconds on one core (a corpus of a few hundred short reviews)
    cpu-small  a laptop, a few hours: 128-unit LSTMs, ~20k pairs, 10,000 summarizer steps
    cpu        this project's 2 cores on Yelp: configs/bilm-yelp-256.toml (the LM) and
               configs/denoisesum-yelp-lm256.toml (the summarizer), 100k pairs, bf16 autocast
    paper      the paper's sizes, for a GPU: configs/denoisesum-yelp.toml with 256-unit encoder
               directions (to take the LM's LSTMs), a 50k vocabulary, 100k pairs
"""

from __future__ import annotations

from typing import Any

from denoisesum.config import merge
from denoisesum.errors import ConfigError


def _sizes(embed: int, hidden: int, cutoffs: list[int], vocab: int, min_count: int = 3):
    """The model and vocabulary sections of a preset's LM and summarizer, at one size: the LM
    has the summarizer's embedding and LSTM sizes (and projects to its embedding size)."""
    return {
        "lm": {
            "model": {
                "embed_dim": embed,
                "hidden_dim": hidden,
                "proj_dim": embed,
                "cutoffs": cutoffs,
            },
            "vocab": {"max_size": vocab, "min_count": min_count},
        },
        "train": {
            "model": {"embed_dim": embed, "hidden_dim": hidden, "encoder_dim": hidden},
            "vocab": {"max_size": vocab, "min_count": min_count},
        },
    }


# what every preset but tiny asks of synthesis on a corpus too small for its pairs: candidate
# length bounds widened to the corpus's own review lengths, and up to 5 pairs (each with its own
# noise) from each candidate. Without them a corpus of 1,553 hotel reviews made 503 pairs of the
# 20,000 asked for, and training went over those 503 again and again (docs/results/fit.md); with
# them it makes some 5,000, about what a budget of minutes trains on, in minutes of synthesis
# (20 uses each would take half an hour on 2 cores, for pairs a short run never reaches)
SMALL_CORPUS: dict[str, Any] = {"fit_lengths": True, "uses_per_candidate": 5}

# each preset's settings besides its sizes (SIZES)
TINY: dict[str, Any] = {
    "workers": 1,
    "lm": {
        "model": {"dropout": 0.0},
        "vocab": {"max_size": 1000},
        "train": {
            "batch_tokens": 256,
            "max_len": 40,
            "lr": 0.01,
            "warmup_steps": 5,
            "max_steps": 30,
            "eval_every": 30,
            "save_every": 10,
            "eval_reviews": 50,
            "heldout_percent": 10.0,
            "threads": 1,
        },
    },
    "synthesize": {
        "pairs": 24,
        "preset": "generic",
        "n_mean": 3.0,
        "n_std": 0.0,
        "candidates": {"min_tokens": 8, "max_tokens": 60},
        "inventory_reviews": 40,
        "shard_size": 8,
        "lm_batch": 8,
    },
    "topics": {"n_topics": 3, "sample": 400, "passes": 1, "min_docs": 2},
    "train": {
        "data": {"max_review_tokens": 40, "heldout_percent": 20.0, "eval_pairs": 0},
        "train": {
            "batch_size": 4,
            "lr": 0.01,
            "max_steps": 30,
            "eval_every": 10,
            "save_every": 2,
            "log_every": 5,
            "patience": 0,
            "threads": 1,
            "device": "cpu",
            "precision": "fp32",
        },
        "summarize": {"search": {"beam": 2, "max_words": 30, "no_repeat_ngram": 2}},
    },
    "decode": {"dev_entities": 4},
    "evaluate": {"entities": 0, "reviews": 4},  # tests that score set evaluate.entities
}

CPU_SMALL: dict[str, Any] = {
    "budget_lm_share": 0.2,
    "lm": {
        "train": {
            "batch_tokens": 4096,
            "lr": 0.002,
            "warmup_steps": 200,
            "max_steps": 2500,
            "eval_every": 500,
            "save_every": 250,
            "eval_reviews": 1000,
        },
    },
    "synthesize": {"pairs": 20000, "preset": "generic", **SMALL_CORPUS},
    "topics": {"n_topics": 50, "sample": 20000},
    "train": {
        "data": {"max_review_tokens": 100, "eval_pairs": 200},
        "train": {
            "max_steps": 10000,
            "eval_every": 500,
            "save_every": 100,
            "log_every": 20,
            "patience": 5,
        },
        "summarize": {"search": {"no_repeat_ngram": 2}},
    },
    "decode": {"dev_entities": 40},
}

CPU: dict[str, Any] = {  # configs/bilm-yelp-256.toml + configs/denoisesum-yelp-lm256.toml
    "budget_lm_share": 0.1,
    "lm": {
        "train": {
            "batch_tokens": 4096,
            "max_len": 80,
            "lr": 0.002,
            "warmup_steps": 200,
            "max_steps": 3000,
            "max_minutes": 240.0,
            "eval_every": 500,
            "save_every": 250,
            "eval_reviews": 2000,
        },
    },
    # configs/synth-yelp.toml
    "synthesize": {"pairs": 100000, "preset": "yelp", **SMALL_CORPUS},
    "topics": {"n_topics": 100, "sample": 50000},  # as scripts/train_yelp.sh
    "train": {
        "data": {"max_review_tokens": 100, "eval_pairs": 400},
        "train": {
            "max_steps": 50000,
            "eval_every": 1000,
            "save_every": 100,
            "log_every": 20,
            "patience": 0,
            "dev_entities": 100,
            "precision": "bf16",
        },
        "summarize": {"shortlist": 5000, "search": {"no_repeat_ngram": 2}},
    },
    "decode": {"dev_entities": 100},
}

PAPER: dict[str, Any] = {  # configs/denoisesum-yelp.toml, on a GPU
    "budget_lm_share": 0.15,
    "lm": {
        "train": {"batch_tokens": 8192, "max_steps": 20000, "eval_every": 1000, "save_every": 500},
    },
    "synthesize": {"pairs": 100000, "preset": "yelp", **SMALL_CORPUS},
    "topics": {"n_topics": 100, "sample": 100000},
    "train": {
        "train": {"max_steps": 50000, "eval_every": 1000, "save_every": 500, "patience": 5},
    },
    "decode": {"dev_entities": 0},
}

# each preset's LM and summarizer sizes: embedding, LSTM, the LM's softmax cutoffs, vocabulary
SIZES: dict[str, dict[str, Any]] = {
    "tiny": _sizes(16, 16, cutoffs=[10], vocab=500, min_count=1),
    "cpu-small": _sizes(128, 128, cutoffs=[2000, 8000], vocab=20000),
    "cpu": _sizes(256, 256, cutoffs=[2000, 10000], vocab=30000),
    "paper": _sizes(300, 256, cutoffs=[2000, 10000], vocab=50000),
}
PRESETS: dict[str, dict[str, Any]] = {
    name: merge(SIZES[name], settings)
    for name, settings in (("tiny", TINY), ("cpu-small", CPU_SMALL), ("cpu", CPU), ("paper", PAPER))
}
DEFAULT_PRESET = "cpu-small"


def preset_settings(name: str) -> dict[str, Any]:
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown fit preset '{name}' (known: {', '.join(PRESETS)})") from None
