"""Commands that train: train-lm, cloze, synthesize, train, fit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from denoisesum.cli.app import app
from denoisesum.cli.options import (
    DEFAULT_CORPUS_OPTIONS,
    ConfigFile,
    CorpusArg,
    CorpusCache,
    CorpusOptions,
    MaxMinutes,
    MaxSteps,
    Workers,
    check_output_dir,
    config_overrides,
    corpus_options_of,
    encode_corpus,
    load_settings,
    resume_option,
    say,
    torch_device,
    with_flags,
)
from denoisesum.errors import DenoiseSumError


def fit_trainer(trainer):
    """Run a trainer; on Ctrl-C (it has saved a checkpoint) say how to continue."""
    try:
        return trainer.fit()
    except KeyboardInterrupt:
        if trainer.dist.is_main:
            typer.echo(
                f"\ninterrupted at step {trainer.state['step']}; checkpoint saved. "
                "Continue with the same command and --resume.",
                err=True,
            )
        raise typer.Exit(130) from None


@app.command("train-lm")
@corpus_options_of()
def train_lm(
    corpus: CorpusArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Model directory.")],
    config: ConfigFile = None,
    overrides: config_overrides("train.lr=0.001") = None,
    resume: resume_option("output directory") = False,
    max_minutes: MaxMinutes = None,
    max_steps: MaxSteps = None,
    cache: CorpusCache = None,
    workers: Workers = 2,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Train the bidirectional cloze language model used by segment noising."""
    check_output_dir(output, cache or output / "encoded")
    from denoisesum.training import distributed
    from denoisesum.training.lm import LMRunConfig, LMTrainer

    flags = {"train.max_minutes": max_minutes, "train.max_steps": max_steps}
    cfg = load_settings(LMRunConfig, config, with_flags(overrides, flags))
    reader = corpus_options.reader(corpus)
    with distributed.setup().main_first():  # under torchrun: rank 0 tokenizes, the others reuse
        encoded = encode_corpus(reader, cache or output / "encoded", workers)
    trainer = LMTrainer(encoded, output, cfg, resume=resume)
    if trainer.dist.is_main:
        typer.echo(
            f"{encoded.n_tokens:,} tokens, vocabulary {len(trainer.vocab):,}, "
            f"{len(trainer.train_segments):,} training segments; starting at step "
            f"{trainer.state['step']}",
            err=True,
        )
    summary = fit_trainer(trainer)
    if not trainer.dist.is_main:
        return
    held = summary["heldout"]
    quality = (
        f"held-out perplexity {held['ppl']:.2f} over {held['tokens']:,} tokens"
        if held["tokens"]
        else "no held-out reviews (train.heldout_percent = 0)"
    )
    typer.echo(
        f"{quality}; {summary['tokens_per_second']:.0f} training tokens/s; model in {output}"
    )


@app.command()
def cloze(
    model: Annotated[Path, typer.Argument(help="A BiLM model directory.")],
    text: Annotated[str, typer.Argument(help="Text with '_' where words are to be guessed.")],
    top: Annotated[int, typer.Option(help="Candidates to show per blank.")] = 5,
) -> None:
    """Show the language model's top guesses for each '_' in a sentence."""
    from denoisesum.errors import ConfigError
    from denoisesum.inference.cloze import fill_blanks
    from denoisesum.models.store import load_bilm

    try:
        filled = fill_blanks(*load_bilm(model), text, top)
    except ConfigError as exc:
        raise ConfigError(f"--{exc.key} {exc.reason}" if exc.key else str(exc)) from None
    for position, guesses in filled:
        shown = ", ".join(f"{w} ({p:.2f})" for w, p in guesses)
        typer.echo(f"_{position}: {shown}")


