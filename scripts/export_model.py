"""Copy a model directory, optionally storing its weights as fp16 (models/store.py writes it:
the weights, config.json, the vocabulary and the rating model if there is one).

    python scripts/export_model.py runs/bilm-yelp lms/bilm-yelp --fp16

fp16 halves the size; models are loaded back into fp32 parameters, so inference is unchanged
up to fp16 rounding of the weights.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from safetensors.torch import load_file

from denoisesum.models.store import WEIGHTS, export_model_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--fp16", action="store_true")
    args = parser.parse_args()
    export_model_dir(args.source, args.target, fp16=args.fp16)
    tensors = load_file(str(args.target / WEIGHTS))
    size = (args.target / WEIGHTS).stat().st_size / 2**20
    print(
        f"{args.target / WEIGHTS}: {size:.1f} MiB, {sum(t.numel() for t in tensors.values()):,}"
        f" parameters ({'fp16' if args.fp16 else 'as stored'}, torch {torch.__version__})"
    )


if __name__ == "__main__":
    main()
