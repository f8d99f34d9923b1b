"""A tokenized corpus on disk: every review's tokens as integer ids in one memory-mapped array.

Tokenizing ~1M reviews takes minutes, so it is done once (in parallel) and cached. Ids are
*type ranks*: type 0 is the corpus' most frequent token, so a vocabulary of any size built from
the same counts maps ids with one lookup table (`EncodedCorpus.vocab_table`).

Directory layout:
    ids.npy          int32 [n_tokens]   type rank of every token, reviews concatenated
    offsets.npy      int64 [n_reviews+1] review i is ids[offsets[i]:offsets[i+1]]
    entity.npy       int32 [n_reviews]   index into entities.json
    ratings.npy      float32 [n_reviews] each review's rating, NaN when it has none (format 2)
    entities.json    list of entity ids, in order of first appearance
    types.json       token strings by rank; counts.npy their corpus frequencies
    meta.json        sources, tokenizer, counts; written last, so its presence means complete
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
from array import array
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from denoisesum.data.corpus import CorpusReader, Review
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.data.vocab import Vocab
from denoisesum.errors import InputError
from denoisesum.io import read_json, write_json
from denoisesum.progress import progress_bar

# 2: ratings.npy added (the opinion of candidate summaries); a format-1 cache is rebuilt
FORMAT = "denoisesum-encoded/2"
_worker_tokenizer: Tokenizer | None = None


def _init_worker(tokenizer: Tokenizer) -> None:
    global _worker_tokenizer
    _worker_tokenizer = tokenizer


def _tokenize_batch(texts: list[str]) -> list[list[str]]:
    assert _worker_tokenizer is not None
    return [_worker_tokenizer.tokenize(t) for t in texts]


def _batches(reviews: Iterable[Review], size: int) -> Iterator[list[Review]]:
    it = iter(reviews)
    while batch := list(islice(it, size)):
        yield batch


def source_fingerprint(paths: Iterable[Path]) -> list[dict]:
    return [
        {
            "path": str(Path(p).resolve()),
            "bytes": os.path.getsize(p),
            "mtime": int(os.path.getmtime(p)),
        }
        for p in paths
    ]


def content_fingerprint(paths: Iterable[Path]) -> list[dict]:
    """Name, size and SHA-256 of each file: the same corpus copied, moved or touched is still
    the same corpus (hashing reads about 400 MB/s, a second for Yelp's 136 MB; a file asked
    for again in the same process, unchanged, is not read again: `fit` asks twice)."""
    out = []
    for p in paths:
        stat = os.stat(p)
        sha = _sha256(str(Path(p).resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino)
        out.append({"file": Path(p).name, "bytes": stat.st_size, "sha256": sha})
    return out


@functools.lru_cache(maxsize=1024)
def _sha256(path: str, size: int, mtime_ns: int, inode: int) -> str:
    """A file's SHA-256, remembered by path, size, mtime and inode (any rewrite changes one)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def cache_matches(meta: dict[str, Any], paths: list[Path]) -> bool:
    """Whether a cache's meta.json is of these source files: by content (name, size, SHA-256),
    so a copied, moved or touched corpus is still found; caches written before contents were
    recorded match as they were made, on path, size and mtime."""
    if "content" in meta:
        return meta["content"] == content_fingerprint(paths)
    return meta.get("sources") == source_fingerprint(paths)


class RankedTokens:
    """Texts stored as frequency-ranked type ids (the layout above), loaded from a directory.

    Shared by the tokenized corpus here and the synthetic-pair cache of the trainer.
    """

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.meta = read_json(self.dir / "meta.json")
        self.ids = np.load(self.dir / "ids.npy", mmap_mode="r")
        self.offsets = np.load(self.dir / "offsets.npy")
        self.entity = np.load(self.dir / "entity.npy")
        self.counts = np.load(self.dir / "counts.npy")
        self.types: list[str] = read_json(self.dir / "types.json")
        self.entities: list[str] = read_json(self.dir / "entities.json")
        self.tokenizer = Tokenizer(**self.meta.get("tokenizer", {}))

    def build_vocab(self, max_size: int | None, min_count: int = 1) -> Vocab:
        return Vocab.from_counts(
            dict(zip(self.types, self.counts.tolist(), strict=True)),
            min_count=min_count,
            max_size=max_size,
            tokenizer=self.tokenizer,
        )

    def vocab_table(self, vocab: Vocab) -> np.ndarray:
        """int64 [n_types]: vocabulary id of every type rank (<unk> for types not in `vocab`)."""
        return np.asarray(vocab.encode(self.types), dtype=np.int64)


