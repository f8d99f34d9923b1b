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

Inference: the model is loaded once; one worker thread runs it (torch on CPU gains nothing from
two decodes at once: they would share the same cores). Requests queue for it, and whatever is
waiting when it is free is decoded together in one `summarize_batch` call, up to
`max_batch_sets` review sets, so concurrent clients share forward passes. Batching does not
change a summary (every entity's beam is its own).
"""

# no `from __future__ import annotations`: FastAPI reads the endpoints' annotations at run time,
# and their request models are made in create_app (with the limits in their schema)

import asyncio
import collections
import concurrent.futures
import logging
import threading
from collections.abc import Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, StringConstraints
from starlette.exceptions import HTTPException as StarletteHTTPException

from denoisesum import __version__
from denoisesum.errors import DenoiseSumError
from denoisesum.inference.summarizer import Summarizer
from denoisesum.inference.support import SupportConfig
from denoisesum.inference.support import explain as explain_support

log = logging.getLogger("denoisesum.serving")

STATIC = Path(str(resources.files("denoisesum.serving") / "static"))
# the page and its files: nothing from elsewhere, no inline script or style
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")
MAX_LISTED_ERRORS = 20


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


# ---- inference queue ------------------------------------------------------------------------


class QueueFull(Exception):
    """More review sets are waiting than ServiceLimits.max_pending_sets."""


@dataclass
class Job:
    sets: list[list[str]]
    future: concurrent.futures.Future  # -> list of (summary, support dict) per set


class InferenceQueue:
    """One worker thread that runs the summarizer on queued jobs, several at a time."""

    def __init__(self, summarizer: Summarizer, max_batch_sets: int = 8,
                 max_pending_sets: int = 64, support: SupportConfig | None = None) -> None:
        self.summarizer = summarizer
        self.max_batch_sets = max_batch_sets
        self.max_pending_sets = max_pending_sets
        self.support = support or SupportConfig()
        self.pending_sets = 0
        self.batches = 0  # summarize_batch calls made (what batching saved shows here)
        self._jobs: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, sets: list[list[str]]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._cond:
            if self._closed:
                raise QueueFull("the service is shutting down")
            if self.pending_sets + len(sets) > self.max_pending_sets:
                raise QueueFull(f"{self.pending_sets} review sets are waiting for the model "
                                f"(at most {self.max_pending_sets}); try again shortly")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="denoisesum-inference",
                                                daemon=True)
                self._thread.start()
            self.pending_sets += len(sets)
            self._jobs.append(Job(sets, future))
            self._cond.notify()
        return future

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop after the job in progress; jobs still queued are cancelled."""
        with self._cond:
            self._closed = True
            while self._jobs:
                job = self._jobs.popleft()
                self.pending_sets -= len(job.sets)
                job.future.cancel()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _take(self) -> list[Job] | None:
        """The next jobs: the first waiting one, and those behind it while they fit in
        max_batch_sets (a bigger job goes alone; summarize_batch splits it)."""
        with self._cond:
            while not self._jobs and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            jobs = [self._jobs.popleft()]
            size = len(jobs[0].sets)
            while self._jobs and size + len(self._jobs[0].sets) <= self.max_batch_sets:
                jobs.append(self._jobs.popleft())
                size += len(jobs[-1].sets)
            self.pending_sets -= size
        return jobs

    def _run(self) -> None:
        while (jobs := self._take()) is not None:
            # a job whose request timed out while it waited was cancelled: skip it
            active = [job for job in jobs if job.future.set_running_or_notify_cancel()]
            if not active:
                continue
            try:
                self._process(active)
            except BaseException as exc:  # never let the worker die with futures unanswered
                for job in active:
                    if not job.future.done():
                        job.future.set_exception(exc)

    def _process(self, jobs: list[Job]) -> None:
        sets = [reviews for job in jobs for reviews in job.sets]
        try:
            summaries = self.summarizer.summarize_batch(sets, batch_size=self.max_batch_sets)
            self.batches += 1
        except Exception as exc:
            if len(jobs) == 1:
                jobs[0].future.set_exception(exc)
                return
            for job in jobs:  # one bad job must not fail the others: each alone
                self._process([job])
            return
        start = 0
        for job in jobs:
            results = []
            for reviews, summary in zip(job.sets, summaries[start: start + len(job.sets)],
                                        strict=True):
                support = explain_support(reviews, summary, self.summarizer.vocab.tokenizer,
                                          self.support).to_dict()
                del support["summary"]
                results.append((summary, support))
            start += len(job.sets)
            job.future.set_result(results)


# ---- request and response bodies ------------------------------------------------------------


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("review is empty (or only white space)")
    return text


def request_models(limits: ServiceLimits) -> tuple[type[BaseModel], type[BaseModel]]:
    """The request bodies, with the limits in their schema (so /docs shows them)."""
    Review = Annotated[StrictStr, StringConstraints(max_length=limits.max_review_chars),
                       AfterValidator(_not_blank)]
    Reviews = Annotated[list[Review], Field(
        min_length=1, max_length=limits.max_reviews,
        description=f"The entity's reviews: 1 to {limits.max_reviews} non-empty texts of at "
                    f"most {limits.max_review_chars} characters.")]

    class SummarizeRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", json_schema_extra={
            "examples": [{"reviews": ["The ramen was rich and the staff friendly.",
                                      "Great broth, but we waited 30 minutes."]}]})
        reviews: Reviews

    class ReviewSetIn(BaseModel):
        model_config = ConfigDict(extra="forbid")
        id: StrictStr | None = Field(default=None, description="Echoed in the result.")
        reviews: Reviews

    class BatchRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        sets: list[ReviewSetIn] = Field(
            min_length=1, max_length=limits.max_sets,
            description=f"1 to {limits.max_sets} review sets, summarized independently.")

    return SummarizeRequest, BatchRequest


