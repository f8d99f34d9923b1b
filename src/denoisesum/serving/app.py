"""The HTTP service: a JSON API and a web page over one loaded `Summarizer`.

    from denoisesum.serving import ServiceLimits, create_app
    app = create_app(Summarizer.from_pretrained("runs/summarizer"), ServiceLimits(max_sets=8))
    # uvicorn.run(app, host="127.0.0.1", port=8000)   (what `denoisesum serve` does)

Endpoints:

    POST /v1/summarize        {"reviews": [str, ...]}
                              -> {"summary": str, "support": {...}, "model": str}
    POST /v1/summarize/batch  {"sets": [{"id": str (optional), "reviews": [str, ...]}, ...]}
                              -> {"results": [{"id", "summary", "support"}, ...], "model": str}
    GET  /v1/models           the loaded model (by name, not by path) and its settings
    GET  /healthz             {"status": "ok", ...}
    GET  /                    the web page (HEAD too; static/, no external resources: a
                              strict Content-Security-Policy forbids them)
    GET  /docs, /openapi.json the OpenAPI description (Swagger UI from the swagger-ui-bundle
                              package when installed, so it works offline; else from a CDN)

"support" is `denoisesum.inference.support.Explanation` without the summary: the reviews
supporting each sentence, with scores. Requests are validated against `ServiceLimits`;
errors are JSON, `{"error": {"status", "message", "field", "errors": [{"field", "message",
"type"}]}}`, with `field` a path into the request body such as `sets[1].reviews[0]`:

    400  the body is not valid JSON (nor UTF-8)
    408  the body stopped arriving for ServiceLimits.body_timeout_s (the connection closes);
         a request head that does not arrive whole within header_timeout_s gets a 408 from
         the server itself (server.py)
    413  the body is larger than its endpoint's limit, ServiceLimits.body_limits()
    415  the body is not sent as JSON (Content-Type: application/json; needed, as a simple
         cross-site form cannot send it)
    422  a field is missing, of the wrong type, empty, too long or too many, or unknown
    503  the queue is full (Retry-After), the request waited in it past the timeout, or the
         request bodies held at once would pass ServiceLimits.buffer_limit() (Retry-After)
    504  summarizing took longer than the timeout (the result is dropped)

Inference: one worker thread runs the model, decoding the requests waiting for it together
(worker.py).

The pieces: limits.py (ServiceLimits), schemas.py (request, response and error bodies),
worker.py (the queue), guard.py (middleware), routes.py (the handlers); this module wires them
together, and server.py runs it under uvicorn with read timeouts (`serve`).
"""

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from denoisesum.config import check
from denoisesum.inference.support import SupportConfig
from denoisesum.serving.guard import BodyBudget, add_middleware
from denoisesum.serving.limits import BODY_SLACK, ServiceLimits
from denoisesum.serving.routes import (
    add_docs_routes,
    add_page_routes,
    add_service_routes,
    add_summarize_routes,
)
from denoisesum.serving.schemas import (
    ServiceError,
    error_response,
    field_path,  # noqa: F401  (imported from here by the tests)
    unparsable_body,
    validation_error,
)
from denoisesum.serving.worker import InferenceQueue
from denoisesum.summarizer import Summarizer
from denoisesum.version import __version__

log = logging.getLogger("denoisesum.serving")
FASTAPI_PARSE_ERROR = "There was an error parsing the body"  # FastAPI's 400: not UTF-8, ...

DESCRIPTION = (
    "Opinion summaries of review sets (DenoiseSum), with the reviews supporting each "
    "summary sentence. The web page is at /."
)


def create_app(
    summarizer: Summarizer,
    limits: ServiceLimits | None = None,
    model_id: str | None = None,
    support: SupportConfig | None = None,
) -> FastAPI:
    """The service over a loaded summarizer (the model stays in memory for the app's life)."""
    limits = limits or ServiceLimits()
    check(limits)
    model_id = model_id or (summarizer.path.name if summarizer.path else "denoisesum")
    queue = InferenceQueue(summarizer, limits.max_batch_sets, limits.max_pending_sets, support)
    app = FastAPI(
        title="denoisesum",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description=DESCRIPTION,
    )
    budget = BodyBudget(limits.buffer_limit())
    app.state.queue = queue
    app.state.limits = limits
    app.state.budget = budget
    add_middleware(app, limits.body_limits(), BODY_SLACK, budget, limits.body_timeout_s)
    add_error_handlers(app)
    add_summarize_routes(app, queue, limits, model_id)
    add_service_routes(app, summarizer, queue, limits, model_id, budget)
    add_page_routes(app)
    add_docs_routes(app)
    return app


@asynccontextmanager
async def lifespan(app: FastAPI):
    yield
    app.state.queue.close()  # on shutdown: stop the worker, cancel the jobs still queued


def add_error_handlers(app: FastAPI) -> None:
    """Every error as the same JSON body, a crash included (its details go to the log)."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_error(exc)

    @app.exception_handler(ServiceError)
    async def _service(request: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.field, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == FASTAPI_PARSE_ERROR:
            return unparsable_body(exc.__cause__)
        return error_response(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("error while serving %s", request.url.path)
        return error_response(500, f"internal error: {type(exc).__name__}")
