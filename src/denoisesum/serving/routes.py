"""The route handlers: the JSON API (/v1/summarize, /v1/summarize/batch, /v1/models,
/healthz), the web page and its files (/, /static), and the API docs (/docs)."""

# no `from __future__ import annotations`: FastAPI reads the endpoints' annotations at run time,
# and their request models are made here, per app (with the limits in their schema)

import asyncio
from dataclasses import asdict
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from denoisesum.errors import ConfigError, DenoiseSumError
from denoisesum.execution.pool import WorkerLost
from denoisesum.serving.guard import BodyBudget
from denoisesum.serving.limits import ServiceLimits
from denoisesum.serving.schemas import (
    ERROR_RESPONSES,
    BatchResponse,
    ServiceError,
    SummarizeResponse,
    request_models,
)
from denoisesum.serving.worker import DeadlinePassed, InferenceQueue, QueueFull
from denoisesum.summarizer import Summarizer, SummaryResult

STATIC = Path(str(resources.files("denoisesum.serving") / "static"))


# ---- the API --------------------------------------------------------------------------------


def add_summarize_routes(
    app: FastAPI, queue: InferenceQueue, limits: ServiceLimits, model_id: str
) -> None:
    SummarizeRequest, BatchRequest = request_models(limits)

    def summarize_route(path: str, response_model: type, summary: str):
        """POST `path`: a route of the summarize group, answering errors as ERROR_RESPONSES."""
        return app.post(
            path,
            response_model=response_model,
            tags=["summarize"],
            summary=summary,
            responses=ERROR_RESPONSES,
        )

    @summarize_route("/v1/summarize", SummarizeResponse, "Summarize one entity's reviews")
    async def summarize(body: SummarizeRequest) -> dict:  # type: ignore[valid-type]
        [result] = await run(
            queue, [body.reviews], limits.timeout_s, [body.ratings], body.slice, options(body)
        )
        return {**result.to_dict(), "model": model_id}

    @summarize_route(
        "/v1/summarize/batch", BatchResponse, "Summarize several review sets in one request"
    )
    async def summarize_batch(body: BatchRequest) -> dict:  # type: ignore[valid-type]
        results = await run(
            queue,
            [s.reviews for s in body.sets],
            limits.timeout_s,
            [s.ratings for s in body.sets],
            body.slice,
            options(body),
        )
        return {
            "results": [
                {"id": s.id, **result.to_dict()}
                for s, result in zip(body.sets, results, strict=True)
            ],
            "model": model_id,
        }


def options(body) -> dict:
    """The request's per-call options that it sets (method, max_words, beam, first_person)."""
    keys = ("method", "max_words", "beam", "first_person")
    return {k: v for k in keys if (v := getattr(body, k)) is not None}


async def run(
    queue: InferenceQueue,
    sets: list[list[str]],
    timeout_s: float,
    ratings: list | None = None,
    slice: str = "all",
    options: dict | None = None,
) -> list[SummaryResult]:
    """A SummaryResult per set (explained), from the worker; a full queue, a timeout or a
    shutdown as 503/504, and a set the model cannot read as 422."""
    try:
        future = queue.submit(sets, ratings, slice, timeout_s, options)
    except QueueFull as exc:
        raise ServiceError(503, str(exc), headers={"Retry-After": "1"}) from None
    wrapped = asyncio.wrap_future(future)
    done, _ = await asyncio.wait({wrapped}, timeout=timeout_s)
    if not done:
        if future.cancel():  # still queued: it never reached the model
            raise ServiceError(
                503,
                f"the service is busy: the request waited {timeout_s:g} s for the model",
                headers={"Retry-After": "1"},
            )
        if not future.done():  # being decoded: it cannot be interrupted; its result is lost
            wrapped.cancel()
            raise ServiceError(504, f"summarizing took longer than {timeout_s:g} s")
    if future.cancelled():  # the queue was closed: the server is stopping
        raise ServiceError(503, "the service is shutting down")
    try:
        return wrapped.result()  # (the asyncio side: its exception then counts as retrieved)
    except ConfigError as exc:  # an option the method does not take (beam with opinions)
        raise ServiceError(422, str(exc), exc.key or "body") from None
    except DenoiseSumError as exc:
        raise ServiceError(422, str(exc), "reviews") from None
    except WorkerLost as exc:  # serve --workers: its decoding process died
        raise ServiceError(503, str(exc), headers={"Retry-After": "1"}) from None
    except DeadlinePassed:  # the worker dropped it a moment before the wait above ended
        raise ServiceError(504, f"summarizing took longer than {timeout_s:g} s") from None


def add_service_routes(
    app: FastAPI,
    summarizer: Summarizer,
    queue: InferenceQueue,
    limits: ServiceLimits,
    model_id: str,
    budget: BodyBudget,
) -> None:
    info = model_info(summarizer, model_id)
    shown_limits = asdict(limits) | {
        "body_limits": limits.body_limits(),
        "buffer_limit": limits.buffer_limit(),
    }

    @app.get("/v1/models", tags=["service"], summary="The loaded model")
    async def models() -> dict:
        return {"models": [info], "limits": shown_limits}

    @app.get("/healthz", tags=["service"], summary="Liveness, queue and buffer state")
    async def healthz() -> dict:
        return {
            "status": "ok",
            "model": model_id,
            "workers": queue.workers,  # the decoding processes (serve --workers: execution/pool.py)
            "pending_sets": queue.pending_sets,
            "batches": queue.batches,
            "buffered_bytes": budget.used,
        }

    # HEAD as GET without the body (a route of its own: one route for both methods would give
    # the OpenAPI description two operations with one id)
    app.add_api_route("/healthz", healthz, methods=["HEAD"], include_in_schema=False)


def model_info(summarizer: Summarizer, model_id: str) -> dict:
    """The model by its name (its directory's), never its path: where the server keeps its
    files is none of a client's business."""
    settings = asdict(summarizer.config)
    return {
        "id": model_id,
        "name": summarizer.path.name if summarizer.path else None,
        "kind": "denoisesum",
        "vocab_size": len(summarizer.vocab),
        "parameters": sum(p.numel() for p in summarizer.model.parameters()),
        "device": str(summarizer.device),
        "settings": settings,
    }


# ---- the page and the docs ------------------------------------------------------------------


def add_page_routes(app: FastAPI) -> None:
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")


def add_docs_routes(app: FastAPI) -> None:
    """/docs: Swagger UI from the swagger-ui-bundle package when installed (so it works
    offline), else FastAPI's default, from a CDN."""
    assets = _swagger_assets()
    if assets is not None:
        app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs():
        if assets is None:
            return get_swagger_ui_html(openapi_url=app.openapi_url, title="denoisesum API")
        return get_swagger_ui_html(
            openapi_url=app.openapi_url,
            title="denoisesum API",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/docs-assets/favicon-32x32.png",
        )


def _swagger_assets() -> Path | None:
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    path = Path(swagger_ui_bundle.swagger_ui_path)
    return path if (path / "swagger-ui-bundle.js").is_file() else None
