"""Entities with more reviews than the model reads (issue 15, part 3): SummarizerConfig.select
and read_reviews choose which (inference/selection.py), the CLI, the Python API and the service
say how many were read. On the tiny random model of conftest.py."""

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import save_tiny_summarizer
from denoisesum.cli import app
from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.inference.beam import SearchConfig
from denoisesum.inference.selection import centrality, select_reviews, similarity_matrix
from denoisesum.noising.document_noise import idf_rouge1_f1
from denoisesum.summarizer import Summarizer, SummarizerConfig
from denoisesum.text import idf_weights

pytestmark = pytest.mark.usefixtures("one_thread")
SETTINGS = SummarizerConfig(
    max_review_tokens=20, search=SearchConfig(beam=2, min_words=4, max_words=8)
)
GOOD = ["great", "delicious", "amazing", "fresh", "tasty"]
STAFF = ["staff", "server", "waiter", "owner", "manager"]
# 10 near-duplicates about pizza and a friendly staff, and two reviews about other things
PIZZA = [
    f"the pizza was {GOOD[i % 5]} and the {STAFF[i // 2]} was friendly . we will come "
    "back for the pizza ."
    for i in range(10)
]
OUTLIERS = ["the soup was cold and bland .", "sushi , tacos , steak : awful , soggy , stale ."]
# the outliers where "first" would read them
REVIEWS = [OUTLIERS[0], *PIZZA[:4], OUTLIERS[1], *PIZZA[4:]]
OUTLIER_AT = {0, 5}


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    """The tiny model, loaded from its directory (`summarizer.path`)."""
    directory = tmp_path_factory.mktemp("models") / "tiny"
    return Summarizer.from_pretrained(save_tiny_summarizer(directory, SETTINGS))


def with_settings(summarizer: Summarizer, **changes) -> Summarizer:
    return Summarizer(summarizer.model, summarizer.vocab, replace(summarizer.config, **changes))


# ---- selection ------------------------------------------------------------------------------


def test_the_similarity_is_the_document_noise_similarity():
    rng = np.random.default_rng(0)
    reviews = [rng.integers(0, 40, size=rng.integers(1, 25)) for _ in range(15)]
    document_frequency = np.zeros(40)
    for review in reviews:
        document_frequency[np.unique(review)] += 1
    idf = idf_weights(document_frequency, len(reviews))
    expected = [[idf_rouge1_f1(x, y, idf) for y in reviews] for x in reviews]
    np.testing.assert_allclose(similarity_matrix(reviews), expected, rtol=1e-5, atol=1e-6)
    mean_of_others = [(sum(row) - row[i]) / (len(row) - 1) for i, row in enumerate(expected)]
    np.testing.assert_allclose(centrality(reviews), mean_of_others, rtol=1e-5, atol=1e-6)


def test_the_central_reviews_leave_the_outliers_out(summarizer):
    read = summarizer.reviews_read(REVIEWS)
    assert len(read) == 8 == summarizer.read_count(len(REVIEWS))
    assert read == sorted(read) and not OUTLIER_AT & set(read)
    ids = summarizer.encode_reviews(REVIEWS)  # what the model reads: those reviews, in order
    assert ids == [summarizer.encode_reviews([REVIEWS[i]])[0] for i in read]
    # the summary is the summary of the reviews read
    assert summarizer.summarize(REVIEWS) == summarizer.summarize([REVIEWS[i] for i in read])
    # ties keep the earlier review: 10 copies, the first 8
    assert select_reviews([[1, 2, 3]] * 10, 8) == list(range(8))


def test_first_and_random_modes(summarizer):
    first = with_settings(summarizer, select="first")
    assert first.reviews_read(REVIEWS) == list(range(8))
    assert first.encode_reviews(REVIEWS) == summarizer.encode_reviews(REVIEWS[:8])
    picks = {
        seed: with_settings(summarizer, select="random", seed=seed).reviews_read(REVIEWS)
        for seed in range(6)
    }
    for read in picks.values():
        assert len(read) == len(set(read)) == 8 and read == sorted(read)
        assert all(0 <= i < len(REVIEWS) for i in read)
    assert len({tuple(read) for read in picks.values()}) > 1  # the seed matters
    again = with_settings(summarizer, select="random", seed=3)
    assert again.reviews_read(REVIEWS) == picks[3]  # ... and fixes the choice
    fewer = with_settings(summarizer, read_reviews=3)
    assert len(fewer.reviews_read(REVIEWS)) == 3 and fewer.read_count(12) == 3


