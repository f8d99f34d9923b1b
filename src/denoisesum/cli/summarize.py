"""Commands that summarize: summarize (files and streams, execution/) and serve (HTTP)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Annotated

import typer

from denoisesum.cli.app import app
from denoisesum.cli.options import (
    DEFAULT_CORPUS_OPTIONS,
    CorpusOptions,
    DeviceOption,
    ModelOption,
    SetOption,
    corpus_options_of,
    count_option,
    decoding_flags,
    summarize_settings,
    torch_device,
)
from denoisesum.errors import DenoiseSumError

InputArg = Annotated[
    str,
    typer.Argument(
        metavar="INPUT",
        help="Review-set file (JSONL: entity_id, reviews), a review corpus "
        "(.csv/.tsv/.parquet: one review per row, grouped by entity), "
        "or '-' for review-set JSONL on standard input.",
    ),
]
Output = Annotated[
    str,
    typer.Option(
        "--output",
        "-o",
        help="Prediction file to write, its format by its extension: "
        ".jsonl, .csv, .parquet, or .txt with --text ('-': "
        "standard output). Written batch by batch: rerunning the "
        "same command after a crash or kill continues it, skipping "
        "the entities already written.",
    ),
]
Overwrite = Annotated[
    bool,
    typer.Option(
        "--overwrite",
        help="Start the output over instead of continuing it (it is "
        "replaced when the first batch is written).",
    ),
]
Slice = Annotated[
    str,
    typer.Option(
        "--slice",
        help="Summarize all reviews, or only the complaints (reviews of at most "
        "3 stars) or the praise (at least 4): all, complaints, praise.",
    ),
]
Method = Annotated[
    str | None,
    typer.Option(
        help="opinions: every review read, the opinions reviewers share, each sentence "
        "attributed; denoisesum: the paper's abstractive summary of 8 reviews. Default: "
        "the model's.",
    ),
]
ByLength = Annotated[
    bool,
    typer.Option(
        "--by-length",
        help="Batch entities of similar input length: each window of 16 "
        "batches is decoded shortest first (and written in that "
        "order), so batches pad less.",
    ),
]
Bf16 = Annotated[
    bool,
    typer.Option(
        "--bf16",
        help="Compute in bfloat16: ~2x faster on CPUs with AVX512-BF16/AMX "
        "(on others: fp32, with a warning); beams may differ slightly.",
    ),
]
Shortlist = Annotated[
    int | None,
    typer.Option(
        min=0,
        help="Decode over the N most frequent words plus the input's words: cheaper "
        "output layers, may change summaries (0: all words; default: the "
        "model's setting, else 0).",
    ),
]
Raw = Annotated[
    bool,
    typer.Option("--raw", help="Write the tokenized form ('i ca n't'), not readable text."),
]
Explain = Annotated[
    bool,
    typer.Option(
        "--explain",
        help="Add the reviews supporting each summary sentence, with scores "
        "(JSONL: a 'support' object per entity).",
    ),
]
AsText = Annotated[
    bool,
    typer.Option(
        "--text",
        help="Write readable text (entity id, summary and, with --explain, the "
        "support of each sentence) instead of JSONL.",
    ),
]
Strict = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse (an error, before decoding) when a review set is one the "
        "model cannot read: no words, or most words unknown to it "
        "(another language). Without it such summaries are written with "
        "a 'warnings' field and a warning on standard error.",
    ),
]
Dask = Annotated[
    str | None,
    typer.Option(
        "--dask",
        metavar="N|ADDRESS",
        help="Decode on a Dask cluster: N worker processes on this machine, or a running "
        "scheduler's address (tcp://host:8786; every worker needs denoisesum and the "
        "model). The output is the same as without it.",
    ),
]


@app.command("summarize")
@corpus_options_of("entity_field", "text_field", "rating_field", "skip_bad")
@decoding_flags
def summarize_command(
    source: InputArg,
    model: ModelOption = None,
    output: Output = "-",
    overwrite: Overwrite = False,
    overrides: SetOption = None,
    device: DeviceOption = "auto",
    slice_: Slice = "all",
    method: Method = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Entities decoded together.")] = 8,
    by_length: ByLength = False,
    bf16: Bf16 = False,
    shortlist: Shortlist = None,
    raw: Raw = False,
    explain: Explain = False,
    as_text: AsText = False,
    strict: Strict = False,
    dask: Dask = None,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
    decoding: dict | None = None,
) -> None:
    """Summarize every entity's reviews with a trained DenoiseSum model; writes predictions
    (JSONL: entity_id, summary; reviews_read and reviews_total when the model chose which
    reviews to read: at most its read_reviews setting, by default the most central)."""
    from denoisesum.execution.bulk import Interrupted, run
    from denoisesum.execution.inputs import Source
    from denoisesum.execution.outputs import OutputOptions, output_format
    from denoisesum.io import check_output, writing
    from denoisesum.summarizer import SLICES, Summarizer

    if output != "-":
        check_output(output, [source])
    output_format(output, as_text)  # an unknown extension: before the model loads
    if dask is not None:
        from denoisesum.execution.cluster import parse_target

        parse_target(dask)
    if slice_ not in SLICES:
        raise DenoiseSumError(f"--slice {slice_!r}: must be one of {', '.join(SLICES)}")
    summarizer = Summarizer.from_pretrained(model, device=torch_device(device))
    sets = [*(overrides or []), *([f"shortlist={shortlist}"] if shortlist is not None else [])]
    summarizer.config = summarize_settings(summarizer.config, sets, decoding or {})
    summarizer.config.bf16 = summarizer.config.bf16 or bf16
    summarizer.method(method)  # an unknown method: before any work
    written_as = OutputOptions(
        slice_,
        method or summarizer.default_method,
        raw,
        explain,
        as_text,
        corpus_options.entity_field,
        corpus_options.text_field,
        corpus_options.rating_field,
    )
    reading = Source(source, corpus_options.fields(), corpus_options.skip_bad)
    try:
        with writing(output), _dask_cluster(dask, summarizer) as cluster:  # a full disk
            written, before = run(
                summarizer,
                reading,
                output,
                written_as,
                batch_size=batch_size,
                strict=strict,
                overwrite=overwrite,
                by_length=by_length,
                cluster=cluster,
            )
            sys.stdout.flush()
    except Interrupted as stop:
        typer.echo(f"\ninterrupted: {stop}", err=True)
        raise typer.Exit(130) from None
    if output != "-":
        kept = f" ({before} from before kept)" if before else ""
        typer.echo(f"{written} summaries -> {output}{kept}", err=True)


@contextlib.contextmanager
def _dask_cluster(target: str | None, summarizer):
    """--dask's cluster for the run (None without it), closed at the end."""
    if target is None:
        yield None
        return
    from denoisesum.execution.cluster import Cluster

    with Cluster.start(target, summarizer) as cluster:
        yield cluster


