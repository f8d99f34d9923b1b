"""The `denoisesum` command: a thin layer over the package's Python API."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from denoisesum.baselines.options import (
    DEFAULT_SAMPLE,
    DEFAULT_SEED,
    DEFAULT_WORDS,
    LeaderboardOptions,
)
from denoisesum.errors import DenoiseSumError
from denoisesum.extras import check_command, install_hint, missing_extra
from denoisesum.version import __version__

app = typer.Typer(
    help="Unsupervised opinion summarization by noising and denoising (DenoiseSum).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

CorpusArg = Annotated[
    list[str],
    typer.Argument(
        help="Review files or glob patterns: .jsonl/.csv/.tsv/.parquet, optionally .gz/.xz/.zst."
    ),
]
CorpusCache = Annotated[
    Path | None, typer.Option(help="Tokenized-corpus cache (default: OUTPUT/encoded).")
]
Workers = Annotated[int, typer.Option(help="Tokenizer processes.")]
ModelOption = Annotated[
    str | None,
    typer.Option(
        metavar="DIR|NAME",
        help="Summarizer: a model directory, or the name of a model installed with "
        "the package (default: denoisesum-yelp, the Yelp model).",
    ),
]

# the options of the commands that train or make something from a config (train-lm, synthesize,
# train); those whose help names something of the command's are made by a function
ConfigFile = Annotated[Path | None, typer.Option(help="TOML config file.")]
MaxMinutes = Annotated[
    float | None, typer.Option(help="Stop after this much training time (train.max_minutes).")
]
MaxSteps = Annotated[int | None, typer.Option(help="train.max_steps.")]


def _config_overrides(example: str):
    """--set KEY=VALUE, repeatable; its help shows `example`."""
    return Annotated[
        list[str] | None,
        typer.Option("--set", help=f"Override a config key, e.g. --set {example}."),
    ]


def _resume(directory: str):
    """--resume, from the checkpoint in the command's `directory` (as its help calls it)."""
    return Annotated[
        bool, typer.Option(help=f"Continue from the latest checkpoint in the {directory}.")
    ]


DeviceOption = Annotated[
    str,
    typer.Option(
        help="Where to compute: auto (the GPU when PyTorch sees one, else the CPU), cpu, or cuda "
        "(an error where there is none). On a GPU summaries are decoded in float16."
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Change a summarizing setting of the model for this run, e.g. --set "
        "search.beam=3, --set policy.mixed_band=0, --set shortlist=0: any key of its "
        "config.json 'summarize' section (search.KEY: the search's settings, policy.KEY: the "
        "summary policy's); an unknown key lists the valid ones.",
    ),
]


class CorpusOptions(NamedTuple):
    """How to read a corpus: the fields holding what (--entity-field ...) and --skip-bad."""

    entity_field: str = "entity_id"
    text_field: str = "text"
    rating_field: str = "rating"
    category_field: str = "category"
    skip_bad: bool = False

    def fields(self):
        from denoisesum.data.corpus import FieldNames

        return FieldNames(
            self.entity_field, self.text_field, self.rating_field, self.category_field
        )

    def reader(self, paths: list[str]):
        from denoisesum.data.corpus import CorpusReader

        return CorpusReader(paths, self.fields(), skip_bad=self.skip_bad)


DEFAULT_CORPUS_OPTIONS = CorpusOptions()

# each corpus option as a command takes it (its default: CorpusOptions')
CORPUS_OPTIONS = {
    "entity_field": Annotated[
        str, typer.Option(help="Field holding the entity (business/product) id.")
    ],
    "text_field": Annotated[str, typer.Option(help="Field holding the review text.")],
    "rating_field": Annotated[str, typer.Option(help="Optional field holding a numeric rating.")],
    "category_field": Annotated[str, typer.Option(help="Optional field holding a category.")],
    "skip_bad": Annotated[
        bool,
        typer.Option(
            "--skip-bad", help="Skip bad records (counted and reported) instead of stopping."
        ),
    ],
}


def _corpus_options(*names: str):
    """A decorator: the command takes the corpus options `names` (all of CORPUS_OPTIONS when
    none are named) where it declares its parameter `corpus_options`, which gets them as one
    CorpusOptions (an option the command does not take keeps its default)."""
    taken = names or tuple(CORPUS_OPTIONS)

    def decorate(command):
        signature = inspect.signature(command, eval_str=True)
        params = []
        for param in signature.parameters.values():
            if param.name != "corpus_options":
                params.append(param)
                continue
            for name in taken:
                default = CorpusOptions._field_defaults[name]
                params.append(
                    param.replace(name=name, annotation=CORPUS_OPTIONS[name], default=default)
                )

        @functools.wraps(command)
        def run(**values):
            given = {name: values.pop(name) for name in taken}
            return command(**values, corpus_options=CorpusOptions(**given))

        run.__signature__ = signature.replace(parameters=params)  # what typer reads
        run.__annotations__ = {param.name: param.annotation for param in params}
        return run

    return decorate


