"""The HTTP service's faults (issue 16), against a real server on 127.0.0.1 (uvicorn in a
thread, configured as `denoisesum serve` configures it) with a tiny model: body limits per
endpoint, a bound on the bodies held at once, read timeouts, a client leaving mid-body, HEAD,
the model shown by name, and error messages in plain words.

Every socket has a timeout; the read timeouts are 1 s here, so the file runs in seconds."""

import concurrent.futures
import json
import logging
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

pytest.importorskip(
    "fastapi", reason="the serving tests need the serve extra: pip install -e '.[serve]'"
)
import httpx
import uvicorn

from denoisesum.serving import ServiceLimits, create_app
from denoisesum.serving.schemas import MAX_ID_CHARS, plain
from denoisesum.serving.server import server_config
from test_serving_api import REVIEWS, SETTINGS, ModelGate, tiny_summarizer

pytestmark = pytest.mark.usefixtures("one_thread")
TIMEOUT_S = 1.0  # the server's header and body timeouts here
LIMITS = ServiceLimits(
    max_reviews=5,
    max_review_chars=300,
    max_sets=3,
    timeout_s=30.0,
    header_timeout_s=TIMEOUT_S,
    body_timeout_s=TIMEOUT_S,
)
SOCKET_TIMEOUT = 5.0  # no read in these tests waits longer


class Records(logging.Handler):
    """The server's log records: uvicorn's, the service's, and anything at the root."""

    LOGGERS = ("", "uvicorn", "denoisesum.serving")

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def attach(self) -> None:
        """(Again: starting a server configures logging, which drops handlers.)"""
        self.records.clear()
        for name in self.LOGGERS:
            if self not in logging.getLogger(name).handlers:
                logging.getLogger(name).addHandler(self)

    def detach(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)


@contextmanager
def running(app) -> Iterator[tuple[int, Records]]:
    """The app served on a free loopback port (the port, and the server's log records)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(server_config(app, log_level="info"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    records = Records()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        records.attach()
        yield sock.getsockname()[1], records
    finally:
        records.detach()
        server.should_exit = True
        thread.join(15)
        sock.close()


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory):
    return tiny_summarizer(tmp_path_factory)


@pytest.fixture(scope="module")
def served(summarizer):
    app = create_app(summarizer, LIMITS)
    with running(app) as (port, records):
        yield port, records, app


@pytest.fixture
def port(served) -> Iterator[int]:
    port, records, app = served
    records.attach()
    yield port
    assert until(lambda: app.state.budget.used == 0), "a test left bytes in the budget"


@pytest.fixture(scope="module")
def patient(summarizer):
    """A server whose read timeouts outlast the tests that hold a body half sent."""
    limits = ServiceLimits(
        max_reviews=5,
        max_review_chars=300,
        max_sets=3,
        timeout_s=30.0,
        header_timeout_s=20.0,
        body_timeout_s=20.0,
    )
    app = create_app(summarizer, limits)
    with running(app) as (port, _):
        yield port, app.state.budget


def until(condition, seconds: float = SOCKET_TIMEOUT) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT)


def head(path: str, length: int | None, method: str = "POST") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: test", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response: status, headers (lower-case names) and body (by Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before a response: {data!r}"
        data += chunk
    raw_head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = raw_head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
    while len(body) < int(headers.get("content-length", 0)):
        chunk = sock.recv(65536)
        assert chunk, "the connection closed inside the response body"
        body += chunk
    return int(status_line.split()[1]), headers, body


def closed(sock: socket.socket) -> bool:
    """True once the server has closed the connection (within the socket's timeout)."""
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def post(port: int, path: str, body, **kwargs) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}{path}", json=body, timeout=30, **kwargs)


def buffered(port: int) -> int:
    return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json()["buffered_bytes"]


# ---- body limits per endpoint ---------------------------------------------------------------


def worst_case(limits: ServiceLimits, batch: bool) -> bytes:
    """The largest request the limits allow, as an encoder may write it: astral characters
    escaped as surrogate pairs (12 bytes each, Python's default) and indented."""
    reviews = ["\U0001f600" * limits.max_review_chars] * limits.max_reviews
    if batch:
        body = {"sets": [{"id": "\U0001f355" * MAX_ID_CHARS, "reviews": reviews}] * limits.max_sets}
    else:
        body = {"reviews": reviews}
    return json.dumps(body, indent=4).encode()


