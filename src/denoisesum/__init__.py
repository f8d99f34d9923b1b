"""denoisesum: unsupervised opinion summarization by noising and denoising."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from denoisesum.version import __version__

__all__ = ["Summarizer", "SummaryResult", "__version__"]

if TYPE_CHECKING:
    from denoisesum.summarizer import Summarizer, SummaryResult


def __getattr__(name: str) -> Any:
    # `Summarizer` imports torch: load it on first use so `import denoisesum` stays light
    if name in ("Summarizer", "SummaryResult"):
        from denoisesum import summarizer

        return getattr(summarizer, name)
    raise AttributeError(f"module 'denoisesum' has no attribute {name!r}")