def build_directory(directory: Path, fill: Callable[[Path], dict[str, Any]]) -> None:
    """Make a cache directory: `fill` writes its files into a temporary sibling and returns the
    meta.json content; meta.json is written last and the directory swapped in whole, so a crash
    never leaves a cache that looks complete."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        meta = fill(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    write_json(tmp / "meta.json", meta)
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(tmp, directory)


class EncodedCorpus(RankedTokens):
    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @functools.cached_property
    def ratings(self) -> np.ndarray:
        """float32 [n_reviews]: each review's rating, NaN where it has none (or where the cache
        predates ratings.npy: such a cache is only read, never reused by `build`)."""
        path = self.dir / "ratings.npy"
        if path.exists():
            return np.load(path)
        return np.full(len(self), np.nan, dtype=np.float32)

    @classmethod
    def build(
        cls,
        reviews: CorpusReader,
        directory: str | Path,
        tokenizer: Tokenizer,
        workers: int = 1,
        total: int | None = None,
    ) -> EncodedCorpus:
        """Tokenize `reviews` into `directory`, reusing a complete cache of the same sources."""
        directory = Path(directory)
        if (directory / "meta.json").exists():
            meta = read_json(directory / "meta.json")
            if (
                cache_matches(meta, reviews.paths)
                and meta.get("tokenizer") == tokenizer.to_dict()
                and meta.get("format") == FORMAT
            ):
                return cls(directory)

        def fill(tmp: Path) -> dict[str, Any]:
            n_reviews, skipped = _encode_to(tmp, reviews, tokenizer, workers, total)
            if n_reviews == 0:  # an empty export or a mistyped glob: said as what it is
                why = f" ({skipped} bad record(s) skipped)" if skipped else ""
                raise InputError(
                    f"no reviews: the corpus has none to learn from{why}",
                    path=", ".join(map(str, reviews.paths)),
                )
            # "sources" stays: the noising fingerprint of pairs made from this cache hashes it
            return {
                "format": FORMAT,
                "sources": source_fingerprint(reviews.paths),
                "content": content_fingerprint(reviews.paths),
                "tokenizer": tokenizer.to_dict(),
                "reviews": n_reviews,
                "tokens": int(np.load(tmp / "offsets.npy")[-1]),
                "skipped_bad_records": skipped,
            }

        build_directory(directory, fill)
        return cls(directory)


def _encode_to(
    out: Path, reviews: CorpusReader, tokenizer: Tokenizer, workers: int, total: int | None
) -> tuple[int, int]:
    """First pass: provisional ids in order of appearance; then renumber by frequency rank."""
    type_id: dict[str, int] = {}
    entity_id: dict[str, int] = {}
    offsets, entity, ratings = array("q", [0]), array("i"), array("f")
    bar = progress_bar(total=total, unit=" reviews", desc="tokenizing", smoothing=0.05)
    with open(out / "raw.i32", "wb") as raw:
        pool = None
        if workers > 1:
            pool = get_context("spawn").Pool(workers, _init_worker, (tokenizer,))
        try:
            batches = _batches(reviews, 512)
            if pool is not None:
                pairs = _lockstep(batches, pool)
            else:
                pairs = ((b, [tokenizer.tokenize(r.text) for r in b]) for b in batches)
            for batch, token_lists in pairs:
                buf = array("i")
                for review, tokens in zip(batch, token_lists, strict=True):
                    buf.extend(type_id.setdefault(t, len(type_id)) for t in tokens)
                    offsets.append(offsets[-1] + len(tokens))
                    entity.append(entity_id.setdefault(review.entity_id, len(entity_id)))
                    ratings.append(math.nan if review.rating is None else review.rating)
                buf.tofile(raw)
                bar.update(len(batch))
        finally:
            if pool is not None:
                pool.terminate()
            bar.close()
    renumber_by_frequency(out, type_id)
    np.save(out / "offsets.npy", np.frombuffer(offsets, dtype=np.int64))
    np.save(out / "entity.npy", np.frombuffer(entity, dtype=np.int32))
    np.save(out / "ratings.npy", np.frombuffer(ratings, dtype=np.float32))
    write_json(out / "entities.json", list(entity_id))
    return len(entity), reviews.skipped.count


def _lockstep(batches: Iterator[list[Review]], pool) -> Iterator[tuple[list[Review], list]]:
    """Tokenize batches in the pool, a bounded number ahead, yielding them in input order."""
    pending: list = []
    for batch in batches:
        pending.append((batch, pool.apply_async(_tokenize_batch, ([r.text for r in batch],))))
        if len(pending) >= 8:
            batch0, result = pending.pop(0)
            yield batch0, result.get()
    for batch0, result in pending:
        yield batch0, result.get()


def renumber_by_frequency(out: Path, type_id: dict[str, int]) -> None:
    raw = np.fromfile(out / "raw.i32", dtype=np.int32)
    counts = np.bincount(raw, minlength=len(type_id))
    types = list(type_id)
    order = sorted(range(len(types)), key=lambda i: (-counts[i], types[i]))
    rank = np.empty(len(types), dtype=np.int32)
    rank[order] = np.arange(len(types), dtype=np.int32)
    np.save(out / "ids.npy", rank[raw] if len(raw) else raw)
    np.save(out / "counts.npy", counts[order].astype(np.int64))
    (out / "types.json").write_text(json.dumps([types[i] for i in order], ensure_ascii=False))
    os.unlink(out / "raw.i32")
