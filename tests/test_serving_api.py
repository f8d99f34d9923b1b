"""The HTTP API (denoisesum.serving) on a tiny random model: answers equal the Python API's,
every error is JSON naming the field, timeouts and a full queue give 503/504, concurrent requests
share batches, and the page ships no external resource."""

import asyncio
import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from importlib import resources
from pathlib import Path

import pytest

pytest.importorskip(
    "fastapi", reason="the serving tests need the serve extra: pip install -e '.[serve]'"
)
import httpx
from fastapi.testclient import TestClient

from conftest import UNREADABLE, all_ended, children, running, save_tiny_summarizer
from denoisesum.data.vocab import EOS_ID
from denoisesum.inference.beam import SearchConfig
from denoisesum.serving import InferenceQueue, ServiceLimits, create_app
from denoisesum.serving.app import field_path
from denoisesum.summarizer import Summarizer, SummarizerConfig

pytestmark = pytest.mark.usefixtures("one_thread")
SETTINGS = SummarizerConfig(
    max_review_tokens=12,
    max_reviews=4,
    search=SearchConfig(beam=3, min_words=4, max_words=10),
)
LIMITS = ServiceLimits(max_reviews=5, max_review_chars=300, max_sets=3, timeout_s=30.0)
REVIEWS = [
    "the pizza was great and the staff was friendly . we will come back .",
    "the soup was cold and the waiter was rude .",
    "great pizza , friendly staff .",
]
OTHER = ["the sushi was fresh and the owner was friendly .", "fresh sushi , will come back ."]


def tiny_summarizer(tmp_path_factory) -> Summarizer:
    """The tiny random model, saved and loaded as a trained one is (test_serving_faults.py
    uses it too)."""
    return Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", SETTINGS)
    )


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    return tiny_summarizer(tmp_path_factory)


@pytest.fixture(scope="module")
def client(summarizer):
    with TestClient(create_app(summarizer, LIMITS)) as test_client:
        yield test_client


def expected(summarizer: Summarizer, reviews: list[str]) -> tuple[str, dict]:
    summary = summarizer.summarize(reviews)
    support = summarizer.denoisesum.evidence(reviews, summary).to_dict()
    del support["summary"]
    return summary, support


# ---- answers ----------------------------------------------------------------------------


def test_summarize_answers_as_the_python_api(client, summarizer):
    response = client.post("/v1/summarize", json={"reviews": REVIEWS})
    assert response.status_code == 200, response.text
    body = response.json()
    summary, support = expected(summarizer, REVIEWS)
    assert body == {"summary": summary, "support": support, "warnings": [], "model": "tiny"}
    assert summary and support["sentences"]
    for sentence in support["sentences"]:  # spans index the summary
        assert summary[sentence["start"] : sentence["end"]] == sentence["text"]


def test_input_the_model_cannot_read_is_flagged(client):
    for name, reviews in UNREADABLE.items():
        response = client.post("/v1/summarize", json={"reviews": reviews})
        assert response.status_code == 200, (name, response.text)
        assert response.json()["warnings"], name
    batch = client.post(
        "/v1/summarize/batch",
        json={
            "sets": [
                {"id": "zh", "reviews": UNREADABLE["chinese"]},
                {"id": "en", "reviews": REVIEWS},
            ]
        },
    )
    assert [bool(r["warnings"]) for r in batch.json()["results"]] == [True, False]


