"""`denoisesum fit`: a review corpus in, a summarizer out, every stage of DenoiseSum in one
resumable command (recipe.py), with presets sized by hardware and time (presets.py).

    MODEL_DIR/
      model.safetensors, config.json, vocab.json   the summarizer (summarize --model MODEL_DIR)
      fit-report.json        each stage: ran, resumed or skipped, wall time, one-line summary
      work/fit-config.json   the effective settings (preset, --config, --set, --dev, --budget)
      work/encoded/          the tokenized corpus                    (stage tokenize)
      work/lm/               the cloze LM (not with --lm DIR)         (stage lm)
      work/pairs/            the synthetic pairs                     (stage synthesize)
      work/topics/           the discriminator's topic model         (stage topics)
      work/train/            the summarizer's run, checkpoints       (stage train)
      work/STAGE.stage.json  each stage's settings, inputs and outcome (ledger.py); the decode
                             stage's choice of min_length is kept in its record

From Python:

    from denoisesum.fit import FitRequest, run_fit
    report = run_fit(FitRequest(["reviews.jsonl"], Path("runs/mine"), preset="cpu-small"))
"""

from denoisesum.fit.config import FitConfig, load_fit_config
from denoisesum.fit.presets import DEFAULT_PRESET, PRESETS
from denoisesum.fit.recipe import run_fit
from denoisesum.fit.request import FitRequest

__all__ = ["DEFAULT_PRESET", "PRESETS", "FitConfig", "FitRequest", "load_fit_config", "run_fit"]
