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

This module is the driver (the plan, the schedule of shards, the manifest); the settings are in
config.py, the work of one shard, in every worker, in shard.py.
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
from pathlib import Path
from typing import Any

import numpy as np

from denoisesum.config import check
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.synthetic import shard_path
from denoisesum.errors import ConfigError, DenoiseSumError
from denoisesum.io import read_json, write_json
from denoisesum.noising.chunks import Chunker, ChunkInventory
from denoisesum.noising.config import SynthesisConfig
from denoisesum.noising.plan import (
    best_supported,
    document_frequency,
    eligible_candidates,
    fitted_lengths,
    make_plan,
    rating_balance_weights,
    star_classes,
)
from denoisesum.noising.shard import Job, review_ids, run_shard
from denoisesum.progress import progress_bar
from denoisesum.text import idf_weights

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
