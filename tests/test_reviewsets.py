import pytest

from conftest import write_jsonl
from denoisesum.data.reviewsets import (
    Prediction,
    ReviewSet,
    read_predictions,
    read_review_sets,
    write_predictions,
    write_review_sets,
)
from denoisesum.errors import InputError


def test_round_trip(tmp_path):
    sets = [
        ReviewSet(entity_id="a", reviews=["good", "bad"], summaries=["mixed"]),
        ReviewSet(entity_id="b", reviews=["ok"]),
    ]
    write_review_sets(tmp_path / "sets.jsonl", sets)
    assert list(read_review_sets(tmp_path / "sets.jsonl")) == sets
    preds = [Prediction(entity_id="a", summary="Mixed.")]
    write_predictions(tmp_path / "p.jsonl", preds)
    assert list(read_predictions(tmp_path / "p.jsonl")) == preds


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        ({"reviews": ["x"]}, "entity_id", "required field is missing"),
        ({"entity_id": "a", "reviews": []}, "reviews", "must hold at least 1 review (it holds 0)"),
        ({"entity_id": "a", "reviews": ["x", "  "]}, "reviews", "review 1 is empty"),
        ({"entity_id": "a", "reviews": ["x", 3]}, "reviews.1", "must be a string"),
        ({"entity_id": 7, "reviews": ["x"]}, "entity_id", "must be a string"),
        ({"entity_id": "a", "reviews": ["x"], "summaries": "s"}, "summaries", "must be a list"),
    ],
)
def test_validation_errors_name_line_and_field(tmp_path, record, field, message):
    path = write_jsonl(tmp_path / "s.jsonl", [{"entity_id": "ok", "reviews": ["fine"]}, record])
    with pytest.raises(InputError) as info:
        list(read_review_sets(path))
    assert info.value.line == 2 and info.value.field == field
    assert message in str(info.value)


def test_duplicate_ids_and_bad_prediction(tmp_path):
    path = write_jsonl(
        tmp_path / "p.jsonl",
        [{"entity_id": "a", "summary": "x"}, {"entity_id": "a", "summary": "y"}],
    )
    with pytest.raises(InputError, match="line 2, field 'entity_id': duplicate"):
        list(read_predictions(path))
    path = write_jsonl(tmp_path / "q.jsonl", [{"entity_id": "a"}])
    with pytest.raises(InputError, match="field 'summary'"):
        list(read_predictions(path))
