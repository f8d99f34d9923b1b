"""The web page end to end: the service runs under uvicorn on a free loopback port, Debian's
Chromium (driven by Playwright, never downloaded by it) types reviews, summarizes, and reads the
highlighted summary and its evidence; also files (their columns mapped), stars, errors, copy and
download, the page at a phone's width, and that the page asks nothing of any other host. A failing
test leaves a screenshot in $DENOISESUM_ARTIFACTS (default: <tmp>/denoisesum-artifacts); the
layout test leaves its screenshots (390 px and desktop) there too."""

import contextlib
import json
import os
import socket
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(
    os.environ.get("DENOISESUM_ARTIFACTS", Path(tempfile.gettempdir()) / "denoisesum-artifacts")
)
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytest.importorskip(
    "fastapi", reason="the browser test needs the serve extra: pip install -e '.[serve]'"
)
pytest.importorskip("uvicorn", reason="the browser test needs uvicorn (the serve extra)")
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the browser test needs Playwright (pip install playwright; "
    "never `playwright install`: it drives /usr/bin/chromium)",
)
if not CHROMIUM.exists():
    pytest.skip(
        f"the browser test needs Debian's Chromium at {CHROMIUM} (apt-get install chromium)",
        allow_module_level=True,
    )

import torch  # noqa: E402
import uvicorn  # noqa: E402

from conftest import run_cli, save_tiny_summarizer  # noqa: E402
from denoisesum.inference.beam import SearchConfig  # noqa: E402
from denoisesum.serving import ServiceLimits, create_app  # noqa: E402
from denoisesum.summarizer import Summarizer, SummarizerConfig  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")
SETTINGS = SummarizerConfig(
    max_review_tokens=12,
    max_reviews=4,
    search=SearchConfig(beam=3, min_words=4, max_words=10),
)
REVIEWS = [
    "The pizza was great and the staff was friendly. We will come back.",
    "The soup was cold and the waiter was rude.",
    "Great pizza, friendly staff.",
]
OTHER = ["The sushi was fresh and the owner was friendly.", "Fresh sushi, we will come back."]


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    """The tiny random model, nudged to write a few content words (left alone, it writes
    "Was the was the.", which has no evidence to show)."""
    summarizer = Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", SETTINGS)
    )
    words = [
        summarizer.vocab.id(w)
        for w in ("pizza", "great", "staff", "friendly", "sushi", "fresh", "cold", ".")
    ]
    with torch.no_grad():
        for branch in (summarizer.model.seg, summarizer.model.doc):
            branch.decoder.out.bias[words] += 4.0
    return summarizer


@pytest.fixture(scope="module")
def server(summarizer):
    """The app under uvicorn in a thread, on a loopback port the OS picked; its base URL."""
    with serve(summarizer) as url:
        yield url


@pytest.fixture(scope="module")
def default_summarizer() -> Summarizer:
    """The default model (package data), whose summaries follow the stars given."""
    return Summarizer.from_pretrained()


@pytest.fixture(scope="module")
def default_server(default_summarizer):
    with serve(default_summarizer) as url:
        yield url


@contextlib.contextmanager
def serve(summarizer: Summarizer):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(summarizer, ServiceLimits(max_reviews=10, max_review_chars=300))
    service = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=service.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if service.started:
            break
        time.sleep(0.05)
    else:
        pytest.fail("uvicorn did not start within 10 s")
    yield f"http://127.0.0.1:{port}"
    service.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, server, request):
    """A fresh page on the service that records every request and browser-side error; a
    screenshot is saved when the test fails."""
    with open_page(browser, server, request) as page:
        yield page


@pytest.fixture
def default_page(browser, default_server, request):
    """`page`, on the service of the default model."""
    with open_page(browser, default_server, request) as page:
        yield page