class ReviewSupportOut(BaseModel):
    index: int = Field(description="Position of the review in the request's list.")
    score: float = Field(description="IDF-weighted share of the sentence's content words "
                                     "found in this review (0 to 1).")
    matched: list[str]


class SentenceOut(BaseModel):
    text: str
    start: int = Field(description="Character offset of the sentence in the summary.")
    end: int
    score: float = Field(description="The best review's score.")
    supported: bool
    reviews: list[ReviewSupportOut] = Field(description="Supporting reviews, best first.")
    missing: list[str] = Field(description="Content words found in no review.")


class SupportOut(BaseModel):
    sentences: list[SentenceOut]
    supported_share: float = Field(description="Share of supported sentences.")
    threshold: float = Field(description="A sentence is supported when its score is at least "
                                         "this.")


class SummarizeResponse(BaseModel):
    summary: str
    support: SupportOut
    model: str


class BatchResult(BaseModel):
    id: str | None
    summary: str
    support: SupportOut


class BatchResponse(BaseModel):
    results: list[BatchResult]
    model: str


class FieldError(BaseModel):
    field: str = Field(description="Path into the request body, e.g. sets[1].reviews[0].")
    message: str
    type: str | None = None


class ErrorBody(BaseModel):
    status: int
    message: str = Field(description="One line for people; names the first bad field.")
    field: str | None = Field(description="The first bad field ('body': the whole body).")
    errors: list[FieldError] | None = Field(
        default=None, description="Every bad field (422 only; the first 20).")


class ErrorResponse(BaseModel):
    error: ErrorBody


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": description} for status, description in (
        (400, "The body is not valid JSON."),
        (413, "The body is too large."),
        (415, "The body is not sent as application/json."),
        (422, "A field is missing, of the wrong type, empty, too long, too many or unknown."),
        (503, "The queue is full, or the request waited in it past the timeout (Retry-After)."),
        (504, "Summarizing took longer than the timeout."))}


# ---- errors ---------------------------------------------------------------------------------


