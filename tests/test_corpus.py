import csv
import gzip
import io
import json
import lzma
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from conftest import write_jsonl
from denoisesum.data.corpus import CorpusReader, FieldNames, estimate_records
from denoisesum.errors import InputError

RECORDS = [
    {"entity_id": "a", "text": "Great pizza.", "rating": 5, "category": "food"},
    {"entity_id": "a", "text": 'Cold, but "ok", fries\nsecond line', "rating": 3},
    {"entity_id": "b", "text": "Friendly staff!", "rating": None},
]


def _jsonl_bytes(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _csv_bytes(records, delimiter=",") -> bytes:
    out = io.StringIO()
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    writer = csv.writer(out, delimiter=delimiter, quoting=quoting, escapechar="\\")
    writer.writerow(["entity_id", "text", "rating", "category"])
    for r in records:
        text = r["text"].replace("\n", " ") if delimiter == "\t" else r["text"]
        writer.writerow([r["entity_id"], text, r.get("rating") or "", r.get("category") or ""])
    return out.getvalue().encode()


COMPRESS = {
    "": lambda b: b,
    ".gz": gzip.compress,
    ".xz": lzma.compress,
    ".zst": lambda b: zstandard.ZstdCompressor().compress(b),
}


@pytest.mark.parametrize("compression", list(COMPRESS))
@pytest.mark.parametrize("fmt", [".jsonl", ".csv", ".tsv"])
def test_text_formats_and_compressions(tmp_path, fmt, compression):
    data = (
        _jsonl_bytes(RECORDS)
        if fmt == ".jsonl"
        else _csv_bytes(RECORDS, "\t" if fmt == ".tsv" else ",")
    )
    path = tmp_path / f"reviews{fmt}{compression}"
    path.write_bytes(COMPRESS[compression](data))
    reviews = list(CorpusReader(path))
    assert [r.entity_id for r in reviews] == ["a", "a", "b"]
    assert reviews[0].text == "Great pizza."
    assert reviews[0].rating == 5.0 and reviews[0].category == "food"
    assert reviews[2].rating is None and reviews[1].category is None
    if fmt == ".csv":  # quoted newline and quotes survive in CSV
        assert reviews[1].text == RECORDS[1]["text"]


def test_parquet(tmp_path):
    path = tmp_path / "reviews.parquet"
    pq.write_table(pa.Table.from_pylist(RECORDS), path)
    reviews = list(CorpusReader(path))
    assert [r.text for r in reviews] == [r["text"] for r in RECORDS]
    assert estimate_records([path]) == 3


def test_several_files_and_globs(tmp_path):
    write_jsonl(tmp_path / "part-1.jsonl", RECORDS[:1])
    write_jsonl(tmp_path / "part-2.jsonl", RECORDS[1:])
    assert len(list(CorpusReader(str(tmp_path / "part-*.jsonl")))) == 3
    assert len(list(CorpusReader([tmp_path / "part-2.jsonl", tmp_path / "part-1.jsonl"]))) == 3


def test_custom_field_names(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [{"business": "x", "body": "Nice.", "stars": "4"}])
    [review] = CorpusReader(path, FieldNames(entity_id="business", text="body", rating="stars"))
    assert (review.entity_id, review.text, review.rating) == ("x", "Nice.", 4.0)


def test_reading_streams(tmp_path):
    """Records are produced one by one: a bad line further down is not reached early."""
    path = tmp_path / "r.jsonl"
    path.write_text(_jsonl_bytes(RECORDS).decode() + "{broken\n")
    it = iter(CorpusReader(path))
    assert next(it).entity_id == "a"
    next(it), next(it)
    with pytest.raises(InputError):
        next(it)


BAD_JSONL = [
    (b'{"entity_id": "a", "text": "ok"}\n{"text": "no id"}\n', 2, "entity_id", "missing field"),
    (b'{"entity_id": "a", "text": "ok"}\n{"entity_id": "a"}\n', 2, "text", "missing field"),
    (b'{"entity_id": "a", "text": "   "}\n', 1, "text", "empty text"),
    (b'{"entity_id": "a", "text": 5}\n', 1, "text", "must be a string"),
    (b'{"entity_id": "a", "text": "x", "rating": "five"}\n', 1, "rating", "must be a number"),
    (
        b'{"entity_id": "a", "text": "x"}\n{"entity_id": "a", "text": "x",\n',
        2,
        None,
        "invalid JSON",
    ),
    (b'["a", "b"]\n', 1, None, "expected an object"),
    (b'{"entity_id": "a", "text": "caf\xe9"}\n', 1, None, "undecodable bytes"),
]


@pytest.mark.parametrize(("content", "line", "field", "message"), BAD_JSONL)
def test_bad_jsonl_names_file_line_field(tmp_path, content, line, field, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        list(CorpusReader(path))
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), line, field)
    assert message in str(err) and str(path) in str(err) and f"line {line}" in str(err)


