"""The middleware: the body guard (415 unless JSON, 413 when too large, before parsing) and the
page policy (the web page's Content-Security-Policy and nosniff headers)."""

from fastapi import FastAPI, Request

from denoisesum.serving.schemas import error_response

# the page and its files: nothing from elsewhere, no inline script or style
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


def add_middleware(app: FastAPI, body_limit: int) -> None:
    """The guard, then the page policy: the one added last runs first, so the policy's
    headers are also on the guard's own answers (a 413 for the page)."""
    app.add_middleware(RequestGuard, limit=body_limit)
    app.middleware("http")(page_policy)


async def page_policy(request: Request, call_next):
    response = await call_next(request)
    path = request.url.path
    if path == "/" or path.startswith("/static/"):
        response.headers["Content-Security-Policy"] = PAGE_CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
    return response


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
            await self._not_json(content_type, scope, receive, send)
            return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._too_large(scope, receive, send)
            return
        body = await self._read(scope, receive, send)
        if body is None:  # the client left, or the body was too large (answered)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, scope, receive, send) -> bytes | None:
        """The whole body, counted as it comes; None (after a 413) once it passes the limit."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._too_large(scope, receive, send)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _not_json(self, content_type: str, scope, receive, send) -> None:
        got = f"got {content_type!r}" if content_type else "no Content-Type header"
        response = error_response(415, "send the body as JSON, with the header "
                                       f"'Content-Type: application/json' ({got})", "body")
        await response(scope, receive, send)

    async def _too_large(self, scope, receive, send) -> None:
        response = error_response(413, f"the body is larger than {self.limit:,} bytes", "body")
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
