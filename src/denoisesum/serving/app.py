"""The HTTP service: a JSON API and a web page over one loaded `Summarizer`.

    from denoisesum.serving import ServiceLimits, create_app
    app = create_app(Summarizer.from_pretrained("runs/summarizer"), ServiceLimits(max_sets=8))
    # uvicorn.run(app, host="127.0.0.1", port=8000)   (what `denoisesum serve` does)

Endpoints:

    POST /v1/summarize        {"reviews": [str, ...]}
                              -> {"summary": str, "support": {...}, "model": str}
    POST /v1/summarize/batch  {"sets": [{"id": str (optional), "reviews": [str, ...]}, ...]}
                              -> {"results": [{"id", "summary", "support"}, ...], "model": str}
    GET  /v1/models           the loaded model and its settings
    GET  /healthz             {"status": "ok", ...}
    GET  /                    the web page (static/, no external resources: a strict
                              Content-Security-Policy forbids them)
    GET  /docs, /openapi.json the OpenAPI description (Swagger UI from the swagger-ui-bundle
                              package when installed, so it works offline; else from a CDN)

"support" is `denoisesum.inference.support.Explanation` without the summary: the reviews
supporting each sentence, with scores. Requests are validated against `ServiceLimits`;
errors are JSON, `{"error": {"status", "message", "field", "errors": [{"field", "message",
"type"}]}}`, with `field` a path into the request body such as `sets[1].reviews[0]`:

    400  the body is not valid JSON
    413  the body is larger than ServiceLimits.body_limit()
    415  the body is not sent as JSON (Content-Type: application/json; needed, as a simple
         cross-site form cannot send it)
    422  a field is missing, of the wrong type, empty, too long or too many, or unknown
    503  the queue is full (Retry-After), or the request waited in it past the timeout
    504  summarizing took longer than the timeout (the result is dropped)

Inference: one worker thread runs the model, decoding the requests waiting for it together
(worker.py).

The pieces: schemas.py (request, response and error bodies), worker.py (the queue),
guard.py (middleware), routes.py (the handlers); this module wires them together.
"""

import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from denoisesum import __version__
from denoisesum.errors import DenoiseSumError
from denoisesum.inference.summarizer import Summarizer
from denoisesum.inference.support import SupportConfig
from denoisesum.serving.guard import add_middleware
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
    validation_error,
)
from denoisesum.serving.worker import InferenceQueue

log = logging.getLogger("denoisesum.serving")

DESCRIPTION = ("Opinion summaries of review sets (DenoiseSum), with the reviews supporting each "
               "summary sentence. The web page is at /.")


@dataclass
class ServiceLimits:
    max_reviews: int = 100  # reviews in one set (the model reads its first max_reviews only)
    max_review_chars: int = 5000  # characters in one review
    max_sets: int = 16  # review sets in one batch request
    timeout_s: float = 60.0  # a request waiting or running longer gets a 503/504
    max_batch_sets: int = 8  # review sets decoded together in one summarize_batch call
    max_pending_sets: int = 64  # review sets waiting for the model; more: 503 at once
    max_body_bytes: int | None = None  # None: enough for max_sets full sets (body_limit())

    def validate(self) -> None:
        for name in ("max_reviews", "max_review_chars", "max_sets", "max_batch_sets",
                     "max_pending_sets"):
            if getattr(self, name) < 1:
                raise DenoiseSumError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.timeout_s <= 0:
            raise DenoiseSumError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.max_pending_sets < self.max_sets:
            raise DenoiseSumError(f"max_pending_sets ({self.max_pending_sets}) must be at least "
                                  f"max_sets ({self.max_sets}): a full batch request must fit")
        if self.max_body_bytes is not None and self.max_body_bytes < 1024:
            raise DenoiseSumError(f"max_body_bytes must be at least 1024, got "
                                  f"{self.max_body_bytes}")

    def body_limit(self) -> int:
        """Largest request body in bytes: max_body_bytes, or room for max_sets sets of
        max_reviews reviews of max_review_chars characters (6 bytes each: a JSON escape)."""
        if self.max_body_bytes is not None:
            return self.max_body_bytes
        return self.max_sets * self.max_reviews * (self.max_review_chars * 6 + 8) + 65536


def create_app(summarizer: Summarizer, limits: ServiceLimits | None = None,
               model_id: str | None = None, support: SupportConfig | None = None) -> FastAPI:
    """The service over a loaded summarizer (the model stays in memory for the app's life)."""
    limits = limits or ServiceLimits()
    limits.validate()
    model_id = model_id or (summarizer.path.name if summarizer.path else "denoisesum")
    queue = InferenceQueue(summarizer, limits.max_batch_sets, limits.max_pending_sets, support)
    app = FastAPI(title="denoisesum", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None, description=DESCRIPTION)
    app.state.queue = queue
    app.state.limits = limits
    add_middleware(app, limits.body_limit())
    add_error_handlers(app)
    add_summarize_routes(app, queue, limits, model_id)
    add_service_routes(app, summarizer, queue, limits, model_id)
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
        return error_response(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("error while serving %s", request.url.path)
        return error_response(500, f"internal error: {type(exc).__name__}")