def test_body_limits_are_sized_per_endpoint_from_the_review_limits():
    for limits in (
        LIMITS,
        ServiceLimits(),
        ServiceLimits(max_reviews=7, max_review_chars=11, max_sets=2),
    ):
        body_limits = limits.body_limits()
        assert len(worst_case(limits, batch=False)) <= body_limits["/v1/summarize"]
        assert len(worst_case(limits, batch=True)) <= body_limits["/v1/summarize/batch"]
        # a single set no longer gets the batch endpoint's room
        assert 1.5 * body_limits["/v1/summarize"] < body_limits["/v1/summarize/batch"]
    defaults = ServiceLimits().body_limits()
    assert defaults["/v1/summarize"] < 7_000_000 < 90_000_000 < defaults["/v1/summarize/batch"]
    capped = ServiceLimits(max_body_bytes=4096).body_limits()
    assert set(capped.values()) == {4096}


def test_a_single_set_body_is_limited_to_what_a_set_can_take(port, summarizer):
    single_limit = LIMITS.body_limits()["/v1/summarize"]
    worst = worst_case(LIMITS, batch=False)
    response = httpx.post(
        f"http://127.0.0.1:{port}/v1/summarize",
        content=worst,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 200, response.text  # the largest legal body fits
    # a body a single set cannot fill: refused by its declared length, before it is read
    with connect(port) as sock:
        sock.sendall(head("/v1/summarize", single_limit + 1))
        status, _, body = read_response(sock)
    assert status == 413
    assert json.loads(body)["error"] == {
        "status": 413,
        "field": "body",
        "message": f"the body is larger than {single_limit:,} bytes, the most /v1/summarize takes",
    }
    # the batch endpoint takes the largest legal batch (here with an unknown field: parsed,
    # then refused as 422, without running the model)
    batch = worst_case(LIMITS, batch=True)
    assert single_limit < len(batch)
    response = httpx.post(
        f"http://127.0.0.1:{port}/v1/summarize/batch",
        content=batch[:-1] + b', "extra": 1}',
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 422 and response.json()["error"]["field"] == "extra"
    too_long_id = post(
        port,
        "/v1/summarize/batch",
        {"sets": [{"id": "x" * (MAX_ID_CHARS + 1), "reviews": REVIEWS}]},
    )
    assert too_long_id.status_code == 422
    assert too_long_id.json()["error"]["field"] == "sets[0].id"


# ---- the bodies held at once ---------------------------------------------------------------


def test_bodies_held_at_once_are_bounded(patient):
    port, budget = patient
    assert budget.limit == max(LIMITS.body_limits().values())  # the default: one full batch
    small = json.dumps({"reviews": REVIEWS * 2}).encode()
    # a big batch body on its way holds all but a few bytes of the budget
    declared = budget.limit - 100
    sent = budget.limit - len(small) + 10
    with connect(port) as big:
        big.sendall(head("/v1/summarize/batch", declared) + b" " * sent)
        assert until(lambda: buffered(port) == sent)
        # a body whose declared length does not fit: 503 at once
        refused = httpx.post(
            f"http://127.0.0.1:{port}/v1/summarize",
            content=small,
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert "request bodies fill its buffer" in refused.json()["error"]["message"]
        # chunked, without a length: 503 when the chunk that passes the budget comes
        refused = httpx.post(
            f"http://127.0.0.1:{port}/v1/summarize",
            content=iter([small]),
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert buffered(port) == sent  # the refused bodies held nothing
    # the big client left: its bytes are given back, and the small body goes through
    assert until(lambda: buffered(port) == 0)
    assert post(port, "/v1/summarize", {"reviews": REVIEWS}).status_code == 200


def test_many_large_bodies_at_once_do_not_pile_up(patient):
    """Eight clients each sending all but the last byte of a body a third of the budget: the
    server holds at most three of them; the others get 503 (the issue: eight 40 MB bodies
    took the server from 406 MB to 1.02 GB)."""
    port, budget = patient
    declared = budget.limit // 3
    sockets = [connect(port) for _ in range(8)]
    try:
        for sock in sockets:
            sock.sendall(head("/v1/summarize/batch", declared) + b" " * (declared - 1))
        statuses = []
        for sock in sockets:
            sock.settimeout(0.5)
            try:
                statuses.append(read_response(sock)[0])
            except TimeoutError:
                statuses.append(None)  # still being read: holds its bytes
        held = statuses.count(None)
        assert set(statuses) <= {503, None} and 1 <= held <= 3, statuses
        assert until(lambda: budget.used == held * (declared - 1))
        assert budget.used <= budget.limit
    finally:
        for sock in sockets:
            sock.close()
    assert until(lambda: budget.used == 0)


# ---- read timeouts --------------------------------------------------------------------------


def test_a_silent_connection_is_closed(port):
    start = time.monotonic()
    with connect(port) as sock:
        assert sock.recv(65536) == b""  # closed, no answer: nothing was asked
    assert time.monotonic() - start < TIMEOUT_S + 3


def test_half_a_request_head_gets_408(port):
    start = time.monotonic()
    with connect(port) as sock:
        sock.sendall(b"POST /v1/summarize HTTP/1.1\r\nHost: test\r\nContent-Ty")
        status, headers, body = read_response(sock)
        assert closed(sock)
    assert time.monotonic() - start < TIMEOUT_S + 3
    assert status == 408 and headers["connection"] == "close"
    assert json.loads(body)["error"]["message"] == (
        f"the request head did not arrive within {TIMEOUT_S:g} s"
    )


def test_a_stalled_body_gets_408(port):
    start = time.monotonic()
    with connect(port) as sock:
        sock.sendall(head("/v1/summarize", 100) + b'{"reviews": [')
        status, headers, body = read_response(sock)
        assert closed(sock)
    assert time.monotonic() - start < TIMEOUT_S + 3
    assert status == 408 and headers["connection"] == "close"
    assert json.loads(body)["error"] == {
        "status": 408,
        "field": "body",
        "message": f"the body stopped arriving: nothing came for {TIMEOUT_S:g} s (13 bytes came)",
    }


def test_the_rest_of_an_answered_body_cannot_hold_the_connection(port):
    with connect(port) as sock:
        sock.sendall(head("/v1/summarize", 10_000_000))
        assert read_response(sock)[0] == 413
        start = time.monotonic()
        sock.sendall(b" " * 1000)  # some of the body, then nothing
        assert closed(sock)
    assert time.monotonic() - start < TIMEOUT_S + 3


def test_timeouts_leave_normal_clients_alone(port):
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        for _ in range(2):  # one kept-alive connection, with a pause past the timeouts
            response = client.post("/v1/summarize", json={"reviews": REVIEWS})
            assert response.status_code == 200, response.text
            time.sleep(TIMEOUT_S * 1.5)
        slow = client.post(
            "/v1/summarize", content=slow_body(), headers={"Content-Type": "application/json"}
        )
        assert slow.status_code == 200, slow.text


def slow_body():
    data = json.dumps({"reviews": REVIEWS}).encode()
    for i in range(0, len(data), 20):  # each part within the body timeout, all of it past it
        yield data[i : i + 20]
        time.sleep(TIMEOUT_S / 4)


# ---- a client leaving mid-body --------------------------------------------------------------


def test_a_client_leaving_mid_body_is_one_quiet_line(port, served):
    records = served[1]
    with connect(port) as sock:
        sock.sendall(head("/v1/summarize", 1000) + b'{"reviews": ["the pizza was')
    assert until(
        lambda: any("left before sending the whole body" in r.getMessage() for r in records.records)
    )
    time.sleep(0.3)  # anything else it would log comes at once
    assert [
        r.getMessage() for r in records.records if r.levelno >= logging.WARNING or r.exc_info
    ] == []
    [line] = [r for r in records.records if "left" in r.getMessage()]
    assert line.levelno == logging.INFO
    assert "POST /v1/summarize (27 bytes came)" in line.getMessage()
    assert post(port, "/v1/summarize", {"reviews": REVIEWS}).status_code == 200


# ---- HEAD, /v1/models, messages -------------------------------------------------------------


def test_head_answers_like_get_without_a_body(port, summarizer):
    with warnings.catch_warnings():  # HEAD adds no operation to the OpenAPI description
        warnings.simplefilter("error")
        schema = create_app(summarizer, LIMITS).openapi()
    assert list(schema["paths"]["/healthz"]) == ["get"] and "/" not in schema["paths"]
    base = f"http://127.0.0.1:{port}"
    for path in ("/", "/healthz"):
        got, headed = httpx.get(base + path, timeout=10), httpx.head(base + path, timeout=10)
        assert headed.status_code == got.status_code == 200, path
        assert headed.content == b"" and got.content
        assert headed.headers["content-type"] == got.headers["content-type"]
    page = httpx.head(base + "/", timeout=10)
    assert page.headers["content-length"] == str(len(httpx.get(base + "/").content))
    assert "default-src 'self'" in page.headers["content-security-policy"]


def test_models_shows_the_model_by_name_not_by_path(port, summarizer):
    response = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10)
    [model] = response.json()["models"]
    assert model["id"] == model["name"] == "tiny"
    assert str(summarizer.path.parent) not in response.text


@pytest.mark.parametrize(
    ("body", "status", "field", "message"),
    [
        (
            b'{"reviews": ["caf\xe9"]}',
            400,
            "body",
            "the body is not valid JSON: it is not UTF-8 (byte 0xe9 at byte 17)",
        ),
        (b"[" * 20_000, 400, "body", "the body is not valid JSON: it is nested too deeply"),
        (b'["good food"]', 422, "body", "body: must be a JSON object"),
        (
            b'{"reviews": ["\\ud800 good"]}',
            422,
            "reviews[0]",
            "reviews[0]: must be a "
            "valid string (it holds a lone surrogate such as \\ud800, which is not a character)",
        ),
        (
            b'{"reviews": ["good", " "]}',
            422,
            "reviews[1]",
            "reviews[1]: review is empty (or only white space)",
        ),
    ],
)
def test_error_messages_read_plainly(port, body, status, field, message):
    response = httpx.post(
        f"http://127.0.0.1:{port}/v1/summarize",
        content=body,
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field and error["message"] == message
    for text in [error["message"], *(e["message"] for e in error.get("errors", []))]:
        assert not text.startswith(("Value error", "Assertion failed")), text
        assert "error parsing the body" not in text and "extract fields" not in text, text


def test_pydantic_prefixes_are_stripped():
    assert plain("Value error, review is empty") == "review is empty"
    assert plain("Assertion failed, too long") == "too long"
    assert plain("Input should be a valid list") == "must be a valid list"


def test_the_new_limits_are_checked():
    from denoisesum.config import check
    from denoisesum.errors import ConfigError

    with pytest.raises(ConfigError, match=r"'header_timeout_s': 0 must be more than 0$"):
        check(ServiceLimits(header_timeout_s=0))
    with pytest.raises(ConfigError, match=r"'body_timeout_s': -1 must be more than 0$"):
        check(ServiceLimits(body_timeout_s=-1))
    with pytest.raises(
        ConfigError,
        match=r"'max_buffered_bytes': 1,000,000 must be at least the "
        r"largest body limit",
    ):
        check(ServiceLimits(max_buffered_bytes=1_000_000))
    assert ServiceLimits(max_body_bytes=4096, max_buffered_bytes=4096).buffer_limit() == 4096


# ---- one request cannot hold the service past its own time limit ---------------------------


def test_a_request_past_its_limit_is_cut_between_steps_and_the_others_go_on(summarizer):
    """Issue 33: a request of 3 sets that would decode 1,000 steps (0.03 s each here) gets its
    504 at its 1 s limit and its search ends at the next step; a request sent 0.3 s after it
    joins the running steps and is answered within its own limit (before step-wise decoding the
    first one held the model for its whole 30 s batch and the second got 503). Both ask for a
    length cap (which also ends summaries at a sentence: the same settings but for lengths), so
    the second joins the hog's search itself."""
    slow = ModelGate(summarizer, per_row=0.003, no_end=True)
    limits = ServiceLimits(max_reviews=5, max_review_chars=300, max_sets=3, timeout_s=1.0)
    app = create_app(slow.summarizer, limits)
    hog_body = {"sets": [{"reviews": REVIEWS}] * 3, "max_words": 1000}
    with running(app) as (port, _), concurrent.futures.ThreadPoolExecutor(1) as pool:
        hog = pool.submit(post, port, "/v1/summarize/batch", hog_body)
        assert until(lambda: bool(slow.rows))
        time.sleep(0.3)
        cap = SETTINGS.search.max_words
        normal = post(port, "/v1/summarize", {"reviews": REVIEWS, "max_words": cap})
        assert normal.status_code == 200, normal.text
        assert hog.result().status_code == 504
        assert until(lambda: not app.state.queue.stepper.busy(), 2.0)  # the hog's search ended
        app.state.queue.close()
    beam = SETTINGS.search.beam
    assert max(slow.rows) == 4 * beam  # the second request's beams joined the hog's steps
    assert len(slow.rows) < 200  # the hog never ran its 1,000 steps


def test_a_decoding_process_that_dies_answers_its_requests_503_and_stops_the_service(
    summarizer,
):
    """serve --workers (execution/pool.py): the request in flight fails as WorkerLost (503), the
    service's stop is called, and the dead process gets no more requests."""
    import os
    import signal

    from denoisesum.execution.pool import WorkerLost
    from denoisesum.serving import InferenceQueue
    from denoisesum.serving.worker import QueueFull

    held = ModelGate(summarizer)
    held.gate.clear()  # the forked process's first model step waits for ever
    queue = InferenceQueue(held.summarizer)
    stopped = threading.Event()
    queue.spread(1, 1, on_failure=stopped.set)
    try:
        future = queue.submit([REVIEWS])
        time.sleep(0.5)
        assert not future.done() and queue.pending_sets == 1
        os.kill(queue.workers[0], signal.SIGKILL)
        with pytest.raises(WorkerLost):
            future.result(timeout=10)
        assert stopped.wait(10) and queue.failed
        with pytest.raises(QueueFull, match="shutting down"):
            queue.submit([REVIEWS])
    finally:
        queue.close()