def test_batch_keeps_order_and_ids(client, summarizer):
    response = client.post(
        "/v1/summarize/batch",
        json={"sets": [{"id": "pizzeria", "reviews": REVIEWS}, {"reviews": OTHER}]},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == "tiny"
    assert [r["id"] for r in body["results"]] == ["pizzeria", None]
    for result, reviews in zip(body["results"], [REVIEWS, OTHER], strict=True):
        summary, support = expected(summarizer, reviews)
        assert result["summary"] == summary and result["support"] == support


def test_models_and_health(client, summarizer):
    models = client.get("/v1/models").json()
    [model] = models["models"]
    assert model["id"] == model["name"] == "tiny" and "path" not in model
    assert model["vocab_size"] == len(summarizer.vocab)
    assert model["settings"]["search"]["beam"] == 3
    assert models["limits"]["max_reviews"] == 5
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert health.json()["pending_sets"] == 0


def test_openapi_shows_the_limits_and_docs_work_offline(client):
    schema = client.get("/openapi.json").json()
    assert {"/v1/summarize", "/v1/summarize/batch", "/v1/models", "/healthz"} <= set(
        schema["paths"]
    )
    text = json.dumps(schema)
    assert '"maxItems": 5' in text and '"maxLength": 300' in text and '"maxItems": 3' in text
    docs = client.get("/docs")
    assert docs.status_code == 200
    scripts = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    if all(s.startswith("/docs-assets/") for s in scripts):  # swagger-ui-bundle is installed
        for url in scripts:
            assert client.get(url).status_code == 200, url
    else:  # FastAPI's default page from a CDN: allowed for /docs only
        pytest.importorskip(
            "swagger_ui_bundle",
            reason="swagger-ui-bundle-v2 not installed: /docs loads Swagger UI from a CDN",
        )
        pytest.fail(f"/docs loads {scripts} although swagger-ui-bundle is installed")


# ---- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field", "message"),
    [
        ("/v1/summarize", {"reviews": []}, "reviews", "must hold at least 1 review (it holds 0)"),
        ("/v1/summarize", {"reviews": ["good", "   "]}, "reviews[1]", "review is empty"),
        ("/v1/summarize", {"reviews": ["good", ""]}, "reviews[1]", "review is empty"),
        ("/v1/summarize", {"reviews": ["x" * 301]}, "reviews[0]", "must be at most 300 characters"),
        (
            "/v1/summarize",
            {"reviews": ["good"] * 6},
            "reviews",
            "must hold at most 5 reviews (it holds 6)",
        ),
        ("/v1/summarize", {"reviews": ["good", 3]}, "reviews[1]", "must be a string"),
        ("/v1/summarize", {"reviews": "good food"}, "reviews", "must be a list"),
        ("/v1/summarize", {"reviews": None}, "reviews", "must be a list"),
        ("/v1/summarize", {}, "reviews", "required field is missing"),
        ("/v1/summarize", {"review": ["good"]}, "reviews", "required field is missing"),
        ("/v1/summarize", {"reviews": ["good"], "temperature": 3}, "temperature", "unknown field"),
        ("/v1/summarize", ["good food"], "body", "JSON object"),
        ("/v1/summarize/batch", {"sets": []}, "sets", "must hold at least 1 set (it holds 0)"),
        (
            "/v1/summarize/batch",
            {"sets": [{"reviews": ["good"]}] * 4},
            "sets",
            "must hold at most 3 sets",
        ),
        (
            "/v1/summarize/batch",
            {"sets": [{"reviews": ["good"]}, {"reviews": ["ok", " "]}]},
            "sets[1].reviews[1]",
            "review is empty",
        ),
        (
            "/v1/summarize/batch",
            {"sets": [{"reviews": ["good"] * 6}]},
            "sets[0].reviews",
            "must hold at most 5 reviews",
        ),
        (
            "/v1/summarize/batch",
            {"sets": [{"id": 7, "reviews": ["good"]}]},
            "sets[0].id",
            "must be a string",
        ),
        ("/v1/summarize/batch", {"sets": [{"id": "a"}]}, "sets[0].reviews", "missing"),
        ("/v1/summarize/batch", {"sets": {"reviews": ["good"]}}, "sets", "must be a list"),
        ("/v1/summarize/batch", {"reviews": ["good"]}, "sets", "required field is missing"),
    ],
)
def test_bad_requests_name_the_field(client, path, body, field, message):
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    # the validation library's own wording never reaches the client (issue 33)
    for words in ("after validation", "Value error", "should", "Field required"):
        assert words not in response.text, response.text
    assert error["status"] == 422 and error["field"] == field
    assert message in error["message"] and error["message"].startswith(f"{field}: ")
    assert any(e["field"] == field for e in error["errors"])


