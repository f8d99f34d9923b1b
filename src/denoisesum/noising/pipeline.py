"""`denoisesum synthesize`: the corpus-scale noising job, run as Dask tasks over fixed shards.

Layout of the output directory:
    plan.json        settings, candidate report; written last during preparation
    plan.npz         candidate review and N of every pair; idf.npy, allowed.npy
    chunks.json.gz   chunk inventory and templates, from a sample of candidate-like reviews
    shards/shard-NNNNN.jsonl.gz   pairs [k*shard_size, (k+1)*shard_size), written atomically
    manifest.json    counts, settings, per-shard hashes, timings, peak memory; written at the end

Determinism: pair k draws its randomness from streams seeded by (seed, k) alone, the shards are
fixed, and every worker runs torch on one thread, so the output is byte-identical for any number
of workers. Resume: a rerun keeps every finished shard and computes only the missing ones.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import resource
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from denoisesum.config import Range, at_least, between, check, check_choice, config_from_dict
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.synthetic import pair_record, shard_path
from denoisesum.errors import ConfigError, DenoiseSumError
from denoisesum.io import atomic_write, read_json, write_json
from denoisesum.noising.candidates import PRESETS, CandidateConfig, preset
from denoisesum.noising.chunks import Chunker, ChunkInventory, chunk_noise
from denoisesum.noising.document_noise import most_similar
from denoisesum.noising.plan import (
    Plan,
    best_supported,
    document_frequency,
    eligible_candidates,
    entity_groups,
    fitted_lengths,
    make_plan,
    rating_balance_weights,
    star_classes,
)
from denoisesum.noising.token_noise import lm_nucleus_sample, token_noise
from denoisesum.progress import progress_bar
from denoisesum.text import idf_weights


@dataclass
class NoiseConfig:
    p_replace: float = 0.8  # token replacement probability p_R
    top_p: float = 0.9  # nucleus threshold p_N
    p_remove_chunk: float = 0.4
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "p_replace": between(0, 1),
        "top_p": Range(0, 1, low_open=True),
        "p_remove_chunk": between(0, 1),
    }


DOCUMENT_NOISE = ("similar", "random")


@dataclass
class SynthesisConfig:
    pairs: int = 100_000  # the paper's Yelp size
    preset: str = "yelp"
    candidates: CandidateConfig | None = None  # overrides the preset when given
    n_mean: float = 8.0  # N ~ Normal(n_mean, n_std), at least 1; Yelp dev: 8 reviews each
    n_std: float = 0.0
    noise: NoiseConfig = field(default_factory=NoiseConfig)
    inventory_reviews: int = 5_000  # candidate-like reviews parsed for chunks and templates
    shard_size: int = 500
    lm_batch: int = 32  # candidates per LM forward pass
    seed: int = 1
    # keep only this share of the eligible candidates, those best supported by their entity's
    # other reviews (plan.best_supported; not in the paper); 1.0: all of them, as the paper
    central_fraction: float = 1.0
    # which of the entity's other reviews are the document noise: "similar", the N most similar
    # to the candidate (the paper); "random", N of them at random (not in the paper: at
    # inference the reviews are not chosen to resemble any summary)
    document_noise: str = "similar"
    # draw candidate summaries with weights inverse to their star class's frequency (not in the
    # paper): an opinion-conditioned summarizer needs negative summaries to learn from, and most
    # Yelp candidates are 4-5 stars; False: uniformly, as the paper
    balance_ratings: bool = False
    # when fewer reviews pass the candidate constraints than `pairs` asks for, widen their
    # length bounds to the corpus's own lengths (plan.fitted_lengths: from its 10th to its 75th
    # percentile, never narrower than the constraints' own bounds, nor longer than twice their
    # max_tokens); False: the constraints as given, as the paper
    fit_lengths: bool = False
    # the most pairs made from one candidate summary, each with its own token and chunk noise,
    # when fewer candidates qualify than `pairs` asks for; 1: one pair each, as the paper (a
    # small corpus then gives as many pairs as it has candidates)
    uses_per_candidate: int = 1
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "pairs": at_least(1),
        "uses_per_candidate": at_least(1, "1: each candidate makes one pair"),
        "n_mean": at_least(1),
        "n_std": at_least(0),
        "inventory_reviews": at_least(1),
        "shard_size": at_least(1),
        "lm_batch": at_least(1),
        "seed": at_least(0),
        "central_fraction": Range(0, 1, low_open=True),
    }

    def validate(self) -> None:
        """The choices (each number's range: BOUNDS); the candidate preset is checked even when
        `candidates` overrides it (its name is reported)."""
        check_choice("document_noise", self.document_noise, DOCUMENT_NOISE)
        check_choice("preset", self.preset, PRESETS)

    def candidate_config(self) -> CandidateConfig:
        return self.candidates or preset(self.preset)


DEFAULT_SYNTHESIS = SynthesisConfig()
# the settings that act only when fewer candidates qualify than pairs are asked for
SMALL_CORPUS_SETTINGS = ("fit_lengths", "uses_per_candidate")
# SynthesisConfig fields added after pair directories were first written: the noising fingerprint
# leaves each out while it is at its default (which does what the code did before it), so those
# directories still match. A new field goes here.
ADDED_SETTINGS = (
    "central_fraction",
    "document_noise",
    "balance_ratings",
    "fit_lengths",
    "uses_per_candidate",
)


@dataclass(frozen=True)
class Job:
    """Everything a worker needs, as paths and plain values (cheap to send)."""

    out_dir: str
    corpus_dir: str
    lm_dir: str
    config: dict[str, Any]


# --------------------------------------------------------------------------- worker side

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


# --------------------------------------------------------------------------- driver side


def _fingerprint(
    corpus: EncodedCorpus, lm_dir: Path, cfg: SynthesisConfig, excluded: list[str]
) -> str:
    from denoisesum.models.store import WEIGHTS  # store loads torch: only where the LM is read

    settings = dataclasses.asdict(cfg)
    for name in ADDED_SETTINGS:  # at its default, as if the setting did not exist
        if settings[name] == getattr(DEFAULT_SYNTHESIS, name):
            del settings[name]
    digest = hashlib.sha256()
    digest.update(
        json.dumps([corpus.meta["sources"], settings, sorted(excluded)], sort_keys=True).encode()
    )
    digest.update((lm_dir / WEIGHTS).read_bytes())
    return digest.hexdigest()


def prepare(
    corpus: EncodedCorpus,
    out: Path,
    lm_dir: Path,
    cfg: SynthesisConfig,
    excluded: list[str],
    chunker: Chunker | None = None,
) -> dict[str, Any]:
    """Write the plan, IDF table and chunk inventory (or check that the existing ones match)."""
    fingerprint = _fingerprint(corpus, lm_dir, cfg, excluded)
    if (out / "plan.json").exists():
        prepared = read_json(out / "plan.json")
        # a plan made before the small-corpus settings existed that made every pair asked for:
        # they would have changed nothing in it
        small = {name: getattr(DEFAULT_SYNTHESIS, name) for name in SMALL_CORPUS_SETTINGS}
        before = dataclasses.replace(cfg, **small)
        if (
            prepared["fingerprint"] != fingerprint
            and prepared["pairs"] >= cfg.pairs
            and prepared["fingerprint"] == _fingerprint(corpus, lm_dir, before, excluded)
        ):
            return prepared
        if prepared["fingerprint"] != fingerprint:
            raise DenoiseSumError(
                f"{out} holds a run with other inputs or settings; use a new output directory"
            )
        return prepared
    out.mkdir(parents=True, exist_ok=True)
    excluded_set = set(excluded)
    allowed = ~np.array([e in excluded_set for e in corpus.entities])[corpus.entity]
    constraints = cfg.candidate_config()
    eligible, report = eligible_candidates(corpus, constraints, allowed)
    if cfg.fit_lengths and len(eligible) < cfg.pairs:
        fitted = fitted_lengths(corpus.lengths()[allowed], constraints)
        if fitted != constraints:
            eligible, report = eligible_candidates(corpus, fitted, allowed)
            report["fitted_lengths"] = {
                "min_tokens": fitted.min_tokens,
                "max_tokens": fitted.max_tokens,
                "given": [constraints.min_tokens, constraints.max_tokens],
            }
    if len(eligible) == 0:
        raise DenoiseSumError(f"no review passes the candidate constraints ({report})")
    idf = idf_weights(document_frequency(corpus, allowed), int(allowed.sum()))
    if cfg.central_fraction < 1:
        eligible, lowest = best_supported(
            corpus, eligible, allowed, idf, round(cfg.n_mean), cfg.central_fraction
        )
        report["central"] = len(eligible)
        report["central_lowest_support"] = round(lowest, 4)
    weights = rating_balance_weights(corpus.ratings[eligible]) if cfg.balance_ratings else None
    plan = make_plan(
        eligible, cfg.pairs, cfg.n_mean, cfg.n_std, cfg.seed, weights, cfg.uses_per_candidate
    )
    if cfg.uses_per_candidate > 1:
        report["pairs_per_candidate"] = round(len(plan.candidates) / len(eligible), 2)
    if cfg.balance_ratings:
        chosen = np.bincount(star_classes(corpus.ratings[plan.candidates]), minlength=6)
        report["chosen_by_stars"] = {
            ("none" if k == 0 else str(k)): int(chosen[k]) for k in range(6)
        }
    plan.save(out / "plan.npz")
    np.save(out / "allowed.npy", allowed)
    np.save(out / "idf.npy", idf)
    _build_inventory(corpus, eligible, cfg, chunker or Chunker()).save(out / "chunks.json.gz")
    prepared = {
        "fingerprint": fingerprint,
        "pairs": len(plan.candidates),
        "candidates": report,
        "excluded_entities": len(excluded_set),
        "excluded_reviews": int((~allowed).sum()),
    }
    write_json(out / "plan.json", prepared)
    return prepared


def _build_inventory(
    corpus: EncodedCorpus, eligible: np.ndarray, cfg: SynthesisConfig, chunker: Chunker
) -> ChunkInventory:
    rng = np.random.default_rng([cfg.seed, 2])
    sample = rng.choice(eligible, size=min(cfg.inventory_reviews, len(eligible)), replace=False)
    tokens = [[corpus.types[t] for t in review_ids(corpus, int(r))] for r in np.sort(sample)]
    return ChunkInventory.build(tokens, chunker.chunk_many(tokens))


def run_shards(
    job: Job,
    shards: list[int],
    total_pairs: int,
    done_pairs: int,
    scheduler: str | None,
    workers: int,
    progress: bool,
) -> tuple[list, dict]:
    """Run shards on Dask (or inline when workers == 0 and no scheduler); returns results."""
    bar = progress_bar(
        total=total_pairs,
        initial=done_pairs,
        unit=" pairs",
        desc="synthesize",
        enabled=progress,
        smoothing=0.1,
    )
    results, worker_rss = [], {}
    try:
        if scheduler is None and workers == 0:
            for shard in shards:
                results.append(run_shard(shard, job))
                bar.update(results[-1]["pairs"])
            worker_rss["inline"] = _max_rss_mb()
            return results, worker_rss
        from dask.distributed import Client, LocalCluster, as_completed

        cluster = (
            None
            if scheduler
            else LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
        )
        with Client(scheduler or cluster) as client:
            futures = client.map(run_shard, shards, job=job, pure=False)
            for future in as_completed(futures):
                results.append(future.result())
                bar.update(results[-1]["pairs"])
            worker_rss = client.run(_max_rss_mb)
        if cluster is not None:
            cluster.close()
        return results, worker_rss
    finally:
        bar.close()


def _max_rss_mb() -> float:
    """This process's peak resident memory (VmHWM), in MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthesize(
    corpus: EncodedCorpus,
    out_dir: str | Path,
    lm_dir: str | Path,
    cfg: SynthesisConfig,
    excluded: list[str] = (),
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Make (or finish making) the synthetic pairs in `out_dir`; returns the manifest."""
    check(cfg)  # a config made in Python has not been through config.build
    if workers is not None and workers < 0:  # a pool of -2 processes waits forever
        raise ConfigError(f"workers={workers} must be at least 0 (0: in this process)")
    out, lm_dir = Path(out_dir), Path(lm_dir)
    started = time.perf_counter()
    prepared = prepare(corpus, out, lm_dir, cfg, list(excluded))
    prepare_seconds = time.perf_counter() - started
    n_shards = -(-prepared["pairs"] // cfg.shard_size)
    todo = [s for s in range(n_shards) if not shard_path(out, s).exists()]
    done_pairs = prepared["pairs"] - sum(
        min(cfg.shard_size, prepared["pairs"] - s * cfg.shard_size) for s in todo
    )
    job = Job(str(out), str(corpus.dir), str(lm_dir), dataclasses.asdict(cfg))
    workers = os.cpu_count() or 1 if workers is None else workers
    results, worker_rss = run_shards(
        job, todo, prepared["pairs"], done_pairs, scheduler, workers, progress
    )
    manifest = _write_manifest(
        out,
        cfg,
        prepared,
        results,
        n_shards,
        worker_rss,
        prepare_seconds,
        time.perf_counter() - started,
    )
    if (warning := shortfall(manifest)) is not None:
        print(f"warning: {warning}", file=sys.stderr)
    return manifest


def shortfall(manifest: dict[str, Any]) -> str | None:
    """Why fewer pairs were made than asked for (each pair needs its own candidate summary, so
    at most as many as reviews qualify), or None when all were made."""
    asked, made, found = (
        manifest["settings"]["pairs"],
        manifest["pairs"],
        manifest["candidate_filter"],
    )
    if made >= asked:
        return None
    rejected = ", ".join(
        f"{name.removeprefix('rejected_').replace('_', ' ')} {count:,}"
        for name, count in found.items()
        if name.startswith("rejected_") and count
    )
    uses = manifest["settings"].get("uses_per_candidate", 1)
    reuse = (
        f", each used for at most {uses} pairs"
        if uses > 1
        else "; --set synthesize.uses_per_candidate=N makes up to N pairs of each"
    )
    return (
        f"{made:,} pairs made of the {asked:,} asked for: only {found['eligible']:,} of "
        f"{found['reviews']:,} reviews qualify as candidate summaries (rejected for "
        f"{rejected or 'nothing'}){reuse}; loosen the candidate constraints (preset, "
        "candidates.*, fit_lengths) or give more reviews"
    )


def _write_manifest(
    out: Path,
    cfg: SynthesisConfig,
    prepared: dict[str, Any],
    results: list,
    n_shards: int,
    worker_rss: dict,
    prepare_seconds: float,
    seconds: float,
) -> dict[str, Any]:
    timings: dict[str, float] = defaultdict(float)
    for result in results:
        for stage, value in result["timings"].items():
            timings[stage] += value
    shards = []
    for s in range(n_shards):
        data = shard_path(out, s).read_bytes()
        shards.append(
            {
                "file": shard_path(out, s).relative_to(out).as_posix(),
                "pairs": gzip.decompress(data).count(b"\n"),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    manifest = {
        "format": "denoisesum-synthetic/1",
        "pairs": sum(s["pairs"] for s in shards),
        "settings": dataclasses.asdict(cfg),
        "candidate_filter": prepared["candidates"],
        "excluded_entities": prepared["excluded_entities"],
        "short_document_noise_pairs_this_run": sum(r["short_document_noise"] for r in results),
        "shards": shards,
        "this_run": {
            "shards_computed": len(results),
            "wall_seconds": round(seconds, 1),
            "prepare_seconds": round(prepare_seconds, 1),
            "worker_cpu_seconds_by_stage": {k: round(v, 1) for k, v in timings.items()},
            "peak_rss_mb": {
                "driver": round(_max_rss_mb(), 1),
                **{str(k): round(v, 1) for k, v in worker_rss.items()},
            },
        },
    }
    write_json(out / "manifest.json", manifest)
    return manifest