Host = Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every interface).")]
MaxReviewChars = Annotated[int, typer.Option(min=1, help="Characters per review, at most.")]
MaxSets = Annotated[int, typer.Option(min=1, help="Review sets per batch request, at most.")]
Timeout = Annotated[
    float,
    typer.Option(
        min=0.001,
        help="Seconds a request may wait and run; then 503 (still queued) or 504 (decoding).",
    ),
]
MaxBatch = Annotated[
    int,
    typer.Option(min=1, help="Review sets decoded together (concurrent requests share batches)."),
]
MaxPending = Annotated[
    int,
    typer.Option(
        min=1,
        help="Review sets waiting for the model, at most (at least --max-sets); more get 503.",
    ),
]
Threads = Annotated[
    int | None,
    typer.Option(
        min=1, help="torch threads per worker (default: torch's, shared among the workers)."
    ),
]
ServeWorkers = Annotated[
    int,
    typer.Option(
        min=1,
        max=64,
        help="Worker processes sharing the port and the loaded model (CPU; needs fork).",
    ),
]


@app.command("serve")
def serve_command(
    host: Host = "127.0.0.1",
    port: count_option(0, 65535, "Port to listen on.") = 8000,
    model: ModelOption = None,
    max_reviews: Annotated[int, typer.Option(min=1, help="Reviews per set, at most.")] = 100,
    max_review_chars: MaxReviewChars = 5000,
    max_sets: MaxSets = 16,
    timeout: Timeout = 60.0,
    max_batch: MaxBatch = 8,
    max_pending: MaxPending = 64,
    threads: Threads = None,
    workers: ServeWorkers = 1,
    device: DeviceOption = "auto",
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve summaries over HTTP: a JSON API (/v1/summarize, /docs) and a web page (/)."""
    # without the serve extra: main() says "denoisesum serve needs the serve extra: ..."
    from denoisesum.serving import ServiceLimits, create_app
    from denoisesum.serving.server import serve  # uvicorn, with read timeouts
    from denoisesum.summarizer import DEFAULT_MODEL_DIR, Summarizer

    limits = ServiceLimits(
        max_reviews=max_reviews,
        max_review_chars=max_review_chars,
        max_sets=max_sets,
        timeout_s=timeout,
        max_batch_sets=max_batch,
        max_pending_sets=max(max_pending, max_sets),
    )
    from denoisesum.config import check

    check(limits)
    from uvicorn.config import LOG_LEVELS  # what serve() takes; checked before the model loads

    if log_level not in LOG_LEVELS:
        raise DenoiseSumError(f"--log-level {log_level!r} must be one of {', '.join(LOG_LEVELS)}")
    if model is None and not DEFAULT_MODEL_DIR.is_dir():
        raise DenoiseSumError(
            f"no default model is installed (looked for {DEFAULT_MODEL_DIR}); "
            "pass a model directory: denoisesum serve --model DIR"
        )
    if workers > 1 and not hasattr(os, "fork"):
        raise DenoiseSumError("--workers above 1 needs a system that forks processes")
    if threads is not None and workers == 1:
        import torch

        torch.set_num_threads(threads)
    summarizer = Summarizer.from_pretrained(model, device=torch_device(device))
    if workers > 1 and summarizer.device.type != "cpu":
        raise DenoiseSumError(
            f"--workers {workers}: worker processes run on the CPU; on {summarizer.device.type} "
            "serve with one (--workers 1) or pass --device cpu"
        )
    service = create_app(summarizer, limits)
    many = f" in {workers} worker processes" if workers > 1 else ""
    typer.echo(
        f"model {summarizer.path}; serving on http://{host}:{port}/{many} (API: /docs); "
        "Ctrl-C stops",
        err=True,
    )
    serve(service, host=host, port=port, log_level=log_level, workers=workers, threads=threads)
