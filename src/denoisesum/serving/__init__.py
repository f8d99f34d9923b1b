"""Summaries over HTTP and in the browser: `create_app(summarizer, limits)` (serving/app.py),
served by `denoisesum serve`. Needs the `serve` extra: `pip install -e ".[serve]"`."""

from denoisesum.serving.app import InferenceQueue, ServiceLimits, create_app

__all__ = ["InferenceQueue", "ServiceLimits", "create_app"]
