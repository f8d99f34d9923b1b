"""lab/studies/opinion_reading.py: the judges' opinion of each summary against the readings."""

import json

from lab.studies import opinion_reading


class Stars:
    """A stand-in rating model: 5 stars for a text saying "great", 1 for "awful", else 3."""

    def star(self, text: str) -> float:
        return 5.0 if "great" in text and "awful" not in text else 1.0 if "awful" in text else 3.0

    def stars(self, texts):
        return [self.star(t) for t in texts]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_each_summary_once_with_its_judges_majority_and_the_readings(tmp_path):
    one = {"entity_id": "a", "sentences": ["the food is great ."], "system": "shipped"}
    two = {
        "entity_id": "b",
        "sentences": [
            "some reviewers praise it: it is great .",
            "staff great .",
            "others complain: awful .",
        ],
        "system": "human",
    }
    write(
        tmp_path / "x.jsonl",
        [dict(one, summary_opinion="positive"), dict(two, summary_opinion="mixed")],
    )
    write(
        tmp_path / "y.jsonl",
        [dict(one, summary_opinion="positive"), dict(one, summary_opinion="mixed")],
    )
    write(tmp_path / "y.entities.jsonl", [{"entity_id": "a"}])  # not a judged file
    rows = opinion_reading.judged_summaries(tmp_path)
    assert [(r["entity_id"], r["judged"], r["two_sided"], r["human"]) for r in rows] == [
        ("a", "positive", False, False),
        ("b", "mixed", True, True),
    ]
    read = opinion_reading.readers(Stars())
    for row in rows:
        row.update({name: fn(row["text"]) for name, fn in read.items()})
    # read at once, "awful" decides the two-sided summary; by sentence, the longer side; by
    # side, each side counts alike
    assert rows[1]["whole"] == 1.0 and rows[1]["sentences"] == 11 / 3
    assert rows[1]["sentences by side"] == 3.0
    table = opinion_reading.report(rows, list(read))
    assert "| two-sided | 1 | 0.0% | 0.0% | 100.0% |" in table
