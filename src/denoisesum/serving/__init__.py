"""Summaries over HTTP and in the browser: `create_app(summarizer, limits)` (serving/app.py),
served by `denoisesum serve`. Needs the `serve` extra: `pip install -e ".[serve]"`."""

from denoisesum.serving.app import create_app
from denoisesum.serving.limits import ServiceLimits
from denoisesum.serving.worker import InferenceQueue

__all__ = ["InferenceQueue", "ServiceLimits", "create_app"]
