"""Helpers the benchmarks, the report scripts and the studies share: latency percentiles, what
machine a number was measured on, decoding variants. Not part of the package: nothing in
`denoisesum` needs them.

Everything that uses it is run as a module from the repository root (`python -m
benchmarks.summarize_speed`, `python -m scripts.report_yelp`, `python -m lab.studies.NAME`) and
imports it by one name, never editing `sys.path`:

    from benchmarks.common import cpu_name

Standard library only, so that the load-test client can use it without torch.
"""

from __future__ import annotations

import dataclasses
import platform
from pathlib import Path

from denoisesum.config import check


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0-1) of `values`: the nearest of the sorted values, no interpolation."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def processor() -> str:
    """The processor as Python names it: often only the architecture ('x86_64')."""
    return platform.processor() or platform.machine()


def system() -> str:
    """Processor and operating system, e.g. 'x86_64, Linux'."""
    return f"{processor()}, {platform.system()}"


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo ('AMD EPYC 7B13'), else `processor()` (not Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return processor()


def run_module(module: str, args: list[str]) -> None:
    """Run `module` as `python -m module args` would (the servers of gc_clock, round_clock)."""
    import runpy
    import sys

    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def parse_variants(text: str) -> dict[str, dict]:
    """'name:key=value,key=value;name2:...' -> {name: {key: value}}, values read as TOML
    literals (true, 3, 0.5, "x"); a variant with no settings is the model's own decoding."""
    import tomllib

    out: dict[str, dict] = {}
    for item in filter(None, (v.strip() for v in text.split(";"))):
        name, _, settings = item.partition(":")
        pairs = [kv.split("=", 1) for kv in settings.split(",") if kv]
        out[name.strip()] = {k.strip(): tomllib.loads(f"v = {v.strip()}")["v"] for k, v in pairs}
    return out


def configured(base, changes: dict):
    """A copy of `base` (a SummarizerConfig) with a variant's changes (parse_variants):
    shortlist/bf16 on the summarizer config, everything else on its search or policy (by name);
    checked as every settings object (config.check: bounds, then validate())."""
    top = {k: v for k, v in changes.items() if k in ("shortlist", "bf16")}
    rest = {k: v for k, v in changes.items() if k not in top}
    out = dataclasses.replace(base.with_settings(**rest), **top)
    check(out)
    return out


def emit(text: str, markdown: Path | None = None) -> None:
    """Print a report and, when asked, write it to `markdown` atomically."""
    print(text)
    if markdown:
        from denoisesum.io import atomic_write  # only here: the load client has no torch

        with atomic_write(markdown) as handle:
            handle.write(text)
