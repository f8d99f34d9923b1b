"""Decoding steps in int8 (issue 34): how much faster than the shipped fp16-packed steps, and how
much the summaries move.

    OMP_NUM_THREADS=1 python -m lab.studies.int8_steps [--model denoisesum-yelp] [--rounds 6]
        [--dev ../shared/data/yelp/meansum_dev.jsonl] [--entities 100] [--json runs/int8.json]

Every decoder product a step makes (the LSTM's input and recurrent maps, the state's map, the
output layer's rows) goes through fbgemm's int8 product (`quantized::linear_dynamic`): weights
int8 per output row (scale max|w| / 127), each call's input quantized to 7 bits over one range.
fbgemm takes that range from the call's own input, so a row's product would depend on the rows
decoded beside it (another request's, in the service); one row spanning a fixed range is added
to every call instead ([-1, 1]: the LSTM state and tanh outputs never leave it; the embeddings'
largest |value| for the LSTM's input map), which the study checks bit for bit. `--keep-ih` keeps
the LSTM's input map in fp16 (its range is 5x wider).

Speed: one process, the two variants in turn for `--rounds` rounds (`summarize_results` of 4 of
examples/review_sets.jsonl, twice, CPU seconds). Summaries: the first `--entities` dev sets under
each, how many are identical, and ROUGE F1 (rouge-score) with the paired test of int8 - fp16.
The package is unchanged: the study swaps `models.packed.pack` while it decodes the int8 variant.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings
from pathlib import Path

import torch

from denoisesum.data.reviewsets import read_review_sets
from denoisesum.evaluation.rouge import rouge_f1_per_entity
from denoisesum.evaluation.stats import paired_test
from denoisesum.io import write_json
from denoisesum.models import packed
from denoisesum.summarizer import Summarizer

ROOT = Path(__file__).resolve().parents[2]


class Int8Linear(packed.PackedLinear):
    """F.linear(x, weight, bias) in int8, x within [-bound, bound]: x [..., I] -> [..., O]."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, bound: float = 1.0):
        self.out_features = weight.shape[0]
        w = weight.detach().float().contiguous()
        scale = (w.abs().amax(1).clamp_min(1e-12) / 127).double()
        zero = torch.zeros(len(scale), dtype=torch.long)
        with warnings.catch_warnings():  # (quantized tensors: deprecated in torch 2.13)
            warnings.simplefilter("ignore")
            q = torch.quantize_per_channel(w, scale, zero, 0, torch.qint8)
        b = None if bias is None else bias.detach().float().contiguous()
        self.packed = torch.ops.quantized.linear_prepack(q, b)
        self.span = torch.full((1, w.shape[1]), bound)  # the added row: [-bound, bound, ...]
        self.span[0, 0] = -bound

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        flat = torch.cat([x.reshape(-1, x.shape[-1]), self.span])  # [N+1, I]
        out = torch.ops.quantized.linear_dynamic(flat, self.packed, True)[:-1]  # [N, O]
        return out.view(*x.shape[:-1], self.out_features)


@contextlib.contextmanager
def packing_int8():
    """While inside, models.packed.pack makes Int8Linear (range [-1, 1])."""
    pack = packed.pack
    packed.pack = lambda weight, bias=None: Int8Linear(weight, bias)
    try:
        yield
    finally:
        packed.pack = pack


@contextlib.contextmanager
def stepping(summarizer: Summarizer, variant: str, keep_ih: bool):
    """While inside, the decoders step with `variant` ("fp16" or "int8") products: repacked
    on entry, and int8 for the output layer's rows too (packed as a search reaches them)."""
    model = summarizer.model
    model.pack(False)
    if variant == "fp16":
        model.pack(True)
        yield
        return
    with packing_int8():
        model.pack(True)
        bound = float(model.embed.weight.detach().abs().max())  # the LSTM's input: a word's
        if model.opinion is not None:  # embedding, plus an opinion's where the model has one
            bound += float(model.opinion.weight.detach().abs().max())
        for branch in model.branches().values():
            lstm = branch.decoder.lstm
            ih = lstm.weight_ih_l0, lstm.bias_ih_l0
            branch.decoder.packed["ih"] = (
                packed.PackedLinear(*ih) if keep_ih else Int8Linear(*ih, bound)
            )
        yield


def check_rows_alone() -> bool:
    """A row's int8 product is the same alone as among other rows (the added span row)."""
    torch.manual_seed(0)
    linear = Int8Linear(torch.randn(300, 64) * 0.05, torch.randn(300))
    x = torch.rand(40, 64) * 2 - 1
    whole = linear(x)
    return all(torch.equal(linear(x[i:j]), whole[i:j]) for i, j in [(0, 1), (3, 9), (7, 40)])


def sets_per_second(summarizer: Summarizer, sets: list[list[str]]) -> float:
    start = time.process_time()
    summarizer.summarize_results(sets[:4])
    summarizer.summarize_results(sets[1:5])
    return 8 / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="denoisesum-yelp")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--dev", type=Path, default=Path("../shared/data/yelp/meansum_dev.jsonl"))
    parser.add_argument("--entities", type=int, default=100)
    parser.add_argument("--keep-ih", action="store_true", help="the LSTM's input map in fp16")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not check_rows_alone():
        raise SystemExit("an int8 row's product depends on the rows beside it: not comparable")
    summarizer = Summarizer.from_pretrained(args.model)
    sets = [s.reviews for s in read_review_sets(ROOT / "examples" / "review_sets.jsonl")]
    variants = ("fp16", "int8")
    speed: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for v in variants:
            with stepping(summarizer, v, args.keep_ih):
                summarizer.summarize_results(sets[:4])  # warm-up: the output layer's packs made
                speed[v].append(sets_per_second(summarizer, sets))
        print(f"round {r + 1}: " + ", ".join(f"{v} {speed[v][-1]:.2f}" for v in variants))
    dev = list(read_review_sets(args.dev))[: args.entities]
    summaries, rouge = {}, {}
    for v in variants:
        with stepping(summarizer, v, args.keep_ih):
            results = summarizer.summarize_results([s.reviews for s in dev])
            summaries[v] = [r.summary for r in results]
        rouge[v] = rouge_f1_per_entity(summaries[v], [s.summaries for s in dev])
    same = sum(a == b for a, b in zip(summaries["fp16"], summaries["int8"], strict=True))
    tests = {t: paired_test(rouge["int8"][t], rouge["fp16"][t]) for t in rouge["fp16"]}
    mean = {v: sum(speed[v]) / len(speed[v]) for v in variants}
    print(
        f"sets/s: fp16 {mean['fp16']:.2f}, int8 {mean['int8']:.2f} "
        f"({mean['int8'] / mean['fp16']:.2f}x, faster in "
        f"{sum(b > a for a, b in zip(speed['fp16'], speed['int8'], strict=True))} "
        f"of {args.rounds} rounds)"
    )
    print(f"dev summaries identical: {same} of {len(dev)}")
    for t, test in tests.items():
        print(
            f"{t}: fp16 {test.mean_b:.2f}, int8 {test.mean_a:.2f}, difference "
            f"{test.difference:+.2f} [{test.ci_low:+.2f}, {test.ci_high:+.2f}], "
            f"p {test.p_value:.3f}"
        )
    if args.json:
        write_json(
            args.json,
            {
                "keep_ih": args.keep_ih,
                "speed": speed,
                "identical": same,
                "entities": len(dev),
                "rouge": {t: vars(test) for t, test in tests.items()},
                "summaries": summaries,
            },
        )


if __name__ == "__main__":
    main()
