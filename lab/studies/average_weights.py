"""Average the weights of summarizers of the same sizes and vocabulary (a "model soup").

    python -m lab.studies.average_weights runs/fit-yelp-ema runs/central/train -o runs/soup/two

The output takes the first model's config.json (its decoding settings too) and vocabulary.
Models trained on from one another, as issue 14's runs are, stay in one basin of the loss, where
the average of their weights can be a better model than either
(lab/results/archive/central-pairs.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from denoisesum.errors import DenoiseSumError
from denoisesum.models.store import load_denoisesum, save_model_dir


def average(models: list[torch.nn.Module]) -> dict[str, torch.Tensor]:
    states = [m.state_dict() for m in models]
    return {
        k: (sum(s[k].float() for s in states) / len(states)).to(states[0][k].dtype)
        for k in states[0]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", type=Path, nargs="+")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    if len(args.models) < 2:
        raise SystemExit("give at least two model directories")
    try:
        loaded = [load_denoisesum(path) for path in args.models]
    except DenoiseSumError as exc:
        raise SystemExit(f"error: {exc}") from None
    first_model, first_vocab, config = loaded[0]
    for path, (_, vocab, other) in zip(args.models[1:], loaded[1:], strict=True):
        if vocab.tokens != first_vocab.tokens:
            raise SystemExit(f"{path}: another vocabulary than {args.models[0]}'s")
        if other.get("model") != config.get("model"):
            raise SystemExit(f"{path}: other model sizes than {args.models[0]}'s")
    first_model.load_state_dict(average([model for model, _, _ in loaded]))
    save_model_dir(args.output, first_model, config, first_vocab)
    print(f"{len(loaded)} models averaged into {args.output}")


if __name__ == "__main__":
    main()
