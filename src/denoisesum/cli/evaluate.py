"""Commands that score: evaluate, baseline, leaderboard, opinion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from denoisesum.baselines.options import (
    DEFAULT_SAMPLE,
    DEFAULT_SEED,
    DEFAULT_WORDS,
    LeaderboardOptions,
)
from denoisesum.cli.app import app
from denoisesum.cli.options import (
    DEFAULT_CORPUS_OPTIONS,
    CorpusOptions,
    check_output_file,
    corpus_options_of,
    say,
)
from denoisesum.errors import DenoiseSumError

Predictions = Annotated[Path, typer.Argument(help="Prediction file (JSONL: entity_id, summary).")]
Gold = Annotated[Path, typer.Argument(help="Review-set file whose 'summaries' are the references.")]
Compare = Annotated[
    Path | None,
    typer.Option(
        help="A second prediction file: paired significance test of PREDICTIONS - COMPARE."
    ),
]
Metrics = Annotated[
    str | None,
    typer.Option(
        show_default="rouge,pooled,su4,meteor",
        help="Comma-separated: rouge (rouge-score), pooled (py-rouge style), su4 (Perl "
        "ROUGE-1.5.5, needs perl + XML::Parser), meteor (METEOR 1.5, needs java). "
        "Without this option a metric whose tool is missing is left out with a "
        "warning; a metric named here must run.",
    ),
]
PerEntity = Annotated[
    Path | None, typer.Option(help="Write every entity's scores to this JSONL file.")
]
Resamples = Annotated[int, typer.Option(min=1, help="Bootstrap resamples over entities.")]


@app.command("evaluate")
def evaluate_command(
    predictions: Predictions,
    gold: Gold,
    compare: Compare = None,
    metrics: Metrics = None,
    per_entity: PerEntity = None,
    resamples: Resamples = 1000,
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


@app.command()
@corpus_options_of("entity_field", "text_field")
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
        log=say,
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
    entries, page = board.make_page(options, log=say, optional=optional)
    with atomic_write(output) as handle:
        handle.write(page)
    typer.echo(board.table(entries))
    typer.echo(f"-> {output}", err=True)


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
        check_output_file(per_entity, [predictions, sets])
    model = RatingModel.load(resolve_model(rating_model))
    summaries = {p.entity_id: p.summary for p in predictions_of(predictions)}
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


def predictions_of(path: Path):
    from denoisesum.data.reviewsets import read_predictions

    return list(read_predictions(path))
