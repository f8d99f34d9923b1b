"""The worker side of `denoisesum synthesize`: one shard of pairs made and written by one process
(a Dask task, or the driver itself), from the corpus, LM and plan that pipeline.prepare wrote and
each worker loads once. Apart from pipeline.py (the driver: the plan, the schedule, the manifest)
because this is what runs in every worker, with torch on one thread."""

from __future__ import annotations

import gzip
import json
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from denoisesum.config import config_from_dict
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.synthetic import pair_record, shard_path
from denoisesum.io import atomic_write
from denoisesum.noising.chunks import Chunker, ChunkInventory, chunk_noise
from denoisesum.noising.config import SynthesisConfig
from denoisesum.noising.document_noise import most_similar
from denoisesum.noising.plan import (
    Plan,
    entity_groups,
)
from denoisesum.noising.token_noise import lm_nucleus_sample, token_noise


@dataclass(frozen=True)
class Job:
    """Everything a worker needs, as paths and plain values (cheap to send)."""

    out_dir: str
    corpus_dir: str
    lm_dir: str
    config: dict[str, Any]


_RESOURCES: dict[tuple[str, str, str], dict[str, Any]] = {}


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep and reuse freed memory instead of handing it back to the OS.

    Every LM batch allocates large temporaries (the per-position distributions of 32 candidates
    over 30k words are hundreds of MB). By default glibc maps each one afresh and unmaps it when
    freed, so every batch pays page faults on all of it: a 100k-pair run spent 1,508 of its 5,360
    CPU seconds in the kernel (866M minor faults). Serving allocations under 1 GiB from the heap
    and never trimming it made shards 27% faster, with a higher but still flat peak memory
    (docs/results/noising.md). Returns False where the C library is not glibc (nothing done).
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3  # glibc's malloc.h
    return all(
        [
            mallopt(m_mmap_threshold, 1 << 30),
            mallopt(m_trim_threshold, (1 << 31) - 1),
            mallopt(m_top_pad, 1 << 28),
        ]
    )


def _resources(job: Job) -> dict[str, Any]:
    """Load the corpus, LM, spaCy and plan once per worker process."""
    key = (job.out_dir, job.corpus_dir, job.lm_dir)
    if key not in _RESOURCES:
        from denoisesum.models.store import load_bilm

        torch.set_num_threads(1)  # same arithmetic in every worker: byte-identical output
        keep_freed_memory()
        out = Path(job.out_dir)
        corpus = EncodedCorpus(job.corpus_dir)
        model, vocab = load_bilm(job.lm_dir)
        groups = entity_groups(corpus, np.flatnonzero(np.load(out / "allowed.npy")))
        _RESOURCES[key] = {
            "corpus": corpus,
            "model": model,
            "vocab": vocab,
            "table": torch.from_numpy(corpus.vocab_table(vocab)),
            "plan": Plan.load(out / "plan.npz"),
            "idf": np.load(out / "idf.npy"),
            "inventory": ChunkInventory.load(out / "chunks.json.gz"),
            "chunker": Chunker(),
            "entity_reviews": {int(corpus.entity[g[0]]): g for g in groups},
        }
    return _RESOURCES[key]


def review_ids(corpus: EncodedCorpus, review: int) -> np.ndarray:
    return np.asarray(corpus.ids[corpus.offsets[review] : corpus.offsets[review + 1]])


def run_shard(shard: int, job: Job) -> dict[str, Any]:
    """Make the pairs of one shard and write its file; returns counts and stage timings."""
    res = _resources(job)
    cfg = config_from_dict(SynthesisConfig, job.config)
    corpus, plan = res["corpus"], res["plan"]
    size = cfg.shard_size
    pair_ids = range(shard * size, min((shard + 1) * size, len(plan.candidates)))
    timings: dict[str, float] = defaultdict(float)
    type_ids = [review_ids(corpus, int(plan.candidates[k])) for k in pair_ids]
    tokens = [[corpus.types[t] for t in ids] for ids in type_ids]

    start = time.perf_counter()
    parses = res["chunker"].chunk_many(tokens)
    timings["parse"] += time.perf_counter() - start
    records = []
    for begin in range(0, len(type_ids), cfg.lm_batch):
        batch = range(begin, min(begin + cfg.lm_batch, len(type_ids)))
        start = time.perf_counter()
        contexts = _lm_contexts(res, [type_ids[i] for i in batch])
        timings["lm"] += time.perf_counter() - start
        for row, i in enumerate(batch):
            records.append(
                _make_pair(
                    res,
                    cfg,
                    pair_ids[i],
                    type_ids[i],
                    tokens[i],
                    parses[i],
                    contexts[row, : len(type_ids[i])],
                    timings,
                )
            )
    start = time.perf_counter()
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    with atomic_write(shard_path(job.out_dir, shard), "wb") as handle:
        handle.write(gzip.compress(data, compresslevel=6, mtime=0))
    timings["write"] += time.perf_counter() - start
    return {
        "shard": shard,
        "pairs": len(records),
        "timings": dict(timings),
        "short_document_noise": sum(r["document_noise_short"] for r in records),
    }


