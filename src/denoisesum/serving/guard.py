"""The middleware: the body guard (415 unless JSON, 413 when too large for its endpoint, 503 when
request bodies fill the shared buffer budget, 408 when the body stalls; all before parsing) and
the page policy (the web page's Content-Security-Policy and nosniff headers).

Both are plain ASGI middleware: Starlette's BaseHTTPMiddleware (`@app.middleware("http")`)
raises "No response returned" when the guard answers nothing because the client left."""

import asyncio
import logging

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from denoisesum.serving.schemas import error_response

log = logging.getLogger("denoisesum.serving")

# the page and its files: nothing from elsewhere, no inline script or style
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


def add_middleware(
    app: FastAPI,
    body_limits: dict[str, int],
    other_limit: int,
    budget: "BodyBudget",
    body_timeout_s: float,
) -> None:
    """The guard, then the page policy: the one added last runs first, so the policy's
    headers are also on the guard's own answers (a 413 for the page)."""
    app.add_middleware(
        RequestGuard,
        limits=body_limits,
        other_limit=other_limit,
        budget=budget,
        body_timeout_s=body_timeout_s,
    )
    app.add_middleware(PagePolicy)


class PagePolicy:
    """The page's Content-Security-Policy and nosniff headers on / and /static/."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not (path == "/" or path.startswith("/static/")):
            await self.app(scope, receive, send)
            return

        async def send_with_policy(message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.lower() not in (b"content-security-policy", b"x-content-type-options")
                ]
                headers += [
                    (b"content-security-policy", PAGE_CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_policy)


def is_json(content_type: str) -> bool:
    kind = content_type.split(";")[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


class BodyBudget:
    """Bytes of request bodies held at once, all requests together: a body counts from its
    first byte until its answer is sent (the body, and what is parsed from it, live that long).
    Used from the event loop only, so it needs no lock."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    @property
    def left(self) -> int:
        return self.limit - self.used

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used -= size


class Refused(Exception):
    """The body is refused before the app reads it: `answer` (a JSON error about the body) is
    what the guard sends, None when the client has left (no answer)."""

    def __init__(self, answer: JSONResponse | None = None) -> None:
        super().__init__()
        self.answer = answer


def _refused(status: int, message: str, headers: dict[str, str] | None = None) -> Refused:
    return Refused(error_response(status, message, "body", headers=headers))


class RequestGuard:
    """ASGI middleware for requests with a body. Before anything parses it:

    - 415 unless it is sent as JSON (paths under /v1/);
    - 413 when it is larger than its endpoint's limit (by Content-Length at once, else as it
      is counted);
    - 503 with Retry-After when it would pass what is left of the shared budget: at once when
      the declared Content-Length does not fit, else when the chunk that passes it arrives
      (the request is not kept waiting: the client retries);
    - 408 with Connection: close when no byte of it arrives for `body_timeout_s`;
    - a client that leaves mid-body: one line in the log at INFO, no answer.

    The body is read here whole, then replayed to the app; its bytes count against the budget
    until the app has answered."""

    def __init__(
        self,
        app,
        limits: dict[str, int],
        other_limit: int,
        budget: BodyBudget,
        body_timeout_s: float,
    ) -> None:
        self.app, self.limits, self.other_limit = app, limits, other_limit
        self.budget, self.body_timeout_s = budget, body_timeout_s

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in {"POST", "PUT", "PATCH"}:
            await self.app(scope, receive, send)
            return
        held = [0]  # bytes taken from the budget for this request
        try:
            limit = self._check_headers(scope)
            body = await self._read(limit, held, scope, receive)
            await self.app(scope, _replay(body, receive), send)
        except Refused as refused:
            if refused.answer is not None:
                await refused.answer(scope, receive, send)
        finally:
            self.budget.give(held[0])

    def _check_headers(self, scope) -> int:
        """The body's limit, once its headers pass: JSON (under /v1/), a declared
        Content-Length within the limit and within what is left of the budget."""
        headers = dict(scope.get("headers") or [])
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        if scope["path"].startswith("/v1/") and not is_json(content_type):
            raise self._not_json(content_type)
        limit = self.limits.get(scope["path"], self.other_limit)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > limit:
                raise self._too_large(limit, scope["path"])
            if int(declared) > self.budget.left:
                raise self._busy()
        return limit

    async def _read(self, limit: int, held: list[int], scope, receive) -> bytes:
        """The whole body, counted (and taken from the budget) as it comes."""
        chunks, size = [], 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), self.body_timeout_s)
            except TimeoutError:
                raise self._timed_out(size) from None
            if message["type"] == "http.disconnect":
                client = scope.get("client") or ("?", 0)
                log.info(
                    "%s:%s left before sending the whole body of %s %s (%s bytes came)",
                    client[0],
                    client[1],
                    scope["method"],
                    scope["path"],
                    f"{size:,}",
                )
                raise Refused
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise self._too_large(limit, scope["path"])
            if not self.budget.take(len(chunk)):
                raise self._busy()
            held[0] += len(chunk)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    # the refusals, raised where they are found and answered by __call__

    @staticmethod
    def _not_json(content_type: str) -> Refused:
        got = f"got {content_type!r}" if content_type else "no Content-Type header"
        return _refused(
            415, f"send the body as JSON, with the header 'Content-Type: application/json' ({got})"
        )

    @staticmethod
    def _too_large(limit: int, path: str) -> Refused:
        return _refused(413, f"the body is larger than {limit:,} bytes, the most {path} takes")

    def _busy(self) -> Refused:
        return _refused(
            503,
            f"the service is busy: request bodies fill its buffer ({self.budget.used:,} "
            f"of {self.budget.limit:,} bytes); try again shortly",
            {"Retry-After": "1"},
        )

    def _timed_out(self, size: int) -> Refused:
        return _refused(
            408,
            f"the body stopped arriving: nothing came for {self.body_timeout_s:g} s "
            f"({size:,} bytes came)",
            {"Connection": "close"},
        )


def _replay(body: bytes, receive):
    """A `receive` that gives the body read already, then passes on to the real one."""
    replayed = False

    async def replay():
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