def test_every_bad_field_is_listed(client):
    response = client.post(
        "/v1/summarize/batch", json={"sets": [{"reviews": [""]}, {"reviews": [1, "ok", ""]}]}
    )
    error = response.json()["error"]
    assert [e["field"] for e in error["errors"]] == [
        "sets[0].reviews[0]",
        "sets[1].reviews[0]",
        "sets[1].reviews[2]",
    ]
    assert "(and 2 more)" in error["message"]


def test_bad_json_and_content_type(client):
    response = client.post(
        "/v1/summarize",
        content=b'{"reviews": ["good",',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "body"
    assert "not valid JSON" in response.json()["error"]["message"]
    response = client.post(
        "/v1/summarize",
        content=b'{"reviews": ["good"]}',
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert "Content-Type: application/json" in response.json()["error"]["message"]
    assert client.post("/v1/summarize", content=b'{"reviews": ["good"]}').status_code == 415
    ok = client.post(
        "/v1/summarize",
        content=b'{"reviews": ["good food"]}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert ok.status_code == 200


def test_oversize_bodies_are_refused_before_parsing(summarizer):
    limits = ServiceLimits(max_reviews=5, max_review_chars=300, max_sets=3, max_body_bytes=2048)
    assert (
        ServiceLimits(max_reviews=5, max_review_chars=300, max_sets=3).body_limits()[
            "/v1/summarize"
        ]
        > 5 * 300 * 12
    )
    with TestClient(create_app(summarizer, limits)) as client:
        big = json.dumps({"reviews": ["word " * 50] * 5}).encode()
        assert len(big) > 1024
        big = big + b" " * (2049 - len(big))
        response = client.post(
            "/v1/summarize", content=big, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 413
        assert response.json()["error"] == {
            "status": 413,
            "field": "body",
            "message": "the body is larger than 2,048 bytes, the most /v1/summarize takes",
        }

        def chunks():  # no Content-Length: counted while it is read
            yield big[:1000]
            yield big[1000:]

        response = client.post(
            "/v1/summarize", content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 413
        small = json.dumps({"reviews": REVIEWS}).encode()
        response = client.post(
            "/v1/summarize",
            content=iter([small[:10], small[10:]]),
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 200, response.text


def test_unknown_paths_and_methods_are_json_errors(client):
    response = client.get("/v1/nothing")
    assert response.status_code == 404 and response.json()["error"]["status"] == 404
    response = client.get("/v1/summarize")
    assert response.status_code == 405 and response.json()["error"]["status"] == 405


def test_field_paths():
    assert field_path(("body", "sets", 1, "reviews", 0)) == "sets[1].reviews[0]"
    assert field_path(("body",)) == "body"
    assert field_path(("body", "reviews")) == "reviews"


def test_limits_are_checked():
    from denoisesum.config import check
    from denoisesum.errors import ConfigError

    with pytest.raises(ConfigError, match=r"'max_reviews': 0 must be at least 1$"):
        check(ServiceLimits(max_reviews=0))
    with pytest.raises(ConfigError, match=r"'timeout_s': 0 must be more than 0$"):
        check(ServiceLimits(timeout_s=0))
    with pytest.raises(
        ConfigError,
        match=r"'max_pending_sets': 4 must be at least max_sets "
        r"\(8\)",
    ):
        check(ServiceLimits(max_sets=8, max_pending_sets=4))
    with pytest.raises(ConfigError, match=r"'max_sets': 0 must be at least 1$"):  # in the app too
        create_app(None, ServiceLimits(max_sets=0))


# ---- queueing, batching and timeouts ----------------------------------------------------


class ModelGate:
    """A fresh summarizer of the tiny model whose decode_step (the worker thread's one model call
    per step) waits for `gate`, then sleeps `pause` (plus `per_row` a beam row), and records its
    rows; with `no_end`, </s> is never chosen, so every search runs to its max_words."""

    def __init__(
        self, base: Summarizer, pause: float = 0.0, per_row: float = 0.0, no_end: bool = False
    ) -> None:
        self.summarizer = Summarizer.from_pretrained(base.path)
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()
        self.rows: list[int] = []  # per decode_step call
        self.encoded: list[int] = []  # review sets per search (encode call)
        model = self.summarizer.model
        inner_step, inner_encode = model.decode_step, model.encode

        def decode_step(state, prev, *out_rows):
            self.rows.append(len(prev))
            self.started.set()
            assert self.gate.wait(20), "the test never opened the gate"
            time.sleep(pause + per_row * len(prev))
            log_probs, new = inner_step(state, prev, *out_rows)
            if no_end:
                log_probs[:, EOS_ID] = -float("inf")
            return log_probs, new

        def encode(batch):
            self.encoded.append(batch.n_pairs)
            return inner_encode(batch)

        model.decode_step, model.encode = decode_step, encode


async def until(condition, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached in time")


def async_client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def test_requests_join_the_running_decode(summarizer):
    """Continuous batching (issue 34): requests that arrive while one decodes join it between
    steps, in the same model calls, and get the summaries they would get alone."""
    gated = ModelGate(summarizer, pause=0.02)
    gated.gate.clear()
    app = create_app(gated.summarizer, LIMITS)
    sets = [REVIEWS, OTHER, REVIEWS[:1], OTHER[:1]]

    async def scenario():
        async with async_client(app) as client:
            first = asyncio.create_task(client.post("/v1/summarize", json={"reviews": sets[0]}))
            await until(gated.started.is_set)  # the worker is in the first request's step
            rest = [
                asyncio.create_task(client.post("/v1/summarize", json={"reviews": s}))
                for s in sets[1:3]
            ]
            batch = asyncio.create_task(
                client.post("/v1/summarize/batch", json={"sets": [{"reviews": sets[3]}]})
            )
            await until(lambda: app.state.queue.pending_sets == 3)
            gated.gate.set()
            return await asyncio.gather(first, *rest, batch)

    try:
        responses = asyncio.run(scenario())
    finally:
        app.state.queue.close()
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    summaries = [r.json()["summary"] for r in responses[:3]]
    summaries.append(responses[3].json()["results"][0]["summary"])
    assert summaries == [summarizer.summarize(s) for s in sets]  # joining changes nothing
    beam = SETTINGS.search.beam
    assert gated.rows[0] == beam and max(gated.rows) > beam  # later ones joined its steps
    # the first alone; the three that waited together in groups of 2 sets at most (each group
    # in its own thread: in either order)
    assert gated.encoded[0] == 1 and sorted(gated.encoded[1:]) == [1, 2]


def test_timeouts_and_a_full_queue(summarizer):
    gated = ModelGate(summarizer)
    gated.gate.clear()
    limits = ServiceLimits(
        max_reviews=5, max_review_chars=300, max_sets=1, max_pending_sets=1, timeout_s=1.0
    )
    app = create_app(gated.summarizer, limits)

    async def scenario():
        async with async_client(app) as client:
            running = asyncio.create_task(client.post("/v1/summarize", json={"reviews": REVIEWS}))
            await until(gated.started.is_set)
            queued = asyncio.create_task(client.post("/v1/summarize", json={"reviews": OTHER}))
            await until(lambda: app.state.queue.pending_sets == 1)
            full = await client.post("/v1/summarize", json={"reviews": OTHER})  # at once
            return full, await running, await queued

    try:
        full, running, queued = asyncio.run(scenario())
    finally:
        gated.gate.set()
        app.state.queue.close()
    assert full.status_code == 503 and full.headers["retry-after"] == "1"
    assert "waiting for the model" in full.json()["error"]["message"]
    assert running.status_code == 504
    assert running.json()["error"]["message"] == "summarizing took longer than 1 s"
    assert queued.status_code == 503 and queued.headers["retry-after"] == "1"
    assert "busy: the request waited 1 s" in queued.json()["error"]["message"]
    assert gated.encoded == [1]  # the timed-out queued request never reached the model


def test_one_request_holds_the_worker_no_longer_than_its_time_limit(summarizer):
    """Issue 33: a batch request of 16 sets decoding 2 at a time (0.05 s a step) under a 2 s
    limit gets its 504 and is dropped at the step after its limit; a request that came 1 s
    behind it is served within its own limit (it got 503 before)."""
    slow = ModelGate(summarizer, pause=0.05)
    limits = ServiceLimits(
        max_reviews=5,
        max_review_chars=300,
        max_sets=16,
        max_batch_sets=2,
        max_pending_sets=32,
        timeout_s=2.0,
    )
    app = create_app(slow.summarizer, limits)

    async def scenario():
        async with async_client(app) as client:
            big = asyncio.create_task(
                client.post("/v1/summarize/batch", json={"sets": [{"reviews": REVIEWS}] * 16})
            )
            await until(lambda: bool(slow.rows))
            await asyncio.sleep(1.0)
            small = await client.post("/v1/summarize", json={"reviews": OTHER})
            return await big, small

    try:
        big, small = asyncio.run(scenario())
    finally:
        app.state.queue.close()
    assert big.status_code == 504, big.text
    assert small.status_code == 200, small.text
    assert small.json()["summary"] == summarizer.summarize(OTHER)
    assert sum(slow.encoded[:-1]) < 16  # the rest of the big request was never decoded


def test_a_failing_set_fails_only_its_own_request(summarizer):
    gated = ModelGate(summarizer)
    gated.gate.clear()
    queue = InferenceQueue(gated.summarizer, max_batch_sets=8, max_pending_sets=8)
    try:
        warm = queue.submit([REVIEWS])
        assert gated.started.wait(10)
        good = queue.submit([OTHER])
        bad = queue.submit([["fine", "   "]])  # the summarizer refuses a blank review
        gated.gate.set()
        assert first_summary(warm.result(10)) == summarizer.summarize(REVIEWS)
        assert first_summary(good.result(10)) == summarizer.summarize(OTHER)
        with pytest.raises(Exception, match="review 1 is empty"):
            bad.result(10)
    finally:
        queue.close()


def first_summary(results: list) -> str:
    """The first set's summary, from the worker's result (a SummaryResult, or a (summary,
    support, warnings) tuple)."""
    first = results[0]
    return first.summary if hasattr(first, "summary") else first[0]


# ---- the page ---------------------------------------------------------------------------


def test_page_is_served_with_a_strict_policy(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    links = re.findall(r'(?:src|href)="([^"]*)"', page.text)
    assert links and all(link.startswith(("/", "data:")) for link in links), links
    for link in links:
        if link.startswith("/static/"):
            asset = client.get(link)
            assert asset.status_code == 200, link
            assert asset.headers["content-security-policy"] == policy


def test_static_files_are_package_data_and_load_nothing_from_elsewhere():
    static = Path(str(resources.files("denoisesum.serving") / "static"))
    assert {"index.html", "app.js", "style.css"} <= {p.name for p in static.iterdir()}
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '"denoisesum.serving" = ["static/*"]' in pyproject
    for path in static.iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), path.name
        assert "@import" not in text and "url(" not in text, path.name


# ---- the command ------------------------------------------------------------------------


def test_serve_without_a_model_names_the_directory(tmp_path):
    code = (
        "import sys; from pathlib import Path; import denoisesum.summarizer as s; "
        f"s.DEFAULT_MODEL_DIR = Path({str(tmp_path / 'denoisesum-yelp')!r}); "
        "from denoisesum.cli import main; sys.argv = ['denoisesum', 'serve']; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        f"error: no default model is installed (looked for {tmp_path / 'denoisesum-yelp'}); "
        "pass a model directory: denoisesum serve --model DIR"
    ) in result.stderr


def start_serve(summarizer, *args: str, **popen) -> tuple[subprocess.Popen, str]:
    """`denoisesum serve` of the model on a free port with `args`, once /healthz answers; the
    process and its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "denoisesum.cli", "serve", "--model", str(summarizer.path)]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--log-level", "warning", *args], **popen
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            assert server.poll() is None, server.stdout and server.stdout.read()
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
    except BaseException:
        server.kill()
        server.wait(30)
        raise
    return server, base


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_command_serves(summarizer, workers):
    """`denoisesum serve` answers; with --workers 2, from two processes (forked with the model,
    sharing the port), which SIGTERM to the command stops with it."""
    server, base = start_serve(
        summarizer, "--max-reviews", "2", "--threads", "1", "--workers", str(workers),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    workers_seen: list[str] = []
    try:
        response = httpx.post(base + "/v1/summarize", json={"reviews": REVIEWS[:2]}, timeout=30)
        assert response.status_code == 200, response.text
        assert response.json()["summary"] == summarizer.summarize(REVIEWS[:2])
        too_many = httpx.post(base + "/v1/summarize", json={"reviews": REVIEWS}, timeout=30)
        assert too_many.status_code == 422 and too_many.json()["error"]["field"] == "reviews"
        page = httpx.get(base + "/", timeout=10)
        assert page.status_code == 200 and "/static/app.js" in page.text
        health = httpx.get(base + "/healthz", timeout=10).json()
        workers_seen = children(server.pid)
        if workers > 1:  # decoding processes, forked with the model
            assert (
                sorted(health["workers"]) == sorted(map(int, workers_seen))
                and len(workers_seen) == 2
            )
            answers = concurrent.futures.ThreadPoolExecutor(4).map(
                lambda _: httpx.post(base + "/v1/summarize", json={"reviews": REVIEWS[:2]}),
                range(8),
            )  # shared out among them, each answered as by one process
            assert {r.json()["summary"] for r in answers} == {summarizer.summarize(REVIEWS[:2])}
            assert httpx.get(base + "/healthz", timeout=10).json()["batches"] >= 2
        else:
            assert health["workers"] == [server.pid]
    finally:
        server.terminate()
        server.wait(30)
    assert server.returncode in (0, -signal.SIGTERM), server.stdout.read()  # uvicorn re-raises
    assert not any(running(c) for c in workers_seen)  # no worker left behind


def test_serving_leaves_the_loaded_objects_out_of_the_collector(summarizer, monkeypatch):
    """serve() freezes what is alive before it serves (the loaded model's objects): the
    collector's full passes, which held every running request for over 100 ms, skip them."""
    import gc

    import uvicorn

    from denoisesum.serving.server import serve

    loaded = [[word] for word in REVIEWS]  # stands for the model's vocabulary and lexicons
    seen: dict[str, bool] = {}

    def run(server, sockets=None):  # instead of serving: what the collector walks now
        walked = gc.get_objects()
        seen["loaded"] = any(o is loaded for o in walked)
        made = [[0]]  # objects made while serving are still collected
        seen["made"] = any(o is made for o in gc.get_objects())

    monkeypatch.setattr(uvicorn.Server, "run", run)
    try:
        assert any(o is loaded for o in gc.get_objects())
        serve(create_app(summarizer), port=0)
    finally:
        gc.unfreeze()  # (the rest of the tests' objects back under the collector)
    assert seen == {"loaded": False, "made": True}


def test_the_workers_socket_answers_without_nagle():
    """serve --workers listens on a socket of its own: asyncio must turn Nagle's algorithm off
    on its connections, as on uvicorn's (else each answer's end waits 40 ms for the client's
    delayed acknowledgement)."""
    from denoisesum.serving.server import _listen

    async def accept_one() -> int:
        sock = _listen("127.0.0.1", 0, 8)
        accepted: asyncio.Future = asyncio.get_running_loop().create_future()

        class Protocol(asyncio.Protocol):
            def connection_made(self, transport):
                raw = transport.get_extra_info("socket")
                accepted.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Protocol, sock=sock)
        try:
            port = sock.getsockname()[1]
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            nodelay = await asyncio.wait_for(accepted, 10)
            writer.close()
            return nodelay
        finally:
            server.close()
            await server.wait_closed()

    assert asyncio.run(accept_one()) != 0


def test_the_workers_of_a_killed_serve_stop(summarizer):
    """SIGKILL leaves the command no time to stop its workers: each notices it is orphaned."""
    server, _ = start_serve(
        summarizer, "--workers", "2", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        workers_seen = children(server.pid)
        assert len(workers_seen) == 2
        server.kill()
    finally:
        server.wait(30)
    assert all_ended(workers_seen)


def test_a_worker_that_dies_stops_the_service_with_status_1(summarizer):
    """A service of fewer decoding processes than asked for is not the one started."""
    server, _ = start_serve(
        summarizer, "--workers", "2", "--threads", "1", stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        workers_seen = children(server.pid)
        os.kill(int(workers_seen[0]), signal.SIGKILL)
        assert server.wait(30) == 1
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(30)
    assert all_ended(workers_seen)


def test_workers_on_a_port_in_use_is_one_line(summarizer):
    from conftest import refused, run_cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("serve", "--model", summarizer.path, "--workers", "2", "--port", port)
    assert refused(done, f"cannot listen on 127.0.0.1:{port}: Address already in use"), done


def test_workers_below_one_are_refused(summarizer):
    from conftest import run_cli

    done = run_cli("serve", "--model", summarizer.path, "--workers", "0")
    assert done.returncode == 2 and "--workers" in done.stderr and "Traceback" not in done.stderr


# ---- opinion: ratings and slices (issue 31) ---------------------------------------------------


def test_ratings_and_slices_per_request(client, summarizer):
    ratings = [5.0, 1.0, 5.0]
    body = client.post(
        "/v1/summarize", json={"reviews": REVIEWS, "ratings": ratings, "slice": "complaints"}
    ).json()
    assert body["summary"] == summarizer.summarize(REVIEWS, ratings, slice="complaints")
    praise = client.post(
        "/v1/summarize", json={"reviews": REVIEWS, "ratings": [5.0] * 3, "slice": "complaints"}
    ).json()
    assert praise["summary"] == "" and any("complaints" in w for w in praise["warnings"])
    batch = client.post(
        "/v1/summarize/batch",
        json={
            "slice": "praise",
            "sets": [{"reviews": REVIEWS, "ratings": ratings}, {"reviews": OTHER}],
        },
    )
    assert batch.status_code == 422  # the tiny model has no rating model to read OTHER
    bad = client.post("/v1/summarize", json={"reviews": REVIEWS, "ratings": [1.0]})
    assert bad.status_code == 422 and "ratings has 1 values" in bad.text
    bad = client.post("/v1/summarize", json={"reviews": REVIEWS, "slice": "gossip"})
    assert bad.status_code == 422 and "slice" in bad.text


def test_per_request_length_and_beam(client, summarizer):
    body = client.post("/v1/summarize", json={"reviews": REVIEWS, "max_words": 6, "beam": 2}).json()
    assert body["summary"] == summarizer.summarize(REVIEWS, max_words=6, beam=2)
    assert len(summarizer.vocab.tokenizer.tokenize(body["summary"])) <= 6
    batch = client.post(
        "/v1/summarize/batch",
        json={"max_words": 6, "sets": [{"reviews": REVIEWS}, {"reviews": OTHER}]},
    ).json()
    assert [r["summary"] for r in batch["results"]] == [
        summarizer.summarize(r, max_words=6) for r in (REVIEWS, OTHER)
    ]
    bad = client.post("/v1/summarize", json={"reviews": REVIEWS, "max_words": 0})
    assert bad.status_code == 422 and "max_words" in bad.text
    bad = client.post("/v1/summarize", json={"reviews": REVIEWS, "length": 5})
    assert bad.status_code == 422 and "length" in bad.text


def test_per_request_voice(client, summarizer):
    for allowed in (True, False):
        body = client.post("/v1/summarize", json={"reviews": REVIEWS, "first_person": allowed})
        assert body.json()["summary"] == summarizer.summarize(REVIEWS, first_person=allowed)
    batch = client.post(
        "/v1/summarize/batch",
        json={"first_person": True, "sets": [{"reviews": REVIEWS}, {"reviews": OTHER}]},
    ).json()
    assert [r["summary"] for r in batch["results"]] == [
        summarizer.summarize(r, first_person=True) for r in (REVIEWS, OTHER)
    ]
    bad = client.post("/v1/summarize", json={"reviews": REVIEWS, "first_person": "maybe"})
    assert bad.status_code == 422 and "first_person" in bad.text


def test_the_voice_reaches_the_decoding_options():
    from denoisesum.serving.limits import ServiceLimits
    from denoisesum.serving.routes import options
    from denoisesum.serving.schemas import request_models

    single, _ = request_models(ServiceLimits())
    body = single(reviews=["fine"], first_person=False, beam=2)
    assert options(body) == {"beam": 2, "first_person": False}
    assert options(single(reviews=["fine"])) == {}
