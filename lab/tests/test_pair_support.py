"""lab/studies/pair_support.py: the summary's content words that the pair's noisy reviews hold."""

import gzip
import json

import pytest

from lab.studies import pair_support

PAIR = {
    "summary": "the ramen broth is rich and the gyoza are crisp .",
    "segment_noise": ["the ramen soup is rich and the rolls are soft .", "a broth is fine ."],
    "document_noise": ["gyoza were great here .", "rich flavours ."],
}


def test_counts_the_content_words_no_input_holds():
    counts = pair_support.pair_counts(PAIR)
    # content words: ramen, broth, rich, gyoza, crisp
    assert counts == {
        "content": 5,
        "in_no_input": 1,  # crisp
        "in_no_segment_input": 2,  # gyoza, crisp
        "in_no_document_input": 3,  # ramen, broth, crisp
    }


def test_shares_pool_words_and_take_per_pair_quantiles(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    held = dict(PAIR, summary="the ramen broth is rich .")
    with gzip.open(shards / "shard-00000.jsonl.gz", "wt") as f:
        for pair in (PAIR, held):
            f.write(json.dumps(pair) + "\n")
    result = pair_support.shares(
        [pair_support.pair_counts(p) for p in pair_support.read_pairs(tmp_path)]
    )
    assert result["pairs"] == 2 and result["content_words"] == 8
    assert result["in_no_input"] == pytest.approx(1 / 8)
    assert result["per_pair_median"] == pytest.approx(0.1)  # of 0 and 1/5
    assert "| no input at all | 12.5% |" in pair_support.markdown(tmp_path, result)