class ServiceError(Exception):
    def __init__(self, status: int, message: str, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field, self.headers = status, message, field, headers


def field_path(loc: Sequence[Any]) -> str:
    """('body', 'sets', 1, 'reviews', 0) -> 'sets[1].reviews[0]'; the whole body: 'body'."""
    parts = list(loc[1:] if loc and loc[0] == "body" else loc)
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def error_response(status: int, message: str, field: str | None = None,
                   errors: list[dict] | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"status": status, "message": message, "field": field}
    if errors is not None:
        body["errors"] = errors
    return JSONResponse({"error": body}, status_code=status, headers=headers)


def _validation_error(exc: RequestValidationError) -> JSONResponse:
    errors = list(exc.errors())
    for err in errors:
        if err.get("type") == "json_invalid":
            ctx = err.get("ctx") or {}
            where = err.get("loc", ())[-1] if err.get("loc") else None
            detail = ctx.get("error", "invalid JSON")
            at = f" at character {where}" if isinstance(where, int) else ""
            return error_response(400, f"the body is not valid JSON: {detail}{at}", "body")
    listed = []
    for err in errors[:MAX_LISTED_ERRORS]:
        path = field_path(err.get("loc", ()))
        message = err.get("msg", "invalid")
        if err.get("type") == "missing":
            message = "required field is missing"
        elif err.get("type") == "extra_forbidden":
            message = "unknown field"
        elif message.startswith("Value error, "):
            message = message[len("Value error, "):]
        listed.append({"field": path, "message": message, "type": err.get("type")})
    first = listed[0] if listed else {"field": "body", "message": "invalid request"}
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return error_response(422, f"{first['field']}: {first['message']}{more}", first["field"],
                          listed)


def is_json(content_type: str) -> bool:
    kind = content_type.split(";")[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/")
                                           and kind.endswith("+json"))


class RequestGuard:
    """ASGI middleware for requests with a body: 415 unless it is sent as JSON, 413 when it
    is over `limit` bytes (before it is parsed; the body is read here and replayed)."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in {"POST", "PUT", "PATCH"}:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        if scope["path"].startswith("/v1/") and not is_json(content_type):
            got = f"got {content_type!r}" if content_type else "no Content-Type header"
            response = error_response(415, "send the body as JSON, with the header "
                                           f"'Content-Type: application/json' ({got})", "body")
            await response(scope, receive, send)
            return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._reject(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._reject(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _reject(self, scope, receive, send) -> None:
        response = error_response(413, f"the body is larger than {self.limit:,} bytes", "body")
        await response(scope, receive, send)


# ---- the app --------------------------------------------------------------------------------


def model_info(summarizer: Summarizer, model_id: str) -> dict:
    settings = asdict(summarizer.config)
    return {"id": model_id, "path": str(summarizer.path) if summarizer.path else None,
            "kind": "denoisesum", "vocab_size": len(summarizer.vocab),
            "parameters": sum(p.numel() for p in summarizer.model.parameters()),
            "device": str(summarizer.device), "settings": settings}


def _swagger_assets() -> Path | None:
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    path = Path(swagger_ui_bundle.swagger_ui_path)
    return path if (path / "swagger-ui-bundle.js").is_file() else None


def create_app(summarizer: Summarizer, limits: ServiceLimits | None = None,
               model_id: str | None = None, support: SupportConfig | None = None) -> FastAPI:
    """The service over a loaded summarizer (the model stays in memory for the app's life)."""
    limits = limits or ServiceLimits()
    limits.validate()
    model_id = model_id or (summarizer.path.name if summarizer.path else "denoisesum")
    queue = InferenceQueue(summarizer, limits.max_batch_sets, limits.max_pending_sets, support)
    SummarizeRequest, BatchRequest = request_models(limits)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        queue.close()

    app = FastAPI(title="denoisesum", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None,
                  description="Opinion summaries of review sets (DenoiseSum), with the reviews "
                              "supporting each summary sentence. The web page is at /.")
    app.state.queue = queue
    app.state.limits = limits
    app.add_middleware(RequestGuard, limit=limits.body_limit())

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_error(exc)

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

    @app.middleware("http")
    async def _page_policy(request: Request, call_next):
        response = await call_next(request)
        path = request.url.path
        if path == "/" or path.startswith("/static/"):
            response.headers["Content-Security-Policy"] = PAGE_CSP
            response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    async def run(sets: list[list[str]]) -> list[tuple[str, dict]]:
        try:
            future = queue.submit(sets)
        except QueueFull as exc:
            raise ServiceError(503, str(exc), headers={"Retry-After": "1"}) from None
        wrapped = asyncio.wrap_future(future)
        done, _ = await asyncio.wait({wrapped}, timeout=limits.timeout_s)
        if not done:
            if future.cancel():  # still queued: it never reached the model
                raise ServiceError(503, f"the service is busy: the request waited "
                                        f"{limits.timeout_s:g} s for the model",
                                   headers={"Retry-After": "1"})
            if not future.done():  # being decoded: it cannot be interrupted; its result is lost
                wrapped.cancel()
                raise ServiceError(504, f"summarizing took longer than {limits.timeout_s:g} s")
        if future.cancelled():  # the queue was closed: the server is stopping
            raise ServiceError(503, "the service is shutting down")
        try:
            return future.result()
        except DenoiseSumError as exc:
            raise ServiceError(422, str(exc), "reviews") from None

    @app.post("/v1/summarize", response_model=SummarizeResponse, tags=["summarize"],
              summary="Summarize one entity's reviews", responses=ERROR_RESPONSES)
    async def summarize(body: SummarizeRequest) -> dict:  # type: ignore[valid-type]
        [(summary, support_)] = await run([body.reviews])
        return {"summary": summary, "support": support_, "model": model_id}

    @app.post("/v1/summarize/batch", response_model=BatchResponse, tags=["summarize"],
              summary="Summarize several review sets in one request",
              responses=ERROR_RESPONSES)
    async def summarize_batch(body: BatchRequest) -> dict:  # type: ignore[valid-type]
        results = await run([s.reviews for s in body.sets])
        return {"results": [{"id": s.id, "summary": summary, "support": support_}
                            for s, (summary, support_) in zip(body.sets, results, strict=True)],
                "model": model_id}

    info = model_info(summarizer, model_id)

    @app.get("/v1/models", tags=["service"], summary="The loaded model")
    async def models() -> dict:
        return {"models": [info], "limits": asdict(limits) | {"body_limit": limits.body_limit()}}

    @app.get("/healthz", tags=["service"], summary="Liveness and queue state")
    async def healthz() -> dict:
        return {"status": "ok", "model": model_id, "pending_sets": queue.pending_sets,
                "batches": queue.batches}

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    assets = _swagger_assets()
    if assets is not None:
        app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs():
        if assets is None:  # FastAPI's default: Swagger UI from a CDN
            return get_swagger_ui_html(openapi_url=app.openapi_url, title="denoisesum API")
        return get_swagger_ui_html(openapi_url=app.openapi_url, title="denoisesum API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon-32x32.png")

    return app