# the decoding settings the summarize command takes as flags, each by its setting's name
# (inference/policy.py; --set search.KEY=VALUE / policy.KEY=VALUE for every other one)
DECODING_FLAGS = {
    "beam": Annotated[
        int | None, typer.Option(min=1, help="Beam size; 1 is greedy (default: the model's).")
    ],
    "min_words": Annotated[
        int | None, typer.Option(min=0, help="No end of summary before this many words.")
    ],
    "max_words": Annotated[
        int | None,
        typer.Option(
            min=1, help="Words at most; the summary then ends at its last sentence end within them."
        ),
    ],
    "first_person": Annotated[
        bool | None,
        typer.Option(
            "--allow-first-person/--block-first-person",
            help="Allow i/me/my/mine/myself, or ban them.",
        ),
    ],
    "length_penalty": Annotated[
        float | None, typer.Option(help="alpha: finished scores are log p / (words + 1)^alpha.")
    ],
    "no_repeat_in_sentence": Annotated[
        bool | None,
        typer.Option(
            "--no-repeat-in-sentence/--allow-repeat-in-sentence",
            help="Ban a content word already in the current sentence, or allow it.",
        ),
    ],
    "max_word_repeats": Annotated[
        int | None, typer.Option(min=0, help="A content word's uses at most (0: no limit).")
    ],
    "restate_overlap": Annotated[
        float | None,
        typer.Option(help="No sentence ends restating an earlier one this much (0: off)."),
    ],
    "opinion_weight": Annotated[
        float | None,
        typer.Option(help="Steer toward the reviews' opinion by this weight (0: off)."),
    ],
}
# the flag of each setting whose flag is not its name's
FLAG_NAMES = {
    "first_person": "--allow-first-person",
    "no_repeat_in_sentence": "--no-repeat-in-sentence",
}


def _decoding_flags(command):
    """A decorator: the command takes DECODING_FLAGS where it declares its parameter
    `decoding`, which gets the given ones as {setting: value} (None: not given)."""
    signature = inspect.signature(command, eval_str=True)
    params = []
    for param in signature.parameters.values():
        if param.name != "decoding":
            params.append(param)
            continue
        params += [
            param.replace(name=name, annotation=kind, default=None)
            for name, kind in DECODING_FLAGS.items()
        ]

    @functools.wraps(command)
    def run(**values):
        given = {name: values.pop(name) for name in DECODING_FLAGS}
        return command(**values, decoding=given)

    run.__signature__ = signature.replace(parameters=params)  # what typer reads
    run.__annotations__ = {param.name: param.annotation for param in params}
    return run


def _device(name: str, option: str = "--device"):
    """--device as a torch device; CUDA asked for where there is none: one line, before any
    work."""
    from denoisesum.models.precision import resolve_device

    return resolve_device(name, option)


def _summarize_settings(config, overrides: list[str], flags: dict[str, object]):
    """The model's summarizing settings with --set KEY=VALUE (SummarizerConfig keys) and then
    the decoding flags (setting -> value or None), all checked by the settings' one
    validation; an error names the key or the flag as typed."""
    from denoisesum.config import load_config
    from denoisesum.errors import ConfigError
    from denoisesum.inference.policy import SummarizerConfig, decoding_with

    config = load_config(SummarizerConfig, None, overrides, base=config)
    try:
        decoding = decoding_with(config.decoding, flags)
    except ConfigError as exc:
        flag = FLAG_NAMES.get(exc.key, "--" + str(exc.key).replace("_", "-"))
        raise ConfigError(f"{flag} {exc.reason}") from None
    return dataclasses.replace(config, search=decoding.search, policy=decoding.policy)


def _report_skips(reader) -> None:
    if reader.skipped.count:
        typer.echo(reader.skipped.report(), err=True)


def _fit(trainer):
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


def _check_output_file(path: Path, inputs: list[Path] | None = None) -> None:
    from denoisesum.io import check_output

    check_output(path, inputs or [])


def _check_output_dir(*paths: Path) -> None:
    from denoisesum.io import check_output_dir

    for path in paths:
        check_output_dir(path)


def _with_flags(overrides: list[str] | None, flags: dict[str, Any]) -> list[str]:
    """The --set overrides, then the settings that the flags given on the command line stand
    for (a flag left out, None, changes nothing)."""
    return list(overrides or []) + [f"{k}={v}" for k, v in flags.items() if v is not None]


def _load_config(cls: type, path: Path | None, overrides: list[str]):
    """load_config, with a --config that is a directory, missing or unreadable said in one line
    naming the option."""
    from denoisesum.config import load_config
    from denoisesum.io import require_file

    if path is not None:
        require_file(path, field="--config")
    return load_config(cls, path, overrides, field="--config")


def _options(cls: type, **values):
    """Options that are settings of `cls`, checked by its bounds (config.py): an error names
    the option (--max-size), as the user typed it."""
    from denoisesum.config import build
    from denoisesum.errors import ConfigError

    try:
        return build(cls, values)
    except ConfigError as exc:
        option = "--" + (exc.key or "").replace("_", "-")
        raise ConfigError(f"{option} {exc.reason}") from None