@app.command()
@corpus_options_of()
def synthesize(
    corpus: CorpusArg,
    lm: Annotated[Path, typer.Option(help="Trained BiLM directory (train-lm).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output directory.")],
    preset: Annotated[
        str | None, typer.Option(help="Candidate constraints: yelp, rt or generic.")
    ] = None,
    pairs: Annotated[int | None, typer.Option(help="How many pairs to make.")] = None,
    dev: Annotated[
        Path | None,
        typer.Option(help="Review-set file whose reviews-per-entity set N's mean and std."),
    ] = None,
    n_mean: Annotated[float | None, typer.Option(help="Mean of N.")] = None,
    n_std: Annotated[float | None, typer.Option(help="Std of N.")] = None,
    config: ConfigFile = None,
    overrides: config_overrides("noise.top_p=0.9") = None,
    exclude_entities: Annotated[
        Path | None, typer.Option(help="File of entity ids (one per line) to leave out.")
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Address of a running Dask scheduler (default: a local cluster)."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Local Dask workers (default: one per core; 0 runs in-process)."),
    ] = None,
    cache: CorpusCache = None,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Make (noisy reviews, summary) training pairs by segment and document noising."""
    check_output_dir(output, cache or output / "encoded")
    from denoisesum.io import require_file
    from denoisesum.models.store import load_bilm
    from denoisesum.noising.config import SynthesisConfig
    from denoisesum.noising.pipeline import synthesize as run
    from denoisesum.noising.plan import read_entity_list, review_set_sizes

    extra = list(overrides or [])
    if dev is not None:
        mean, std = review_set_sizes(require_file(dev, field="--dev"))
        extra += [f"n_mean={mean}", f"n_std={std}"]
    flags = {"preset": preset and f'"{preset}"', "pairs": pairs, "n_mean": n_mean, "n_std": n_std}
    cfg = load_settings(SynthesisConfig, config, with_flags(extra, flags))
    if workers is not None and workers < 0:  # a pool of -2 processes waits forever
        raise DenoiseSumError(f"--workers {workers} must be at least 0 (0: in this process)")
    excluded = (
        read_entity_list(require_file(exclude_entities, field="--exclude-entities"))
        if exclude_entities
        else []
    )
    load_bilm(lm)  # a missing or damaged LM: an error now, not after tokenizing the corpus
    reader = corpus_options.reader(corpus)
    encoded = encode_corpus(
        reader, cache or output / "encoded", 2 if workers is None else max(workers, 1)
    )
    try:
        manifest = run(encoded, output, lm, cfg, excluded, scheduler, workers)
    except KeyboardInterrupt:
        typer.echo(
            "\ninterrupted; finished shards are kept. Run the same command again to make the rest.",
            err=True,
        )
        raise typer.Exit(130) from None
    report = manifest["candidate_filter"]
    typer.echo(
        f"candidates: {report['eligible']:,} of {report['reviews']:,} reviews pass "
        f"the '{cfg.preset}' constraints ({report})"
    )
    run_info = manifest["this_run"]
    typer.echo(
        f"{manifest['pairs']:,} pairs in {output} ({run_info['shards_computed']} shards "
        f"made in {run_info['wall_seconds']:.0f} s)"
    )


@app.command("train")
def train_command(
    pairs: Annotated[
        Path, typer.Argument(help="Directory of synthetic pairs (denoisesum synthesize output).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory.")],
    config: ConfigFile = None,
    overrides: config_overrides("model.copy=false") = None,
    topics: Annotated[
        Path | None,
        typer.Option(help="Topic model directory (denoisesum topics) for the discriminator."),
    ] = None,
    resume: resume_option("run directory") = False,
    max_steps: MaxSteps = None,
    max_minutes: MaxMinutes = None,
    vocab: Annotated[
        Path | None,
        typer.Option(help="Use this vocab.json instead of building one from the pairs."),
    ] = None,
    cache: Annotated[
        Path | None, typer.Option(help="Encoded-pairs cache (default: RUN_DIR/data).")
    ] = None,
) -> None:
    """Train the DenoiseSum summarizer on synthetic pairs."""
    check_output_dir(output)
    if cache is not None:
        check_output_dir(cache)
    from denoisesum.data.vocab import Vocab
    from denoisesum.io import require_file
    from denoisesum.topics import load_topics
    from denoisesum.training.denoiser import SummarizerTrainer
    from denoisesum.training.denoiser_config import SummarizerRunConfig

    flags = {
        "train.max_steps": max_steps,
        "train.max_minutes": max_minutes,
        "data.topics": topics and json.dumps(str(topics)),
    }
    cfg = load_settings(SummarizerRunConfig, config, with_flags(overrides, flags))
    if cfg.model.discriminator and cfg.data.topics:
        load_topics(cfg.data.topics)  # a bad topic model: an error now, not after the caches
    if (pairs / "shards").is_dir() and not (pairs / "manifest.json").exists():
        typer.echo(
            f"note: {pairs} has no manifest.json (synthesis unfinished?); training on the "
            "shards present",
            err=True,
        )
    vocab_given = Vocab.load(require_file(vocab, field="--vocab")) if vocab else None
    trainer = SummarizerTrainer(
        pairs, output, cfg, vocab=vocab_given, resume=resume, cache_dir=cache
    )  # a bar on a terminal, else lines
    if trainer.dist.is_main:
        typer.echo(
            f"{len(trainer.train_pairs):,} training pairs, {len(trainer.held_pairs):,} "
            f"held out; vocabulary {len(trainer.vocab):,}; starting at step "
            f"{trainer.state['step']}",
            err=True,
        )
    if trainer.init_report is not None:
        r = trainer.init_report
        typer.echo(
            f"from the LM in {r['lm']}: {r['embedding_rows']:,} of {r['vocab_size']:,} "
            f"embedding rows; copied {', '.join(r['copied']) or 'no LSTM'}; skipped "
            f"{', '.join(r['skipped']) or 'nothing'}",
            err=True,
        )
    summary = fit_trainer(trainer)
    if not trainer.dist.is_main:  # under torchrun: rank 0 reports
        return
    best, rouge = summary["best_val_loss"], summary["best_dev_rouge"]
    shown = (
        f"best dev ROUGE (mean of R1/R2/RL) {rouge:.2f}"
        if rouge is not None
        else "no held-out pairs"
        if best is None
        else f"best validation loss {best:.4f}"
    )
    typer.echo(
        f"{summary['steps']} steps, {shown} (step {summary['best_step']}); "
        f"{summary['pairs_per_second']:.1f} pairs/s; model in {output}"
    )


FitOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="Model directory: the summarizer at its root, every stage "
        "under work/ (rerun the same command to resume).",
    ),
]
FitPreset = Annotated[
    str,
    typer.Option(
        help="Settings sized by hardware and time: tiny (tests), cpu-small (a laptop, a few "
        "hours), cpu (2 cores, Yelp sizes), paper (a GPU)."
    ),
]
FitDev = Annotated[
    Path | None,
    typer.Option(
        help="Review sets with reference summaries: select the model and the decoding "
        "min_length on their ROUGE (default: fully unsupervised)."
    ),
]
FitBudget = Annotated[
    float | None,
    typer.Option(
        help="Hours of training time, split between the LM and the summarizer (their "
        "max_minutes); the other stages come on top."
    ),
]
FitLm = Annotated[
    Path | None,
    typer.Option(
        help="A trained BiLM (train-lm) to noise with and start from, instead of training one."
    ),
]
FitNoiseLm = Annotated[
    Path | None,
    typer.Option(
        help="A trained BiLM to noise the candidates with instead (token replacement), e.g. a "
        "larger one than the summarizer's sizes allow to start from (default: the LM "
        "of --lm, --from MODEL's own, or the one fit trains)."
    ),
]
FitConfig = Annotated[
    Path | None,
    typer.Option(
        help="TOML file of settings, one table per stage: lm, synthesize, topics, train, "
        "decode, export, evaluate."
    ),
]
FitOverrides = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override a setting, e.g. --set train.train.lr=0.002 or --set synthesize.pairs=5000.",
    ),
]
FitBase = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="DIR|NAME",
        help="Adapt a trained summarizer (an installed model's name, e.g. denoisesum-yelp, "
        "or a directory) to this corpus: it starts from that model, with its "
        "vocabulary, sizes, topic count and decoding; no LM is trained: the pairs are "
        "noised with MODEL's own noising LM (denoisesum-yelp ships it), or --noise-lm DIR.",
    ),
]
FitDevice = Annotated[
    str | None,
    typer.Option(
        help="Where the summarizer trains: auto (the GPU when PyTorch sees one), cpu or "
        "cuda (train.train.device; default: the preset's). The LM trains on the "
        "CPU."
    ),
]


@app.command("fit")
@corpus_options_of()
def fit_command(
    corpus: CorpusArg,
    output: FitOutput,
    preset: FitPreset = "cpu-small",
    dev: FitDev = None,
    budget: FitBudget = None,
    lm: FitLm = None,
    noise_lm: FitNoiseLm = None,
    config: FitConfig = None,
    overrides: FitOverrides = None,
    base: FitBase = None,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
    device: FitDevice = None,
) -> None:
    """Train a summarizer on a review corpus: LM, synthetic pairs, topics, summarizer, decoding
    and export in one command; a stage done is skipped, one cut off is resumed."""
    check_output_dir(output)
    if device is not None:  # CUDA where there is none: said before any stage runs
        torch_device(device)
        overrides = [*(overrides or []), f"train.train.device={json.dumps(device.strip().lower())}"]
    from denoisesum.fit import FitRequest, run_fit
    from denoisesum.io import require_file

    for path, option in ((config, "--config"), (dev, "--dev")):
        if path is not None:
            require_file(path, field=option)  # a directory is named as one, not a traceback
    request = FitRequest(
        list(corpus),
        output,
        preset=preset,
        dev=dev,
        budget_hours=budget,
        lm=lm,
        noise_lm=noise_lm,
        config=config,
        base=base,
        overrides=list(overrides or []),
        skip_bad=corpus_options.skip_bad,
        fields=corpus_options.fields(),
    )
    try:
        report = run_fit(request, log=say)  # progress: bars on a terminal, else lines
    except KeyboardInterrupt:
        typer.echo(
            "\ninterrupted; finished stages and checkpoints are kept. Run the same "
            "command again to finish.",
            err=True,
        )
        raise typer.Exit(130) from None
    typer.echo(report.table())
