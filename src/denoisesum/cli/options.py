"""What the commands share: option types (the model, the device, a corpus's fields, the
decoding flags, --set), the decorators that give a command a group of them, and the checks that
turn their values into the package's settings, each error naming the option as typed."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

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


def config_overrides(example: str):
    """--set KEY=VALUE, repeatable; its help shows `example`."""
    return Annotated[
        list[str] | None,
        typer.Option("--set", help=f"Override a config key, e.g. --set {example}."),
    ]


def resume_option(directory: str):
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


def _options_for(parameter: str, options: dict[str, tuple[Any, Any]], gather):
    """A decorator: the command takes `options` ({name: (annotation, default)}) where it
    declares `parameter`, which gets gather({name: value}) of them."""

    def decorate(command):
        signature = inspect.signature(command, eval_str=True)
        params = []
        for param in signature.parameters.values():
            if param.name != parameter:
                params.append(param)
                continue
            params += [
                param.replace(name=name, annotation=kind, default=default)
                for name, (kind, default) in options.items()
            ]

        @functools.wraps(command)
        def run(**values):
            given = {name: values.pop(name) for name in options}
            return command(**values, **{parameter: gather(given)})

        run.__signature__ = signature.replace(parameters=params)  # what typer reads
        run.__annotations__ = {param.name: param.annotation for param in params}
        return run

    return decorate


def corpus_options_of(*names: str):
    """A decorator: the command takes the corpus options `names` (all of CORPUS_OPTIONS when
    none are named) where it declares its parameter `corpus_options`, which gets them as one
    CorpusOptions (an option the command does not take keeps its default)."""
    taken = {
        name: (CORPUS_OPTIONS[name], CorpusOptions._field_defaults[name])
        for name in names or CORPUS_OPTIONS
    }
    return _options_for("corpus_options", taken, lambda given: CorpusOptions(**given))


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


def decoding_flags(command):
    """A decorator: the command takes DECODING_FLAGS where it declares its parameter
    `decoding`, which gets the given ones as {setting: value} (None: not given)."""
    flags = {name: (kind, None) for name, kind in DECODING_FLAGS.items()}
    return _options_for("decoding", flags, dict)(command)


def torch_device(name: str, option: str = "--device"):
    """--device as a torch device; CUDA asked for where there is none: one line, before any
    work."""
    from denoisesum.models.precision import resolve_device

    return resolve_device(name, option)


def summarize_settings(config, overrides: list[str], flags: dict[str, object]):
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


def report_skips(reader) -> None:
    if reader.skipped.count:
        typer.echo(reader.skipped.report(), err=True)


def check_output_file(path: Path, inputs: list[Path] | None = None) -> None:
    from denoisesum.io import check_output

    check_output(path, inputs or [])


def check_output_dir(*paths: Path) -> None:
    from denoisesum.io import check_output_dir

    for path in paths:
        check_output_dir(path)


def with_flags(overrides: list[str] | None, flags: dict[str, Any]) -> list[str]:
    """The --set overrides, then the settings that the flags given on the command line stand
    for (a flag left out, None, changes nothing)."""
    return list(overrides or []) + [f"{k}={v}" for k, v in flags.items() if v is not None]


def load_settings(cls: type, path: Path | None, overrides: list[str]):
    """load_config, with a --config that is a directory, missing or unreadable said in one line
    naming the option."""
    from denoisesum.config import load_config
    from denoisesum.io import require_file

    if path is not None:
        require_file(path, field="--config")
    return load_config(cls, path, overrides, field="--config")


def checked_options(cls: type, **values):
    """Options that are settings of `cls`, checked by its bounds (config.py): an error names
    the option (--max-size), as the user typed it."""
    from denoisesum.config import build
    from denoisesum.errors import ConfigError

    try:
        return build(cls, values)
    except ConfigError as exc:
        option = "--" + (exc.key or "").replace("_", "-")
        raise ConfigError(f"{option} {exc.reason}") from None


def count_option(low: int, high: int, help: str):
    """A whole-number option from `low` to `high` (typer checks it), with its help."""
    return Annotated[int, typer.Option(min=low, max=high, help=help)]


# the commands that learn from rated reviews (rating, opinion-set): the corpus options that read
# them, and the seed of the sample they draw
rated_corpus_options = corpus_options_of("entity_field", "text_field", "rating_field", "skip_bad")


SampleSeed = Annotated[int, typer.Option(help="Seed of the random sample.")]


def say(message: str) -> None:
    typer.echo(message, err=True)


def encode_corpus(reader, cache: Path, workers: int):
    from denoisesum.data.corpus import estimate_records
    from denoisesum.data.encoded import EncodedCorpus
    from denoisesum.data.tokenizer import Tokenizer

    encoded = EncodedCorpus.build(
        reader, cache, Tokenizer(), workers=workers, total=estimate_records(reader.paths)
    )
    skipped = encoded.meta.get("skipped_bad_records", 0)
    if skipped:
        typer.echo(f"skipped {skipped} bad record(s) while tokenizing", err=True)
        report_skips(reader)
    return encoded