def test_a_set_no_larger_than_read_reviews_is_read_whole(summarizer):
    small = REVIEWS[:6]
    expected = summarizer.summarize(small)
    for mode in ("central", "first", "random"):
        reader = with_settings(summarizer, select=mode)
        assert reader.reviews_read(small) == list(range(6))
        assert reader.read_count(6) == 6
        assert reader.summarize(small) == expected


def test_max_reviews_bounds_what_is_considered(summarizer):
    capped = with_settings(summarizer, max_reviews=5)
    assert capped.reviews_read(REVIEWS) == list(range(5))  # 5 considered: all read
    assert capped.read_count(len(REVIEWS)) == 5


def test_the_counts_are_reported_when_the_model_chose(summarizer):
    assert summarizer.reading_fields(12) == {"reviews_read": 8, "reviews_total": 12}
    assert summarizer.reading_fields(8) == summarizer.reading_fields(1) == {}
    # a max_reviews below read_reviews is a plain cut (as before selection): nothing chosen
    assert with_settings(summarizer, max_reviews=5).reading_fields(12) == {}
    assert with_settings(summarizer, max_reviews=10).reading_fields(1500) == {
        "reviews_read": 8,
        "reviews_total": 1500,
    }


def test_bad_selection_settings_are_clear_errors(summarizer, tmp_path):
    model_dir = summarizer.path
    with pytest.raises(DenoiseSumError, match="select must be one of central, first, random"):
        with_settings(summarizer, select="best").summarize(REVIEWS)
    edited = tmp_path / "edited"
    edited.mkdir()
    for name in ("model.safetensors", "vocab.json"):
        (edited / name).write_bytes((model_dir / name).read_bytes())
    config = json.loads((model_dir / "config.json").read_text())
    for key, value in (("select", "best"), ("read_reviews", 0)):
        (edited / "config.json").write_text(
            json.dumps(config | {"summarize": config["summarize"] | {key: value}})
        )
        with pytest.raises(InputError, match=f"summarize.{key}"):
            Summarizer.from_pretrained(edited)


# ---- the command ----------------------------------------------------------------------------


def test_the_command_says_how_many_reviews_were_read(tmp_path, summarizer):
    model_dir = summarizer.path
    source = tmp_path / "sets.jsonl"
    sets = {"many": REVIEWS, "few": PIZZA[:3]}
    source.write_text(
        "".join(json.dumps({"entity_id": e, "reviews": r}) + "\n" for e, r in sets.items())
    )
    runner = CliRunner()
    result = runner.invoke(app, ["summarize", str(source), "--model", str(model_dir)])
    assert result.exit_code == 0, result.output
    many, few = (json.loads(line) for line in result.stdout.splitlines())
    assert many == {
        "entity_id": "many",
        "summary": summarizer.summarize(REVIEWS),
        "reviews_read": 8,
        "reviews_total": 12,
    }
    assert few == {"entity_id": "few", "summary": summarizer.summarize(PIZZA[:3])}  # all read
    result = runner.invoke(app, ["summarize", str(source), "--model", str(model_dir), "--text"])
    assert result.exit_code == 0, result.output
    assert "  read 8 of 12 reviews\n" in result.stdout
    assert result.stdout.count(" reviews\n") == 1


# ---- the service ----------------------------------------------------------------------------


def test_the_service_takes_200_reviews_and_says_how_many_it_read(summarizer):
    pytest.importorskip("fastapi", reason="the serving tests need the serve extra")
    from fastapi.testclient import TestClient

    from denoisesum.serving import ServiceLimits, create_app

    many = (REVIEWS * 17)[:200]
    limits = ServiceLimits(max_reviews=200, max_review_chars=300, max_sets=2)
    with TestClient(create_app(summarizer, limits)) as client:
        response = client.post("/v1/summarize", json={"reviews": many})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["summary"] == summarizer.summarize(many)
        assert (body["reviews_read"], body["reviews_total"]) == (8, 200)
        few = client.post("/v1/summarize", json={"reviews": PIZZA[:3]}).json()
        assert "reviews_read" not in few and "reviews_total" not in few  # all read
        response = client.post(
            "/v1/summarize/batch",
            json={"sets": [{"id": "many", "reviews": many}, {"id": "few", "reviews": PIZZA[:3]}]},
        )
        assert response.status_code == 200, response.text
        first, second = response.json()["results"]
        assert (first["id"], first["reviews_read"], first["reviews_total"]) == ("many", 8, 200)
        assert second["id"] == "few" and "reviews_read" not in second
        schema = client.get("/openapi.json").json()["components"]["schemas"]
        assert "reviews_read" in schema["SummarizeResponse"]["properties"]
