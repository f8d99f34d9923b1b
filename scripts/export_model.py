"""Copy a model directory (weights, config, vocabulary), optionally storing weights as fp16.

    python scripts/export_model.py runs/bilm-yelp lms/bilm-yelp --fp16

fp16 halves the size; models are loaded back into fp32 parameters, so inference is unchanged
up to fp16 rounding of the weights.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from denoisesum.models.store import CONFIG, VOCAB, WEIGHTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--fp16", action="store_true")
    args = parser.parse_args()
    args.target.mkdir(parents=True, exist_ok=True)
    for name in (CONFIG, VOCAB):
        shutil.copy2(args.source / name, args.target / name)
    tensors = load_file(str(args.source / WEIGHTS))
    if args.fp16:
        tensors = {k: v.half() if v.is_floating_point() else v for k, v in tensors.items()}
    save_file(tensors, str(args.target / WEIGHTS))
    size = (args.target / WEIGHTS).stat().st_size / 2**20
    print(f"{args.target / WEIGHTS}: {size:.1f} MiB, {sum(t.numel() for t in tensors.values()):,}"
          f" parameters ({'fp16' if args.fp16 else 'as stored'}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
