"""Whether this machine computes bfloat16 natively, for the bf16 autocast of training
(`train.precision = "bf16"`) and decoding (`SummarizerConfig.bf16`, `summarize --bf16`).

On a CPU, PyTorch runs bf16 LSTMs through oneDNN, which has them only on CPUs with AVX512-BF16
or AMX: on others (AVX2 machines, e.g.) the first LSTM call fails with "could not create a
primitive descriptor for the LSTM forward propagation primitive". Asking for bf16 there falls
back to fp32 with a warning, since bf16 is a speed setting that does not change what a model
learns or says in any way that matters (docs/results/training.md, summarize.md).
"""

from __future__ import annotations

import warnings

import torch

from denoisesum.errors import DenoiseSumError


class PrecisionWarning(UserWarning):
    """bf16 was asked for where it cannot run: fp32 is used instead."""


def bf16_supported(device: torch.device) -> bool:
    """True where bf16 autocast runs natively: a CUDA GPU with bf16, or a CPU that oneDNN
    computes bf16 on (AVX512-BF16 or AMX)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a build without oneDNN
        return False


def use_bf16(device: torch.device, setting: str) -> bool:
    """True when bf16 can run on `device`; else a PrecisionWarning naming `setting` (what asked
    for it) and False: the caller computes in fp32."""
    if bf16_supported(device):
        return True
    lacks = (
        "this CPU has no bfloat16 instructions (AVX512-BF16 or AMX)"
        if device.type == "cpu"
        else f"this {device.type} device has no bfloat16"
    )
    warnings.warn(f"{setting}: {lacks}; computing in fp32", PrecisionWarning, stacklevel=2)
    return False


DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str | torch.device = "auto", setting: str = "device") -> torch.device:
    """Where to compute: "auto" is the GPU when PyTorch sees one (CUDA), else the CPU; "cpu",
    "cuda" or "cuda:N" as given. Asking for CUDA where there is none, or for anything else, is
    a one-line DenoiseSumError naming `setting` (the option or argument that asked)."""
    if isinstance(device, torch.device):
        name = str(device)
    elif isinstance(device, str):
        name = device.strip().lower()
    else:
        name = repr(device)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name != "cpu" and not (name == "cuda" or name.startswith("cuda:")):
        raise DenoiseSumError(
            f"{setting} {device!r} must be one of {', '.join(DEVICES)} (or cuda:N)"
        )
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise DenoiseSumError(
            f"{setting} {name!r}: no CUDA GPU is available here (PyTorch "
            f"{torch.__version__} sees none); use cpu or auto"
        )
    try:
        out = torch.device(name)
    except RuntimeError as exc:  # "cuda:x"
        raise DenoiseSumError(f"{setting} {device!r}: {exc}") from None
    if out.type == "cuda" and out.index is not None and out.index >= torch.cuda.device_count():
        raise DenoiseSumError(
            f"{setting} {name!r}: there are {torch.cuda.device_count()} CUDA "
            "GPU(s), numbered from 0"
        )
    return out