def _version(value: bool) -> None:
    if value:
        typer.echo(f"denoisesum {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Unsupervised opinion summarization by noising and denoising (DenoiseSum)."""


@app.command()
@_corpus_options()
def stats(
    corpus: CorpusArg,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Count reviews and entities; distributions of reviews per entity and review length."""
    from dataclasses import asdict

    from denoisesum.data.stats import corpus_stats
    from denoisesum.data.tokenizer import Tokenizer

    reader = corpus_options.reader(corpus)
    result = corpus_stats(reader, Tokenizer(), progress=sys.stderr.isatty())
    typer.echo(json.dumps(asdict(result), indent=2) if as_json else result.to_text())
    _report_skips(reader)


@app.command()
def tokenize(
    text: Annotated[str, typer.Argument(help="Text to tokenize ('-' reads stdin).")],
    cased: Annotated[bool, typer.Option(help="Keep the original case.")] = False,
) -> None:
    """Show how a text is tokenized, and the detokenized form models would print."""
    from denoisesum.data.tokenizer import Tokenizer, detokenize

    lines = sys.stdin.read().splitlines() if text == "-" else [text]
    for line in lines:
        tokens = Tokenizer(lowercase=not cased).tokenize(line)
        typer.echo(" ".join(tokens))
        typer.echo(detokenize(tokens))


@app.command()
@_corpus_options()
def vocab(
    corpus: CorpusArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="vocab.json to write.")],
    max_size: Annotated[int, typer.Option(help="Largest vocabulary, specials included.")] = 30000,
    min_count: Annotated[int, typer.Option(help="Drop rarer tokens.")] = 3,
    cache: Annotated[
        Path | None,
        typer.Option(help="Where to keep the tokenized corpus (default: beside the output)."),
    ] = None,
    workers: Workers = 2,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Tokenize a corpus (cached) and build its vocabulary."""
    from denoisesum.training.lm import VocabConfig

    _options(VocabConfig, max_size=max_size, min_count=min_count)
    reader = corpus_options.reader(corpus)
    _check_output_file(output, reader.paths)
    _check_output_dir(cache or output.parent / "encoded")
    encoded = _encode(reader, cache or output.parent / "encoded", workers)
    built = encoded.build_vocab(max_size, min_count)
    built.save(output)
    covered = int(encoded.counts[: len(built) - 4].sum()) / max(encoded.n_tokens, 1)
    typer.echo(
        f"{len(built):,} tokens in the vocabulary, covering {covered:.2%} of "
        f"{encoded.n_tokens:,} corpus tokens -> {output}"
    )


def _encode(reader, cache: Path, workers: int):
    from denoisesum.data.corpus import estimate_records
    from denoisesum.data.encoded import EncodedCorpus
    from denoisesum.data.tokenizer import Tokenizer

    encoded = EncodedCorpus.build(
        reader, cache, Tokenizer(), workers=workers, total=estimate_records(reader.paths)
    )
    skipped = encoded.meta.get("skipped_bad_records", 0)
    if skipped:
        typer.echo(f"skipped {skipped} bad record(s) while tokenizing", err=True)
        _report_skips(reader)
    return encoded


@app.command("train-lm")
@_corpus_options()
def train_lm(
    corpus: CorpusArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Model directory.")],
    config: ConfigFile = None,
    overrides: _config_overrides("train.lr=0.001") = None,
    resume: _resume("output directory") = False,
    max_minutes: MaxMinutes = None,
    max_steps: MaxSteps = None,
    cache: CorpusCache = None,
    workers: Workers = 2,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Train the bidirectional cloze language model used by segment noising."""
    _check_output_dir(output, cache or output / "encoded")
    from denoisesum.training import distributed
    from denoisesum.training.lm import LMRunConfig, LMTrainer

    flags = {"train.max_minutes": max_minutes, "train.max_steps": max_steps}
    cfg = _load_config(LMRunConfig, config, _with_flags(overrides, flags))
    reader = corpus_options.reader(corpus)
    with distributed.setup().main_first():  # under torchrun: rank 0 tokenizes, the others reuse
        encoded = _encode(reader, cache or output / "encoded", workers)
    trainer = LMTrainer(encoded, output, cfg, resume=resume)
    if trainer.dist.is_main:
        typer.echo(
            f"{encoded.n_tokens:,} tokens, vocabulary {len(trainer.vocab):,}, "
            f"{len(trainer.train_segments):,} training segments; starting at step "
            f"{trainer.state['step']}",
            err=True,
        )
    summary = _fit(trainer)
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
@_corpus_options()
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
    overrides: _config_overrides("noise.top_p=0.9") = None,
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
    _check_output_dir(output, cache or output / "encoded")
    from denoisesum.io import require_file
    from denoisesum.models.store import load_bilm
    from denoisesum.noising.pipeline import SynthesisConfig
    from denoisesum.noising.pipeline import synthesize as run
    from denoisesum.noising.plan import read_entity_list, review_set_sizes

    extra = list(overrides or [])
    if dev is not None:
        mean, std = review_set_sizes(require_file(dev, field="--dev"))
        extra += [f"n_mean={mean}", f"n_std={std}"]
    flags = {"preset": preset and f'"{preset}"', "pairs": pairs, "n_mean": n_mean, "n_std": n_std}
    cfg = _load_config(SynthesisConfig, config, _with_flags(extra, flags))
    if workers is not None and workers < 0:  # a pool of -2 processes waits forever
        raise DenoiseSumError(f"--workers {workers} must be at least 0 (0: in this process)")
    excluded = (
        read_entity_list(require_file(exclude_entities, field="--exclude-entities"))
        if exclude_entities
        else []
    )
    load_bilm(lm)  # a missing or damaged LM: an error now, not after tokenizing the corpus
    reader = corpus_options.reader(corpus)
    encoded = _encode(
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


@app.command("evaluate")
def evaluate_command(
    predictions: Annotated[
        Path, typer.Argument(help="Prediction file (JSONL: entity_id, summary).")
    ],
    gold: Annotated[
        Path, typer.Argument(help="Review-set file whose 'summaries' are the references.")
    ],
    compare: Annotated[
        Path | None,
        typer.Option(
            help="A second prediction file: paired significance test of PREDICTIONS - COMPARE."
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            show_default="rouge,pooled,su4,meteor",
            help="Comma-separated: rouge (rouge-score), pooled (py-rouge style), su4 (Perl "
            "ROUGE-1.5.5, needs perl + XML::Parser), meteor (METEOR 1.5, needs java). "
            "Without this option a metric whose tool is missing is left out with a "
            "warning; a metric named here must run.",
        ),
    ] = None,
    per_entity: Annotated[
        Path | None, typer.Option(help="Write every entity's scores to this JSONL file.")
    ] = None,
    resamples: Annotated[
        int, typer.Option(min=1, help="Bootstrap resamples over entities.")
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the test.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Score predictions against human summaries: ROUGE, SU4, METEOR, 95% bootstrap CIs."""
    from denoisesum.evaluation import compare as compare_reports
    from denoisesum.evaluation import evaluate as run_evaluation
    from denoisesum.evaluation import load_predictions, load_references
    from denoisesum.evaluation.inputs import check_ids
    from denoisesum.evaluation.report import (
        format_comparison,
        format_report,
        not_computed_warning,
        requested_metrics,
        split_metrics,
    )
    from denoisesum.io import atomic_write, check_output

    if per_entity is not None:
        check_output(per_entity, [p for p in (predictions, gold, compare) if p is not None])
    groups, optional = requested_metrics(metrics)
    split_metrics(groups, optional)  # a missing tool the user asked for: an error before any work
    references = load_references(gold)
    systems = [predictions] if compare is None else [predictions, compare]
    loaded = [load_predictions(path) for path in systems]
    for path, preds in zip(systems, loaded, strict=True):
        check_ids(preds, references, path, gold)
    reports = [
        run_evaluation(preds, references, groups, optional=optional, resamples=resamples, seed=seed)
        for preds in loaded
    ]
    not_computed = {g: r for report in reports for g, r in report.not_computed.items()}
    for group, reason in not_computed.items():
        typer.echo(not_computed_warning(group, reason), err=True)
    tests = compare_reports(reports[0], reports[1], seed=seed) if compare else None
    if per_entity is not None:
        rows = reports[0].per_entity()
        if compare:
            for row, other in zip(rows, reports[1].per_entity(), strict=True):
                row["compare"] = {k: v for k, v in other.items() if k != "entity_id"}
        with atomic_write(per_entity) as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if as_json:
        out = {"predictions": str(predictions), "gold": str(gold), **reports[0].to_dict()}
        if tests is not None:
            out["compare"] = {
                "predictions": str(compare),
                **reports[1].to_dict(),
                "tests": {m: t.to_dict() for m, t in tests.items()},
            }
        typer.echo(json.dumps(out, indent=2))
        return
    typer.echo(f"gold: {gold} ({len(references)} entities)")
    for name, path, report in zip("AB", systems, reports, strict=False):
        label = f"{name}: " if tests is not None else "predictions: "
        typer.echo(f"\n{label}{path}\n{format_report(report)}")
    if tests is not None:
        typer.echo(f"\nA vs B\n{format_comparison(reports[0], reports[1], tests)}")


BASELINE_NAMES = "first, random, clustroid, oracle, lexrank, word2vec, opinosis"
CorpusOption = Annotated[
    list[str] | None,
    typer.Option(
        "--corpus",
        help="Review corpus to learn from (lexrank: IDF; word2vec: vectors + IDF); "
        "files or quoted glob patterns, repeatable.",
    ),
]
SampleOption = Annotated[
    int,
    typer.Option(
        min=1, help="Reviews sampled uniformly from --corpus (reservoir sampling, --seed)."
    ),
]
WordsOption = Annotated[
    int,
    typer.Option(min=1, help="Word budget of the sentence-level baselines (lexrank, opinosis)."),
]
SeedOption = Annotated[
    int, typer.Option(help="Seed of the random baseline, the corpus sample and word2vec.")
]


def _count(low: int, high: int, help: str):
    """A whole-number option from `low` to `high` (typer checks it), with its help."""
    return Annotated[int, typer.Option(min=low, max=high, help=help)]


# the commands that learn from rated reviews (rating, opinion-set): the corpus options that read
# them, and the seed of the sample they draw
_rated_corpus_options = _corpus_options("entity_field", "text_field", "rating_field", "skip_bad")
SampleSeed = Annotated[int, typer.Option(help="Seed of the random sample.")]


def _log(message: str) -> None:
    typer.echo(message, err=True)


@app.command()
@_corpus_options("entity_field", "text_field")
def baseline(
    name: Annotated[str, typer.Argument(help=f"Baseline: {BASELINE_NAMES}.")],
    review_sets: Annotated[
        Path,
        typer.Argument(help="Review-set file (JSONL: entity_id, reviews; summaries for oracle)."),
    ],
    output: Annotated[
        str, typer.Option("--output", "-o", help="Prediction file to write ('-': standard output).")
    ] = "-",
    corpus: CorpusOption = None,
    sample: SampleOption = DEFAULT_SAMPLE,
    model: Annotated[
        Path | None,
        typer.Option(
            help="word2vec: folder to save the vectors trained with --corpus in, or to load "
            "them from."
        ),
    ] = None,
    words: WordsOption = DEFAULT_WORDS,
    seed: SeedOption = DEFAULT_SEED,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Summarize every review set with a baseline; writes a prediction file."""
    from denoisesum.baselines import summarize_file
    from denoisesum.data.reviewsets import write_predictions
    from denoisesum.io import check_output, check_output_dir, expand_paths

    if output != "-":
        check_output(output, [review_sets, *expand_paths(corpus or [])])
    if model is not None and corpus:
        check_output_dir(model)  # word2vec saves its vectors there, after training
    predictions = summarize_file(
        name,
        review_sets,
        words=words,
        seed=seed,
        corpus=corpus or [],
        sample=sample,
        model=model,
        fields=corpus_options.fields(),
        log=_log,
    )
    write_predictions(output, predictions)
    if output != "-":
        typer.echo(f"{len(predictions)} summaries -> {output}", err=True)


@app.command("leaderboard")
def leaderboard_command(
    ctx: typer.Context,
    gold: Annotated[
        Path,
        typer.Argument(
            help="Review-set file with reviews and gold 'summaries' (e.g. the test set)."
        ),
    ],
    systems: Annotated[
        list[Path] | None,
        typer.Option(
            "--systems",
            help="Released outputs: a folder of *.jsonl prediction files or a "
            "file (name: file name up to its first dot); repeatable.",
        ),
    ] = None,
    baselines: Annotated[
        str, typer.Option(help=f"Comma-separated baselines to run ({BASELINE_NAMES}); '' for none.")
    ] = LeaderboardOptions.baselines,
    predictions: Annotated[
        list[str] | None,
        typer.Option(
            "--predictions",
            help="NAME=FILE: more prediction files (e.g. trained models); repeatable.",
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            show_default=LeaderboardOptions.metrics,
            help="Comma-separated metric groups: rouge, pooled, su4, meteor. Without this option "
            "a metric whose tool is missing is left out with a warning; a metric named "
            "here must run.",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Score only the first N gold entities.")
    ] = None,
    words: WordsOption = LeaderboardOptions.words,
    seed: SeedOption = LeaderboardOptions.seed,
    corpus: CorpusOption = None,
    sample: SampleOption = LeaderboardOptions.sample,
    word2vec_model: Annotated[
        Path | None,
        typer.Option(
            help="word2vec: folder to save the vectors trained with --corpus in, or to load "
            "them from."
        ),
    ] = None,
    notes: Annotated[
        Path | None,
        typer.Option(help="A Markdown file appended under the table (analysis, literature)."),
    ] = None,
    title: Annotated[str | None, typer.Option(help="Page title.")] = None,
    save_predictions: Annotated[
        Path | None, typer.Option(help="Also write each baseline's predictions to this folder.")
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Markdown file to write.")
    ] = LeaderboardOptions.output,
) -> None:
    """Score released systems, baselines and prediction files on one gold set; a Markdown
    table."""
    from denoisesum.baselines import leaderboard as board
    from denoisesum.evaluation.report import requested_metrics
    from denoisesum.io import atomic_write

    groups, optional = requested_metrics(metrics, LeaderboardOptions.metrics)
    # the options are named as LeaderboardOptions' fields: the command's parameters, as given
    options = LeaderboardOptions(**{**ctx.params, "metrics": ",".join(groups)})
    entries, page = board.make_page(options, log=_log, optional=optional)
    with atomic_write(output) as handle:
        handle.write(page)
    typer.echo(board.table(entries))
    typer.echo(f"-> {output}", err=True)


@app.command("rating")
@_rated_corpus_options
def rating_command(
    corpus: CorpusArg,
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            help="Directory to write rating.npz and rating-report.json to "
            "(a summarizer's model directory uses it from there).",
        ),
    ],
    heldout: Annotated[
        list[str],
        typer.Option(
            help="Rated reviews kept out of training, to report accuracy on; files or quoted "
            "globs, repeatable."
        ),
    ],
    sample: _count(100, 5_000_000, "Rated reviews sampled from CORPUS to train on.") = 250_000,
    heldout_sample: _count(10, 1_000_000, "Rated reviews sampled from --heldout.") = 20_000,
    max_features: _count(10, 5_000_000, "Most frequent n-grams kept as features.") = 200_000,
    seed: SampleSeed = 0,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Train the rating model (stars a text reads as) on the corpus's own ratings; it measures
    the opinion of summaries and lets decoding follow their reviews' opinion."""
    from dataclasses import asdict

    from denoisesum.io import write_json
    from denoisesum.models.rating import REPORT_FILENAME
    from denoisesum.training.rating import rated_sample, train_rating_model

    _check_output_dir(output)
    readers = [corpus_options.reader(paths) for paths in (corpus, heldout)]
    train = rated_sample(readers[0], sample, seed)
    held = rated_sample(readers[1], heldout_sample, seed)
    _log(f"training on {len(train):,} rated reviews, reporting on {len(held):,}")
    model, report = train_rating_model(train, held, max_features=max_features)
    path = model.save(output)
    write_json(output / REPORT_FILENAME, asdict(report))
    typer.echo(json.dumps(asdict(report), indent=2))
    typer.echo(f"-> {path}", err=True)


@app.command("aspects")
@_corpus_options("entity_field", "text_field", "skip_bad")
def aspects_command(
    corpus: CorpusArg,
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Directory to write aspects.json to.")
    ],
    model: Annotated[
        str,
        typer.Option(help="Model directory or installed name whose rating model tells opinions."),
    ] = "denoisesum-yelp",
    per_entity: _count(1, 10_000, "Reviews read per entity.") = 12,
    max_reviews: _count(100, 10_000_000, "Reviews read in all.") = 100_000,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Learn the aspect lexicon (what reviewers talk about: "broth", "front desk") that the
    opinions method reads sentences with; `fit` makes it too."""
    from denoisesum.models.rating import RatingModel
    from denoisesum.opinions.aspects import build_lexicon, evaluative_words, sample_reviews
    from denoisesum.progress import progress_bar
    from denoisesum.summarizer import resolve_model

    _check_output_dir(output)
    rating = RatingModel.load(resolve_model(model))
    reviews = sample_reviews(corpus_options.reader(corpus), per_entity, max_reviews)
    if not reviews:
        raise DenoiseSumError(f"{corpus[0]}: no reviews read")
    with progress_bar(total=len(reviews), desc="tagging", unit="review") as bar:
        lexicon = build_lexicon(reviews, evaluative_words(rating), progress=bar.update)
    path = lexicon.save(output)
    typer.echo(
        f"{len(lexicon.terms):,} aspects of {lexicon.entities:,} entities -> {path}", err=True
    )


@app.command("opinion-set")
@_rated_corpus_options
def opinion_set_command(
    corpus: CorpusArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Review-set file (JSONL).")],
    per_stratum: _count(1, 100_000, "Businesses at most in each stratum.") = 100,
    size: _count(1, 1000, "Rated reviews drawn per business.") = 8,
    seed: SampleSeed = 0,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Review sets stratified by their reviews' mean stars (mostly negative <= 2, mixed
    2.75-3.25, mostly positive >= 4.5), with the stars: the set `denoisesum opinion` scores."""
    from collections import Counter

    from denoisesum.evaluation.opinion import build_opinion_set
    from denoisesum.io import atomic_write

    _check_output_file(output)
    reader = corpus_options.reader(corpus)
    sets = build_opinion_set(reader, per_stratum, seed, size)
    with atomic_write(output) as handle:
        handle.writelines(json.dumps(s, ensure_ascii=False) + "\n" for s in sets)
    counts = Counter(s["stratum"] for s in sets)
    typer.echo(f"{len(sets)} review sets ({dict(counts)}) -> {output}", err=True)


@app.command("opinion")
def opinion_command(
    predictions: Annotated[
        Path, typer.Argument(help="Prediction file (JSONL: entity_id, summary).")
    ],
    sets: Annotated[
        Path,
        typer.Argument(
            help="Review-set file with ratings (from `denoisesum opinion-set`); without ratings "
            "the rating model reads the reviews too."
        ),
    ],
    rating_model: Annotated[
        str | None,
        typer.Option(
            "--rating-model",
            metavar="DIR|NAME",
            help="A rating model directory, or a summarizer whose directory holds one "
            "(default: denoisesum-yelp's).",
        ),
    ] = None,
    per_entity: Annotated[
        Path | None, typer.Option(help="Write every entity's row to this JSONL file.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Opinion fidelity: per stratum, the share of summaries whose opinion agrees with their
    reviews', misleads, contradicts itself or states the opposite of the reviews."""
    from denoisesum.data.reviewsets import read_review_sets
    from denoisesum.evaluation.opinion import format_opinion_report, opinion_report
    from denoisesum.io import atomic_write, iter_jsonl
    from denoisesum.models.rating import RatingModel
    from denoisesum.summarizer import resolve_model

    if per_entity is not None:
        _check_output_file(per_entity, [predictions, sets])
    model = RatingModel.load(resolve_model(rating_model))
    summaries = {p.entity_id: p.summary for p in _predictions(predictions)}
    strata = [record.get("stratum", "all") for _, record in iter_jsonl(sets)]
    rows = [
        {**rs.model_dump(), "stratum": stratum}
        for rs, stratum in zip(read_review_sets(sets), strata, strict=True)
    ]
    missing = [r["entity_id"] for r in rows if r["entity_id"] not in summaries]
    if missing:
        raise DenoiseSumError(
            f"{predictions}: no summary for {len(missing)} entities of {sets} (first: {missing[0]})"
        )
    report, per_row = opinion_report([summaries[r["entity_id"]] for r in rows], rows, model)
    if per_entity is not None:
        with atomic_write(per_entity) as handle:
            handle.writelines(json.dumps(r) + "\n" for r in per_row)
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else format_opinion_report(report))


def _predictions(path: Path):
    from denoisesum.data.reviewsets import read_predictions

    return list(read_predictions(path))


@app.command("topics")
@_corpus_options()
def topics_command(
    source: Annotated[
        list[str],
        typer.Argument(
            help="Review corpus files or globs, or a directory of synthetic pairs "
            "(denoisesum synthesize output)."
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Topic model directory.")],
    n_topics: Annotated[
        int,
        typer.Option(
            "--topics", min=2, help="LDA topics (the paper: 100 Yelp, 50 Rotten Tomatoes)."
        ),
    ] = 100,
    categories: Annotated[
        str, typer.Option(help="'lda': learn topics; 'human': use the corpus' category field.")
    ] = "lda",
    sample: Annotated[
        int, typer.Option(min=1, help="Documents LDA trains on (uniform sample).")
    ] = 100_000,
    passes: Annotated[int, typer.Option(min=1, help="LDA passes over the sample.")] = 2,
    min_docs: Annotated[
        int, typer.Option(min=1, help="LDA vocabulary: words in at least this many documents.")
    ] = 5,
    seed: Annotated[int, typer.Option(help="Sample and LDA seed.")] = 1,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Train the topic model whose p(z) the summarizer's discriminator predicts."""
    _check_output_dir(output)
    from denoisesum.topics.build import build_topics
    from denoisesum.topics.models import LDAConfig

    cfg = LDAConfig(n_topics=n_topics, sample=sample, passes=passes, min_docs=min_docs, seed=seed)
    model = build_topics(
        source,
        lambda: corpus_options.reader(source),
        categories,
        cfg,
        log=lambda m: typer.echo(m, err=True),
    )
    model.save(output)
    if model.kind == "lda":
        for k in range(min(5, model.n_topics)):
            typer.echo(f"topic {k}: {' '.join(model.top_words(k, 8))}")
        typer.echo(f"{model.n_topics} topics over {len(model.words):,} words -> {output}")
    else:
        typer.echo(f"{model.n_topics} categories of {len(model.entities):,} entities -> {output}")


@app.command("train")
def train_command(
    pairs: Annotated[
        Path, typer.Argument(help="Directory of synthetic pairs (denoisesum synthesize output).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory.")],
    config: ConfigFile = None,
    overrides: _config_overrides("model.copy=false") = None,
    topics: Annotated[
        Path | None,
        typer.Option(help="Topic model directory (denoisesum topics) for the discriminator."),
    ] = None,
    resume: _resume("run directory") = False,
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
    _check_output_dir(output)
    if cache is not None:
        _check_output_dir(cache)
    from denoisesum.data.vocab import Vocab
    from denoisesum.io import require_file
    from denoisesum.topics import load_topics
    from denoisesum.training.denoiser import SummarizerRunConfig, SummarizerTrainer

    flags = {
        "train.max_steps": max_steps,
        "train.max_minutes": max_minutes,
        "data.topics": topics and json.dumps(str(topics)),
    }
    cfg = _load_config(SummarizerRunConfig, config, _with_flags(overrides, flags))
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
    summary = _fit(trainer)
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


@app.command("fit")
@_corpus_options()
def fit_command(
    corpus: CorpusArg,
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Model directory: the summarizer at its root, every stage "
            "under work/ (rerun the same command to resume).",
        ),
    ],
    preset: Annotated[
        str,
        typer.Option(
            help="Settings sized by hardware and time: tiny (tests), cpu-small (a laptop, a few "
            "hours), cpu (2 cores, Yelp sizes), paper (a GPU)."
        ),
    ] = "cpu-small",
    dev: Annotated[
        Path | None,
        typer.Option(
            help="Review sets with reference summaries: select the model and the decoding "
            "min_length on their ROUGE (default: fully unsupervised)."
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            help="Hours of training time, split between the LM and the summarizer (their "
            "max_minutes); the other stages come on top."
        ),
    ] = None,
    lm: Annotated[
        Path | None,
        typer.Option(
            help="A trained BiLM (train-lm) to noise with and start from, instead of training one."
        ),
    ] = None,
    noise_lm: Annotated[
        Path | None,
        typer.Option(
            help="A trained BiLM to noise the candidates with instead (token replacement), e.g. a "
            "larger one than the summarizer's sizes allow to start from (default: the LM "
            "of --lm, or the one fit trains)."
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="TOML file of settings, one table per stage: lm, synthesize, topics, train, "
            "decode, export, evaluate."
        ),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Override a setting, e.g. --set train.train.lr=0.002 or --set "
            "synthesize.pairs=5000.",
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="DIR|NAME",
            help="Adapt a trained summarizer (an installed model's name, e.g. denoisesum-yelp, "
            "or a directory) to this corpus: it starts from that model, with its "
            "vocabulary, sizes, topic count and decoding, and no LM is trained to start "
            "from (--noise-lm DIR: none at all).",
        ),
    ] = None,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
    device: Annotated[
        str | None,
        typer.Option(
            help="Where the summarizer trains: auto (the GPU when PyTorch sees one), cpu or "
            "cuda (train.train.device; default: the preset's). The LM trains on the "
            "CPU."
        ),
    ] = None,
) -> None:
    """Train a summarizer on a review corpus: LM, synthetic pairs, topics, summarizer, decoding
    and export in one command; a stage done is skipped, one cut off is resumed."""
    _check_output_dir(output)
    if device is not None:  # CUDA where there is none: said before any stage runs
        _device(device)
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
        report = run_fit(request, log=_log)  # progress: bars on a terminal, else lines
    except KeyboardInterrupt:
        typer.echo(
            "\ninterrupted; finished stages and checkpoints are kept. Run the same "
            "command again to finish.",
            err=True,
        )
        raise typer.Exit(130) from None
    typer.echo(report.table())


@app.command("summarize")
@_corpus_options("entity_field", "text_field", "rating_field", "skip_bad")
@_decoding_flags
def summarize_command(
    source: Annotated[
        str,
        typer.Argument(
            metavar="INPUT",
            help="Review-set file (JSONL: entity_id, reviews), a review corpus "
            "(.csv/.tsv/.parquet: one review per row, grouped by entity), "
            "or '-' for review-set JSONL on standard input.",
        ),
    ],
    model: ModelOption = None,
    output: Annotated[
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
    ] = "-",
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Start the output over instead of continuing it (it is "
            "replaced when the first batch is written).",
        ),
    ] = False,
    overrides: SetOption = None,
    device: DeviceOption = "auto",
    slice_: Annotated[
        str,
        typer.Option(
            "--slice",
            help="Summarize all reviews, or only the complaints (reviews of at most "
            "3 stars) or the praise (at least 4): all, complaints, praise.",
        ),
    ] = "all",
    method: Annotated[
        str | None,
        typer.Option(
            help="opinions: every review read, the opinions reviewers share, each sentence "
            "attributed; denoisesum: the paper's abstractive summary of 8 reviews. Default: "
            "the model's.",
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Entities decoded together.")] = 8,
    by_length: Annotated[
        bool,
        typer.Option(
            "--by-length",
            help="Batch entities of similar input length: each window of 16 "
            "batches is decoded shortest first (and written in that "
            "order), so batches pad less.",
        ),
    ] = False,
    bf16: Annotated[
        bool,
        typer.Option(
            "--bf16",
            help="Compute in bfloat16: ~2x faster on CPUs with AVX512-BF16/AMX "
            "(on others: fp32, with a warning); beams may differ slightly.",
        ),
    ] = False,
    shortlist: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Decode over the N most frequent words plus the input's words: cheaper "
            "output layers, may change summaries (0: all words; default: the "
            "model's setting, else 0).",
        ),
    ] = None,
    raw: Annotated[
        bool,
        typer.Option("--raw", help="Write the tokenized form ('i ca n't'), not readable text."),
    ] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Add the reviews supporting each summary sentence, with scores "
            "(JSONL: a 'support' object per entity).",
        ),
    ] = False,
    as_text: Annotated[
        bool,
        typer.Option(
            "--text",
            help="Write readable text (entity id, summary and, with --explain, the "
            "support of each sentence) instead of JSONL.",
        ),
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Refuse (an error, before decoding) when a review set is one the "
            "model cannot read: no words, or most words unknown to it "
            "(another language). Without it such summaries are written with "
            "a 'warnings' field and a warning on standard error.",
        ),
    ] = False,
    dask: Annotated[
        str | None,
        typer.Option(
            "--dask",
            metavar="N|ADDRESS",
            help="Decode on a Dask cluster: N worker processes on this machine, or a running "
            "scheduler's address (tcp://host:8786; every worker needs denoisesum and the "
            "model). The output is the same as without it.",
        ),
    ] = None,
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
    summarizer = Summarizer.from_pretrained(model, device=_device(device))
    sets = [*(overrides or []), *([f"shortlist={shortlist}"] if shortlist is not None else [])]
    summarizer.config = _summarize_settings(summarizer.config, sets, decoding or {})
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


@app.command("serve")
def serve_command(
    host: Annotated[
        str, typer.Option(help="Address to listen on (0.0.0.0: every interface).")
    ] = "127.0.0.1",
    port: _count(0, 65535, "Port to listen on.") = 8000,
    model: ModelOption = None,
    max_reviews: Annotated[int, typer.Option(min=1, help="Reviews per set, at most.")] = 100,
    max_review_chars: Annotated[
        int, typer.Option(min=1, help="Characters per review, at most.")
    ] = 5000,
    max_sets: Annotated[
        int, typer.Option(min=1, help="Review sets per batch request, at most.")
    ] = 16,
    timeout: Annotated[
        float,
        typer.Option(
            min=0.001,
            help="Seconds a request may wait and run; then 503 (still queued) or 504 (decoding).",
        ),
    ] = 60.0,
    max_batch: Annotated[
        int,
        typer.Option(
            min=1, help="Review sets decoded together (concurrent requests share batches)."
        ),
    ] = 8,
    max_pending: Annotated[
        int,
        typer.Option(
            min=1,
            help="Review sets waiting for the model, at most (at least --max-sets); more get 503.",
        ),
    ] = 64,
    threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="torch threads per worker (default: torch's, shared among the workers)."
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="Worker processes sharing the port and the loaded model (CPU; needs fork).",
        ),
    ] = 1,
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
    summarizer = Summarizer.from_pretrained(model, device=_device(device))
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


def _warning_line(message, category, filename, lineno, line=None) -> str:
    return f"warning: {message}\n"  # one line, as the CLI's other messages


def main() -> None:
    import warnings

    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    warnings.formatwarning = _warning_line
    try:
        try:
            if "--help" not in sys.argv:  # a command's help needs no extra
                check_command(_command())
            # not standalone: typer's boxed usage errors come here, to be said in one line
            code = app(standalone_mode=False)
        except NoArgsIsHelpError as exc:  # `denoisesum` alone: the help, as typer shows it
            exc.show()
            code = exc.exit_code
        except ClickException as exc:
            _fail(_usage_line(exc))
        finally:
            if sys.stdout is not None:  # None when started with stdout closed (>&-)
                sys.stdout.flush()  # a full disk or a closed pipe: reported here, not at exit
    except DenoiseSumError as exc:
        _fail(str(exc))
    except ModuleNotFoundError as exc:  # a package of an extra that is not installed
        _fail(_missing_extra(exc))
    except OSError as exc:  # the system refused: no permission, a full disk, a closed pipe
        _fail(_system_error(exc))
    if isinstance(code, int) and code:  # typer.Exit(n), Ctrl-C (130)
        sys.exit(code)


def _command() -> str:
    """The command named on the command line ('summarize'; '' for none)."""
    return next((arg for arg in sys.argv[1:] if not arg.startswith("-")), "")


def _missing_extra(exc: ModuleNotFoundError) -> str:
    """'denoisesum baseline needs the train extra: pip install ...'; a module no extra brings
    is a real error, raised as it is."""
    extra = missing_extra(exc)
    if extra is None:
        raise exc
    return install_hint(f"denoisesum {_command()}".strip(), extra)


def _usage_line(exc) -> str:
    """A usage error typer/click found (a bad option value, an unknown option, a missing
    argument) as one line: the option, what it takes (type and range), and what was given."""
    from typer._click.exceptions import BadParameter, MissingParameter

    param = getattr(exc, "param", None)
    if not isinstance(exc, BadParameter) or isinstance(exc, MissingParameter) or param is None:
        message = exc.format_message()
        return message[:1].lower() + message[1:]
    name = max(param.opts, key=len) if getattr(param, "opts", None) else param.human_readable_name
    given = _given(exc)
    return f"{name}: must be {_takes(param)}" + (f" (got {given!r})" if given is not None else "")


def _takes(param) -> str:
    """What an option takes, in words: 'a whole number between 1 and 1000'."""
    desc = getattr(param, "type_descriptor", None)
    annotation = getattr(desc, "annotation", None)
    if getattr(desc, "is_choice", False) and desc.choices:
        return "one of " + ", ".join(str(getattr(c, "value", c)) for c in desc.choices)
    kind = {int: "a whole number", float: "a number", bool: "true or false"}.get(
        annotation, "a valid value"
    )
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and high is not None:
        return f"{kind} between {low:g} and {high:g}"
    if low is not None:
        return f"{kind} of at least {low:g}"
    if high is not None:
        return f"{kind} of at most {high:g}"
    return kind


def _given(exc) -> object:
    """The value typer refused (its validation error holds it), or None."""
    errors = getattr(exc.__cause__, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            return errors()[0]["input"]
    return None


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    sys.exit(2)


def _system_error(exc: OSError) -> str:
    """An OSError as one line naming its file; without one (a write to stdout), what failed.
    Standard output is pointed at /dev/null so that Python's own flush at exit stays quiet."""
    from denoisesum.io import WRITE_ERRNOS

    if exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    if exc.errno in WRITE_ERRNOS:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return f"cannot write the output: {exc.strerror or exc}"
    return str(exc)


if __name__ == "__main__":
    main()