@contextlib.contextmanager
def open_page(browser, server: str, request, viewport: dict | None = None):
    context = browser.new_context(accept_downloads=True, viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.requests, page.problems = [], []
    page.on("request", lambda r: page.requests.append(r.url))
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    page.on("console", lambda m: m.type == "error" and page.problems.append(f"console: {m.text}"))
    failed_before = request.session.testsfailed
    page.goto(server + "/")
    yield page
    if request.session.testsfailed > failed_before:  # this test's call has failed
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"{request.node.name}.png"
        with contextlib.suppress(Exception):
            page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot: {shot}")
    context.close()


def level(score: float, threshold: float) -> str:  # the page's rule (app.js)
    return "high" if score >= threshold else "mid" if score >= threshold / 2 else "low"


def expected(summarizer: Summarizer, reviews: list[str], ratings: list | None = None):
    return summarizer.explain(reviews, ratings).explanation


def check_summary(page, explanation) -> None:
    page.locator("#summary .sent").first.wait_for()
    assert page.locator("#summary").inner_text() == explanation.summary
    sentences = page.locator("#summary .sent")
    assert sentences.count() == len(explanation.sentences)
    for i, sentence in enumerate(explanation.sentences):
        span = sentences.nth(i)
        assert span.inner_text() == sentence.text
        assert f"level-{level(sentence.score, explanation.threshold)}" in span.get_attribute(
            "class"
        )
    count = sum(s.supported for s in explanation.sentences)
    assert (
        page.locator("#share")
        .inner_text()
        .startswith(f"{count} of {len(explanation.sentences)} sentence")
    )


def test_type_summarize_and_see_the_evidence(page, server, summarizer):
    box = page.locator("#reviews")
    box.click()
    box.press_sequentially(OTHER[0])  # typed, key by key
    box.press("Enter")
    box.fill(box.input_value() + "\n".join(OTHER[1:]))
    assert page.locator("#review-count").inner_text() == "2 reviews"
    page.get_by_role("button", name="Summarize").click()
    explanation = expected(summarizer, OTHER)
    check_summary(page, explanation)
    assert page.locator("#model-name").inner_text() == "model: tiny"
    levels = {level(s.score, explanation.threshold) for s in explanation.sentences}
    assert levels == {"high", "mid", "low"}, explanation  # every colour is on the page

    # an unsupported sentence names the words no review has
    low = next(s for s in explanation.sentences if s.score == 0.0)
    assert low.missing
    page.locator("#summary .sent").nth(explanation.sentences.index(low)).hover()
    assert f"In no review: {', '.join(low.missing)}" in page.locator("#evidence").inner_text()
    assert "not supported" in page.locator("#evidence h3").inner_text()

    # hovering a sentence shows the reviews supporting it, their shared words marked
    evidence = page.locator("#evidence")
    index = next((i for i, s in enumerate(explanation.sentences) if s.reviews), None)
    assert index is not None, f"no sentence has supporting reviews: {explanation}"
    sentence = explanation.sentences[index]
    page.locator("#summary .sent").nth(index).hover()
    items = evidence.locator("li.support-review")
    assert items.count() == len(sentence.reviews)
    for item, support in zip(items.all(), sentence.reviews, strict=True):
        assert (
            item.locator(".review-head")
            .inner_text()
            .startswith(f"Review {support.index + 1} · score {support.score:.2f}")
        )
        assert OTHER[support.index] == item.locator(".review-text").inner_text()
        marked = {m.lower() for m in item.locator("mark").all_inner_texts()}
        assert marked and marked <= {w.lower() for w in support.matched} | {
            w.lower() + "s" for w in support.matched
        }
    assert sentence.text in evidence.locator("h3").inner_text()

    # a click pins it: leaving the summary keeps it shown; a second click unpins
    page.locator("#summary .sent").nth(index).click()
    page.locator("h1").hover()
    assert items.count() == len(sentence.reviews)
    assert "pinned" in page.locator("#summary .sent").nth(index).get_attribute("class")
    page.locator("#summary .sent").nth(index).click()
    page.locator("h1").hover()
    assert "Hover over or click" in evidence.inner_text()

    # nothing was asked of another host, and the browser saw no error (a CSP breach logs one)
    assert all(url.startswith(server + "/") for url in page.requests), page.requests
    assert page.problems == []


def test_blank_line_blocks_and_copy_and_download(page, summarizer):
    multi = ["The pizza was great.\nThe staff was friendly.", "The soup was cold."]
    page.get_by_label("separated by blank lines").check()
    page.locator("#reviews").fill("\n\n".join(multi))
    assert page.locator("#review-count").inner_text() == "2 reviews"
    page.locator("#summarize").click()
    explanation = expected(summarizer, multi)
    check_summary(page, explanation)
    page.locator("#copy").click()
    page.get_by_text("Summary copied.").wait_for()
    with page.expect_download() as info:
        page.locator("#download-text").click()
    assert Path(info.value.path()).read_text() == explanation.summary + "\n"
    with page.expect_download() as info:
        page.locator("#download-json").click()
    record = json.loads(Path(info.value.path()).read_text())
    assert record["summary"] == explanation.summary and record["reviews"] == multi
    assert record["support"]["supported_share"] == explanation.supported_share
    assert page.problems == []


def test_csv_and_jsonl_files(page, summarizer, tmp_path):
    csv_file = tmp_path / "reviews.csv"
    csv_file.write_text(
        'entity_id,rating,text\npizzeria,5,"' + REVIEWS[0] + '"\n'
        "sushi,5," + OTHER[0] + '\npizzeria,1,"' + REVIEWS[1] + '"\n'
        'sushi,4,"' + OTHER[1].replace(",", "") + '"\n'
    )
    page.locator("#file").set_input_files(str(csv_file))
    select = page.locator("#set-select")
    select.wait_for()
    assert select.locator("option").all_inner_texts() == [
        "pizzeria (2 reviews)",
        "sushi (2 reviews)",
    ]
    assert page.locator("#reviews").input_value() == "\n".join(REVIEWS[:2])
    select.select_option(label="sushi (2 reviews)")
    sushi = [OTHER[0], OTHER[1].replace(",", "")]
    assert page.locator("#reviews").input_value() == "\n".join(sushi)
    assert page.locator("#stars-on").is_checked()  # the file's rating column, sent
    assert sent_body(page)["ratings"] == [5, 4]
    check_summary(page, expected(summarizer, sushi, [5, 4]))

    jsonl = tmp_path / "sets.jsonl"
    jsonl.write_text(json.dumps({"entity_id": "one", "reviews": OTHER}) + "\n")
    page.locator("#file").set_input_files(str(jsonl))
    page.get_by_text("sets.jsonl: 2 reviews").wait_for()
    assert page.locator("#set-choice").is_hidden()
    assert page.locator("#reviews").input_value() == "\n".join(OTHER)

    per_review = tmp_path / "reviews.jsonl"
    per_review.write_text("".join(json.dumps({"text": t}) + "\n" for t in REVIEWS))
    page.locator("#file").set_input_files(str(per_review))
    page.get_by_text("reviews.jsonl: 3 reviews").wait_for()
    assert page.locator("#reviews").input_value() == "\n".join(REVIEWS)

    odd = tmp_path / "odd.csv"  # no column of a usual name: the page asks which holds the text
    odd.write_text("a,b\nx,good pizza\n")
    page.locator("#file").set_input_files(str(odd))
    page.get_by_text("odd.csv: which column holds the review text?").wait_for()
    assert "(columns: a, b)" in page.locator("#message").inner_text()
    page.locator("#col-text").select_option("b")
    page.get_by_text("odd.csv: 1 review").wait_for()
    assert page.locator("#reviews").input_value() == "good pizza"
    assert page.problems == []


def test_errors_are_shown(page):
    page.locator("#summarize").click()
    page.get_by_text("Paste some reviews first").wait_for()
    page.locator("#reviews").fill("good pizza\n" + "very long review " * 30)
    page.locator("#summarize").click()
    message = page.locator("#message")
    message.get_by_text("Error 422").wait_for()
    assert "reviews[1]: must be at most 300 characters" in message.inner_text()
    assert '(review 2: "very long review' in message.inner_text()
    assert "error" in message.get_attribute("class")


def test_the_slice_control_is_sent(page):
    """The page asks for the complaints alone; the tiny model has no rating model and the page
    no stars, so the service says what it needs, on the page."""
    page.locator("#reviews").fill("\n".join(OTHER))
    page.locator("#slice").select_option("complaints")
    with page.expect_request("**/v1/summarize") as sent:
        page.locator("#summarize").click()
    assert '"slice":"complaints"' in sent.value.post_data
    message = page.locator("#message")
    message.get_by_text("Error 422").wait_for()
    assert "needs every review's stars, or a model with a rating model" in message.inner_text()


def test_the_length_control_is_sent(page, summarizer):
    page.locator("#reviews").fill("\n".join(OTHER))
    page.locator("#max-words").fill("6")
    with page.expect_request("**/v1/summarize") as sent:
        page.locator("#summarize").click()
    assert '"max_words":6' in sent.value.post_data
    page.locator("#summary .sent").first.wait_for()
    assert page.locator("#summary").inner_text() == summarizer.summarize(OTHER, max_words=6)


def sent_body(page) -> dict:
    """Summarize; the JSON body the page sent (once the answer is back and shown)."""
    with page.expect_response("**/v1/summarize") as answer:
        page.locator("#summarize").click()
    page.locator("#summarize:not([disabled])").wait_for()
    return json.loads(answer.value.request.post_data)


def star_boxes(page) -> list[str]:
    return [box.input_value() for box in page.locator("#star-list input.star").all()]


def test_a_file_s_columns_are_mapped_and_its_stars_sent(page, tmp_path):
    """A CSV export of its own names (business_id, stars, body): the page guesses the columns,
    shows them to change, and sends the chosen stars column's numbers as `ratings`."""
    export = tmp_path / "export.csv"
    export.write_text(
        "review_id,business_id,stars,body\n"
        f'r1,pizzeria,5,"{REVIEWS[0]}"\n'
        f"r2,pizzeria,1,{REVIEWS[1]}\n"
        f"r3,sushi,4.5,{OTHER[0]}\n"
        f'r4,pizzeria,n/a,"{REVIEWS[2]}"\n'
    )
    page.locator("#file").set_input_files(str(export))
    page.get_by_text("export.csv: 4 reviews in 2 sets").wait_for()
    assert "1 without stars: line 5" in page.locator("#message").inner_text()
    assert page.locator("#col-text").input_value() == "body"
    assert page.locator("#col-entity").input_value() == "business_id"
    assert page.locator("#col-rating").input_value() == "stars"
    assert page.locator("#stars-on").is_checked()
    assert page.locator("#reviews").input_value() == "\n".join(REVIEWS)
    assert star_boxes(page) == ["5", "1", ""]
    assert page.locator("#review-count").inner_text() == "3 reviews, 2 with stars"
    assert sent_body(page)["ratings"] == [5, 1, None]
    page.locator("#set-select").select_option(label="sushi (1 review)")
    assert star_boxes(page) == ["4.5"]

    # no stars column: none sent; a column of other things than stars: one message, named
    page.locator("#col-rating").select_option("")
    assert not page.locator("#stars-on").is_checked()
    assert "ratings" not in sent_body(page)
    page.locator("#col-rating").select_option("review_id")
    page.get_by_text('export.csv: column "review_id" holds no stars (line 2: "r1")').wait_for()
    assert "error" in page.locator("#message").get_attribute("class")
    assert page.locator("#reviews").input_value() == ""
    page.locator("#col-rating").select_option("stars")
    page.locator("#col-entity").select_option("body")
    page.get_by_text('column "body" cannot be both the text and the entity').wait_for()
    page.locator("#col-entity").select_option("")  # one set of all the reviews
    page.get_by_text("export.csv: 4 reviews (1 without stars: line 5)").wait_for()
    assert page.locator("#set-choice").is_hidden()

    # bad files: one message naming the file, the line and the column
    for name, content, message in [
        ("ten.csv", "text,score\ngood,8\n", 'ten.csv, line 2, column "score": 8 is not stars'),
        ("wide.csv", "text,stars\n" + "good, cheap,4\n", "wide.csv, line 2: 3 fields where"),
        ("open.csv", 'text\n"good\n', "open.csv, line 2: a quoted field is not closed"),
        ("empty.csv", "", "empty.csv: the file is empty"),
        ("head.csv", "text,stars\n", "head.csv: no rows below the header (text, stars)"),
        ("bad.jsonl", '{"text": "good"}\n{"text": \n', "bad.jsonl, line 2: not JSON"),
        (
            "sets.jsonl",
            '{"reviews": ["a", "b"], "ratings": [5]}\n',
            'sets.jsonl, line 1: "ratings"',
        ),
        ("none.jsonl", '{"reviews": [" "]}\n', "none.jsonl: no reviews found"),
    ]:
        (tmp_path / name).write_text(content)
        page.locator("#file").set_input_files(str(tmp_path / name))
        page.get_by_text(message).wait_for()
        assert "error" in page.locator("#message").get_attribute("class")

    # JSON Lines: Amazon's names per review; review sets with their ratings
    amazon = tmp_path / "amazon.jsonl"
    amazon.write_text(
        "".join(
            json.dumps({"asin": "B01", "overall": stars, "reviewText": text}) + "\n"
            for text, stars in zip(OTHER, (5.0, 2.0), strict=True)
        )
    )
    page.locator("#file").set_input_files(str(amazon))
    page.get_by_text("amazon.jsonl: 2 reviews").wait_for()
    assert [page.locator(f"#col-{c}").input_value() for c in ("text", "entity", "rating")] == [
        "reviewText",
        "asin",
        "overall",
    ]
    assert sent_body(page)["ratings"] == [5, 2]
    sets = tmp_path / "sets.jsonl"
    sets.write_text(json.dumps({"entity_id": "one", "reviews": OTHER, "ratings": [None, 3]}))
    page.locator("#file").set_input_files(str(sets))
    page.get_by_text("sets.jsonl: 2 reviews").wait_for()
    assert page.locator("#columns").is_hidden()
    assert star_boxes(page) == ["", "3"]
    assert sent_body(page)["ratings"] == [None, 3]
    assert page.problems == []


def test_stars_typed_on_the_page(page):
    """Pasted reviews get their stars in a box per review, which stays with its review as the
    text is edited; a box out of 1-5 or not a number stops the request with one message."""
    page.locator("#reviews").fill("\n".join(REVIEWS))
    assert page.locator("#star-list").is_hidden()
    assert "ratings" not in sent_body(page)
    page.get_by_label("Give each review stars").check()
    assert page.locator("#star-list li").all_inner_texts() == [f" ★ {r}" for r in REVIEWS]
    page.get_by_label("Stars for review 1").fill("5")
    page.get_by_label("Stars for review 3").fill("4,5")
    assert page.locator("#review-count").inner_text() == "3 reviews, 2 with stars"
    assert sent_body(page)["ratings"] == [5, None, 4.5]

    box = page.locator("#reviews")  # a review corrected keeps its stars; one added gets none
    box.fill("\n".join([REVIEWS[0].replace("great", "superb"), *REVIEWS[1:]]))
    assert star_boxes(page) == ["5", "", "4,5"]
    box.fill("\n".join([OTHER[0], REVIEWS[0].replace("great", "superb"), *REVIEWS[1:]]))
    assert star_boxes(page) == ["", "5", "", "4,5"]
    page.get_by_label("Stars for review 1").fill("2")

    for value, message in [("abc", '"abc" is not a number'), ("7", "7 is not from 1 to 5")]:
        page.get_by_label("Stars for review 3").fill(value)
        assert page.get_by_label("Stars for review 3").get_attribute("aria-invalid") == "true"
        page.locator("#summarize").click()
        page.get_by_text(f"Review 3's stars: {message} (give 1 to 5, or leave it empty)").wait_for()
        assert "error" in page.locator("#message").get_attribute("class")
    page.get_by_label("Stars for review 3").fill("")
    assert sent_body(page)["ratings"] == [2, 5, None, 4.5]
    page.get_by_label("Give each review stars").uncheck()  # the boxes kept, not sent
    assert "ratings" not in sent_body(page)
    assert page.problems == []


STARRED = [
    "The pizza was great and the staff was friendly. We will come back.",
    "The soup was cold and the waiter was rude.",
    "Great pizza, friendly staff.",
    "We waited an hour for a table and the pasta was bland.",
]
STARS = [5, 4, 5, 4]  # lenient raters: the default method says no complaint


def test_the_same_stars_give_the_same_summary_by_every_path(
    default_page, default_server, default_summarizer, tmp_path
):
    """The default model: Python, HTTP, the page with stars typed, the page with a file's
    stars column and the command line on that file give one summary, another than the one
    without stars."""
    python = default_summarizer.summarize(STARRED, ratings=STARS)
    assert python != default_summarizer.summarize(STARRED), "these stars change nothing"
    call = urllib.request.Request(
        default_server + "/v1/summarize",
        json.dumps({"reviews": STARRED, "ratings": STARS}).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(call, timeout=60) as answer:
        assert json.load(answer)["summary"] == python

    page = default_page
    page.locator("#reviews").fill("\n".join(STARRED))
    page.get_by_label("Give each review stars").check()
    for i, stars in enumerate(STARS):
        page.get_by_label(f"Stars for review {i + 1}").fill(str(stars))
    assert sent_body(page)["ratings"] == STARS
    page.locator("#summary .sent").first.wait_for()
    assert page.locator("#summary").inner_text() == python

    export = tmp_path / "export.csv"
    export.write_text(
        "business_id,stars,body\n"
        + "".join(f'pizzeria,{s},"{t}"\n' for t, s in zip(STARRED, STARS, strict=True))
    )
    page.locator("#file").set_input_files(str(export))
    page.get_by_text("export.csv: 4 reviews").wait_for()
    page.locator("#summary").evaluate("summary => summary.replaceChildren()")  # the next one
    assert sent_body(page)["ratings"] == STARS
    page.locator("#summary .sent").first.wait_for()
    assert page.locator("#summary").inner_text() == python
    assert page.problems == []

    out = tmp_path / "cli.jsonl"
    fields = ["--entity-field", "business_id", "--text-field", "body", "--rating-field", "stars"]
    done = run_cli("summarize", export, *fields, "-o", out, timeout=180)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["summary"] for line in out.read_text().splitlines()] == [python]


@pytest.mark.parametrize("width", [390, 1280])
def test_the_page_fits_a_phone_and_a_desktop(browser, default_server, request, tmp_path, width):
    """At a phone's 390 px nothing is wider than the screen and the Summarize button stays in
    its card, with a file's columns, the stars and a summary shown; on a desktop the button
    stays at the right end of the review count's row. Screenshots: $DENOISESUM_ARTIFACTS."""
    export = tmp_path / "export.csv"
    export.write_text(
        "business_id,stars,body\n"
        + "".join(f'pizzeria,{s},"{t}"\n' for t, s in zip(STARRED, STARS, strict=True))
        + f'sushi,5,"{OTHER[0]}"\n'
    )
    viewport = {"width": width, "height": 844 if width < 600 else 900}
    with open_page(browser, default_server, request, viewport) as page:
        page.locator("#file").set_input_files(str(export))
        page.get_by_text("export.csv: 5 reviews in 2 sets").wait_for()
        page.locator("#summarize").click()
        page.locator("#summary .sent").first.wait_for()
        page.locator("#summary .sent").first.hover()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"page-{width}px.png"), full_page=True)

        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.evaluate("document.body.scrollWidth") <= width
        button = page.locator("#summarize").bounding_box()
        for card in ("#input-panel", "#result"):
            box = page.locator(card).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, (card, box)
        card = page.locator("#input-panel").bounding_box()
        assert (
            card["x"] <= button["x"] and button["x"] + button["width"] <= card["x"] + card["width"]
        )
        assert (
            card["y"] <= button["y"]
            and button["y"] + button["height"] <= card["y"] + card["height"]
        )
        count = page.locator("#review-count").bounding_box()
        if width > 600:  # the desktop's row: the count at the left, the button at the right
            assert (
                abs((count["y"] + count["height"] / 2) - (button["y"] + button["height"] / 2)) < 8
            )
            assert card["x"] + card["width"] - (button["x"] + button["width"]) < 40
        assert page.problems == []


def test_the_opinions_method_shows_who_says_each_sentence(default_page, default_summarizer):
    """With the opinions method, each attributed sentence shows how many reviews hold its
    opinion (beside it, never in the copied text) and, hovered, which ones."""
    reviews = [
        "The broth is rich and delicious.",
        "Loved the rich broth here, so good.",
        "The broth was delicious and the noodles fresh.",
        "The staff was rude and slow.",
        "Great broth, but the service is slow.",
    ]
    result = default_summarizer.explain(reviews, method="opinions")
    assert result.attribution, "the opinions method attributed nothing here"
    first = result.attribution[0]
    page = default_page
    page.locator("#method").select_option("opinions")
    page.locator("#reviews").fill("\n".join(reviews))
    assert sent_body(page)["method"] == "opinions"
    sentence = page.locator("#summary .sent[data-share]").first
    sentence.wait_for()
    assert sentence.get_attribute("data-share") == f"{first.count} of {first.total}"
    assert page.locator("#summary").inner_text() == result.summary
    sentence.hover()
    holders = page.locator("#evidence .holders")
    holders.wait_for()
    assert holders.inner_text().startswith(f"Said by {first.count} of {first.total} reviews")
    assert page.problems == []