@torch.no_grad()
def _lm_contexts(res: dict[str, Any], batch: list[np.ndarray]) -> torch.Tensor:
    """The BiLM's two-sided context of every word of a batch of candidates: [B, L, P]."""
    lengths = torch.tensor([len(ids) for ids in batch])
    ids = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
    for row, type_ids in enumerate(batch):
        ids[row, : len(type_ids)] = res["table"][torch.from_numpy(type_ids.astype(np.int64))]
    return res["model"].contexts(ids, lengths)


def _make_pair(
    res: dict[str, Any],
    cfg: SynthesisConfig,
    pair_id: int,
    type_ids: np.ndarray,
    tokens: list[str],
    parse,
    contexts: torch.Tensor,
    timings: dict[str, float],
) -> dict[str, Any]:
    corpus, plan, vocab = res["corpus"], res["plan"], res["vocab"]
    n = int(plan.n[pair_id])
    rng = np.random.default_rng([cfg.seed, 1, pair_id])
    generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + pair_id)
    start = time.perf_counter()
    ids = res["table"][torch.from_numpy(type_ids.astype(np.int64))]
    samples = lm_nucleus_sample(res["model"].head, contexts, cfg.noise.top_p, n, generator)
    noisy = token_noise(ids, samples, cfg.noise.p_replace, generator)
    segment = []
    for copy in noisy.tolist():
        # unchanged positions keep the original word, even one outside the vocabulary
        words = [
            w if new == old else vocab.tokens[new]
            for w, new, old in zip(tokens, copy, ids.tolist(), strict=True)
        ]
        placed = chunk_noise(words, parse, res["inventory"], cfg.noise.p_remove_chunk, rng)
        segment.append(" ".join(t for chunk in placed for t in chunk.tokens))
    timings["segment_noise"] += time.perf_counter() - start

    start = time.perf_counter()
    review = int(plan.candidates[pair_id])
    entity = int(corpus.entity[review])
    siblings = res["entity_reviews"][entity]
    others = [review_ids(corpus, int(r)) for r in siblings]
    position = int(np.flatnonzero(siblings == review)[0])
    best = _document_noise(cfg, pair_id, type_ids, others, position, n, res["idf"])
    document = [" ".join(corpus.types[t] for t in others[i]) for i in best]
    timings["retrieval"] += time.perf_counter() - start
    rating = float(corpus.ratings[review])  # the summary's opinion: the candidate's stars
    return pair_record(
        pair_id,
        corpus.entities[entity],
        tokens,
        segment,
        document,
        n=n,
        document_noise_short=len(document) < n,
        candidate_review=review,
        rating=None if np.isnan(rating) else rating,
    )


def _document_noise(
    cfg: SynthesisConfig,
    pair_id: int,
    type_ids: np.ndarray,
    others: list[np.ndarray],
    position: int,
    n: int,
    idf: np.ndarray,
) -> list[int]:
    """Indices into `others` (the entity's reviews; `position` is the candidate's own) of the
    pair's document noise, by cfg.document_noise."""
    if cfg.document_noise == "similar":
        return most_similar(type_ids, others, position, n, idf)
    pool = [i for i in range(len(others)) if i != position]
    # its own stream, so the segment noise stays that of the "similar" pairs
    rng = np.random.default_rng([cfg.seed, 2, pair_id])
    return rng.choice(pool, size=min(n, len(pool)), replace=False).tolist() if pool else []
