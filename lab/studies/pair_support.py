"""How much of a training pair's summary its noisy reviews hold (issue 31 probe).

    python -m lab.studies.pair_support PAIRS_DIR [--markdown FILE]

DenoiseSum trains the summarizer to write a real review (a synthetic pair's summary) from noised
versions of it (segment noise) and from similar reviews (document noise). Where the noise took
a content word out and no other input has it, the pair rewards the model for writing a word
that none of its inputs holds: training for the invented details the judges mark partial or
unsupported. This counts, over a pairs directory (`denoisesum synthesize`; its shards are the
gzipped JSON lines under `shards/`), the summary's content words (text.is_content_word) that
no input holds, that no segment-noised input holds, and that no document-noise input holds,
and per pair the share of the first: its median and 90th percentile. Words are the pairs' own
tokens, lower-cased by the tokenizer that made them.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from denoisesum.io import iter_jsonl
from denoisesum.text import is_content_word
from lab.studies._harness import publish


def pair_counts(pair: dict) -> dict[str, int]:
    """The summary's content words and how many of them no input, no segment-noised input and
    no document-noise input holds (each occurrence counted)."""
    segment = {w for text in pair["segment_noise"] for w in text.split()}
    document = {w for text in pair["document_noise"] for w in text.split()}
    content = [w for w in pair["summary"].split() if is_content_word(w)]
    return {
        "content": len(content),
        "in_no_input": sum(w not in segment and w not in document for w in content),
        "in_no_segment_input": sum(w not in segment for w in content),
        "in_no_document_input": sum(w not in document for w in content),
    }


def shares(counts: list[dict[str, int]]) -> dict[str, float]:
    """Pooled shares of the summaries' content words, and the per-pair share held by no input
    (median, 90th percentile), over pairs with at least one content word."""
    counts = [c for c in counts if c["content"]]
    total = sum(c["content"] for c in counts)
    per_pair = sorted(c["in_no_input"] / c["content"] for c in counts)
    return {
        "pairs": len(counts),
        "content_words": total,
        "in_no_input": sum(c["in_no_input"] for c in counts) / total,
        "in_no_segment_input": sum(c["in_no_segment_input"] for c in counts) / total,
        "in_no_document_input": sum(c["in_no_document_input"] for c in counts) / total,
        "per_pair_median": statistics.median(per_pair),
        "per_pair_p90": per_pair[int(0.9 * (len(per_pair) - 1))],
    }


def read_pairs(directory: Path) -> list[dict]:
    shards = sorted((directory / "shards").glob("*.jsonl*"))
    if not shards:
        raise SystemExit(f"{directory}: no shards/*.jsonl* (a `denoisesum synthesize` output)")
    return [pair for shard in shards for _, pair in iter_jsonl(shard)]


def markdown(directory: Path, result: dict[str, float]) -> str:
    pct = {k: f"{100 * v:.1f}%" for k, v in result.items() if k not in ("pairs", "content_words")}
    return "\n".join(
        [
            f"Pairs of `{directory}`: {result['pairs']:,} pairs, "
            f"{result['content_words']:,} content words in their summaries.",
            "",
            "| the summary's content words held by | share |",
            "|---|--:|",
            f"| no input at all | {pct['in_no_input']} |",
            f"| no segment-noised input | {pct['in_no_segment_input']} |",
            f"| no document-noise input | {pct['in_no_document_input']} |",
            "",
            f"Per pair, the share held by no input: median {pct['per_pair_median']}, "
            f"90th percentile {pct['per_pair_p90']}.",
            "",
        ]
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("pairs", type=Path, help="a `denoisesum synthesize` output directory")
    p.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = p.parse_args()
    result = shares([pair_counts(pair) for pair in read_pairs(args.pairs)])
    text = markdown(args.pairs, result)
    publish(text, args.markdown)


if __name__ == "__main__":
    main()