def test_skip_bad_counts_and_reports(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(c for c, *_ in BAD_JSONL) + b'{"entity_id": "z", "text": "fine"}\n')
    reader = CorpusReader(path, skip_bad=True)
    reviews = list(reader)
    # only the good records survive: 'ok' lines (5 of them) + 'x' without bad rating + 'fine'
    assert [r.text for r in reviews][-1] == "fine"
    assert all(r.text.strip() for r in reviews)
    assert reader.skipped.count == len(BAD_JSONL)
    assert "skipped 8 bad record(s)" in reader.skipped.report()


def test_bad_csv(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"entity_id,text\na,good\nb,caf\xe9\nc,\nd,fine\n")
    with pytest.raises(InputError, match=r"line 3.*undecodable"):
        list(CorpusReader(path))
    reader = CorpusReader(path, skip_bad=True)
    assert [r.entity_id for r in reader] == ["a", "d"]
    assert reader.skipped.count == 2
    assert "line 4, field 'text': empty text" in reader.skipped.report()


def test_csv_missing_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,text\na,good\n")
    with pytest.raises(InputError, match=r"line 1, field 'entity_id': header has no such column"):
        list(CorpusReader(path))


def test_corrupt_compressed_file_is_never_skipped(tmp_path):
    path = tmp_path / "r.jsonl.xz"
    path.write_bytes(lzma.compress(_jsonl_bytes(RECORDS * 50))[:-40])
    with pytest.raises(InputError, match="corrupt or truncated"):
        list(CorpusReader(path, skip_bad=True))


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "r.txt").write_text("hello")
    with pytest.raises(InputError, match=r"unknown format '\.txt'"):
        CorpusReader(tmp_path / "r.txt")
    with pytest.raises(InputError, match="no such file"):
        CorpusReader(tmp_path / "nope-*.jsonl")


def test_parquet_missing_column_and_null_text(tmp_path):
    path = tmp_path / "r.parquet"
    pq.write_table(pa.Table.from_pylist([{"entity_id": "a", "body": "x"}]), path)
    with pytest.raises(InputError, match="field 'text': no such column"):
        list(CorpusReader(path))
    pq.write_table(
        pa.Table.from_pylist([{"entity_id": "a", "text": "x"}, {"entity_id": "a", "text": None}]),
        path,
    )
    with pytest.raises(InputError, match="row 2, field 'text': missing field"):
        list(CorpusReader(path))


def test_estimate_records(tmp_path):
    path = tmp_path / "r.jsonl.gz"
    path.write_bytes(gzip.compress(_jsonl_bytes(RECORDS)))
    assert estimate_records([Path(path)]) == 3


@pytest.mark.parametrize("compression", [".gz", ".xz", ".zst"])
@pytest.mark.parametrize("keep", [0.5, -1, 20])
def test_truncated_compressed_file_is_an_error(tmp_path, compression, keep):
    """A .zst cut short used to read as a shorter (or empty) file, with no error."""
    path = tmp_path / f"r.jsonl{compression}"
    data = COMPRESS[compression](_jsonl_bytes(RECORDS * 500))
    path.write_bytes(data[: int(len(data) * keep) if keep == 0.5 else keep])
    with pytest.raises(InputError, match=r"r\.jsonl\..*: cannot read \(corrupt or truncated"):
        list(CorpusReader(path, skip_bad=True))
    with pytest.raises(InputError, match="corrupt or truncated"):
        estimate_records([path])


def test_zst_of_several_frames_is_read_to_the_end(tmp_path):
    path = tmp_path / "r.jsonl.zst"
    path.write_bytes(COMPRESS[".zst"](_jsonl_bytes(RECORDS)) * 3)  # as `cat a.zst b.zst` makes
    assert len(list(CorpusReader(path))) == 9
    assert estimate_records([path]) == 9


def test_csv_unterminated_quote_is_an_error_never_skipped(tmp_path):
    """It used to read the rows before it, then swallow the rest of the file as one field."""
    rows = ["entity_id,text", *(f"e{i % 3},review {i} was fine" for i in range(100))]
    rows[3] = 'e1,"this quote is never closed'
    path = tmp_path / "r.csv"
    path.write_text("\n".join(rows) + "\n")
    for skip_bad in (False, True):
        with pytest.raises(InputError, match=r"r\.csv, line 4: unterminated quote"):
            list(CorpusReader(path, skip_bad=skip_bad))


def test_csv_text_after_a_closing_quote_is_a_bad_row(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('entity_id,text\na,"closed" then text\na,"fine ""quoted"" text"\n')
    with pytest.raises(InputError, match=r"line 2: malformed CSV: text after a field's closing"):
        list(CorpusReader(path))
    reader = CorpusReader(path, skip_bad=True)
    assert [r.text for r in reader] == ['fine "quoted" text']
    assert reader.skipped.count == 1
