"""The middleware: the body guard (415 unless JSON, 413 when too large for its endpoint, 503 when
request bodies fill the shared buffer budget, 408 when the body stalls; all before parsing) and
the page policy (the web page's Content-Security-Policy and nosniff headers).

Both are plain ASGI middleware: Starlette's BaseHTTPMiddleware (`@app.middleware("http")`)
raises "No response returned" when the guard answers nothing because the client left."""

import asyncio
import logging

from fastapi import FastAPI

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
    """The body was not read whole; the answer (if any) is sent already."""


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
        headers = dict(scope.get("headers") or [])
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        if scope["path"].startswith("/v1/") and not is_json(content_type):
            await self._not_json(content_type, scope, receive, send)
            return
        limit = self.limits.get(scope["path"], self.other_limit)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > limit:
                await self._too_large(limit, scope, receive, send)
                return
            if int(declared) > self.budget.left:
                await self._busy(scope, receive, send)
                return
        held = [0]  # bytes taken from the budget for this request
        try:
            body = await self._read(limit, held, scope, receive, send)
            await self.app(scope, _replay(body, receive), send)
        except Refused:
            return
        finally:
            self.budget.give(held[0])

    async def _read(self, limit: int, held: list[int], scope, receive, send) -> bytes:
        """The whole body, counted (and taken from the budget) as it comes."""
        chunks, size = [], 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), self.body_timeout_s)
            except TimeoutError:
                await self._timed_out(size, scope, receive, send)
                raise Refused from None
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
                await self._too_large(limit, scope, receive, send)
                raise Refused
            if not self.budget.take(len(chunk)):
                await self._busy(scope, receive, send)
                raise Refused
            held[0] += len(chunk)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _not_json(self, content_type: str, scope, receive, send) -> None:
        got = f"got {content_type!r}" if content_type else "no Content-Type header"
        response = error_response(
            415,
            f"send the body as JSON, with the header 'Content-Type: application/json' ({got})",
            "body",
        )
        await response(scope, receive, send)

    async def _too_large(self, limit: int, scope, receive, send) -> None:
        response = error_response(
            413, f"the body is larger than {limit:,} bytes, the most {scope['path']} takes", "body"
        )
        await response(scope, receive, send)

    async def _busy(self, scope, receive, send) -> None:
        response = error_response(
            503,
            f"the service is busy: request bodies fill its buffer ({self.budget.used:,} "
            f"of {self.budget.limit:,} bytes); try again shortly",
            "body",
            headers={"Retry-After": "1"},
        )
        await response(scope, receive, send)

    async def _timed_out(self, size: int, scope, receive, send) -> None:
        response = error_response(
            408,
            f"the body stopped arriving: nothing came for {self.body_timeout_s:g} s "
            f"({size:,} bytes came)",
            "body",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


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
