"""Linear maps over packed fp16 weights, computed in fp32, for decoding on a CPU.

A decoding step multiplies a few rows (beams x review sets, 20 for 4 sets) by each decoder's
LSTM and output-layer weights, about 8.5 MB in fp32 for the shipped model. That is more than a
core's caches hold, so the products wait on memory: 24 GFLOP/s for a 20 x 256 x 1024 product
whose weights are not in cache, 44 when they are (this project's 2-core Zen 3 machine). fbgemm's
fp16 GEMM (PyTorch's `quantized::linear_dynamic_fp16`) keeps the weights packed in half the
bytes, widens them to fp32 in registers and multiplies and sums in fp32: 2.0-2.4x faster for
those products there.

It changes nothing in what a model computes when every weight already is an fp16 number, as in
every model saved by models/store.py (stored as fp16, loaded back as fp32): the products then
equal the fp32 ones up to the order of their sums (1e-6 relative). `pack` checks that, and
returns None where a weight is not (a model fresh from training) or where this PyTorch has no
fbgemm (a CPU without AVX2, an ARM build): the caller keeps the fp32 path.
"""

from __future__ import annotations

from functools import cache

import torch


@cache
def available() -> bool:
    """Whether this PyTorch packs and multiplies fp16 weights (fbgemm on an x86 CPU)."""
    try:
        packed = torch.ops.quantized.linear_prepack_fp16(torch.zeros(1, 1), None)
        torch.ops.quantized.linear_dynamic_fp16(torch.zeros(1, 1), packed)
    except (AttributeError, RuntimeError, NotImplementedError):
        return False
    return True


def is_fp16_exact(x: torch.Tensor) -> bool:
    """Every value of x is an fp16 number (so packing it as fp16 loses nothing)."""
    return bool(torch.equal(x.half().float(), x))


class PackedLinear:
    """F.linear(x, weight, bias) with weight [O, I] packed as fp16: x [..., I] -> [..., O]."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        self.out_features = weight.shape[0]
        self.packed = torch.ops.quantized.linear_prepack_fp16(
            weight.detach().float().contiguous(),
            None if bias is None else bias.detach().float().contiguous(),
        )

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:  # (a decoding step's LSTM: no reshaping, two ops fewer)
            return torch.ops.quantized.linear_dynamic_fp16(x, self.packed)
        flat = x.reshape(-1, x.shape[-1])  # the op takes 2-D inputs
        out = torch.ops.quantized.linear_dynamic_fp16(flat, self.packed)
        return out.view(*x.shape[:-1], self.out_features)


class PackedBlocks:
    """Blocks of rows of one linear map, each packed: x -> their outputs side by side."""

    def __init__(self, blocks: list[PackedLinear]) -> None:
        self.blocks = blocks

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])  # (once, not once per block)
        out = torch.cat([block(flat) for block in self.blocks], -1)
        return out.view(*x.shape[:-1], out.shape[-1])


def pack(weight: torch.Tensor, bias: torch.Tensor | None = None) -> PackedLinear | None:
    """weight [O, I] and bias [O] packed, or None where that would change them or cannot run
    (a GPU tensor, a weight that is not fp16-exact, no fbgemm)."""
    if weight.device.type != "cpu" or weight.dtype != torch.float32 or not available():
        return None
    if not is_fp16_exact(weight):
        return None
    return PackedLinear(weight, bias)


def lstm_cell(
    x: torch.Tensor,
    h: torch.Tensor,
    c: torch.Tensor,
    w_ih: PackedLinear,
    w_hh: PackedLinear,
) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.lstm_cell with packed weights: x [B, E], h, c [B, D] -> h', c' [B, D]. The gate
    arithmetic is ATen's own CPU lstm_cell, operation for operation (gates i, f, g, o)."""
    gates = w_ih(x) + w_hh(h)  # [B, 4D]
    i, f, g, o = gates.unsafe_chunk(4, 1)
    i, f, g, o = i.sigmoid_(), f.sigmoid_(), g.tanh_(), o.sigmoid_()
    c = (f * c).add_(i * g)
    return o * c.tanh(), c
