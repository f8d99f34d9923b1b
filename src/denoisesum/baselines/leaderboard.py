"""The leaderboard: released systems, baselines and new predictions, scored alike, as Markdown.

Every entry is scored by `denoisesum.evaluation.evaluate` against the same gold file, on the same
entities; baselines are run on the gold file's own reviews. `make_page` does it all for the
`leaderboard` command, from its options (`LeaderboardOptions`). An optional metric group whose tool
is missing (or fails) is left out of every row after it, logged as a warning and named on the page.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from denoisesum.baselines.base import Summarizer
from denoisesum.baselines.options import LeaderboardOptions
from denoisesum.baselines.registry import Log, create, prepare, silent, summarize_sets
from denoisesum.data.reviewsets import Prediction, ReviewSet, read_review_sets, write_predictions
from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.evaluation import EvaluationReport, evaluate, load_predictions
from denoisesum.evaluation.inputs import check_ids, check_references
from denoisesum.evaluation.report import not_computed_warning, split_metrics
from denoisesum.io import check_output, check_output_dir, expand_paths, require_file

KINDS = {"system": "released outputs", "baseline": "baseline", "predictions": "predictions"}
COLUMNS = (
    ("rouge1", "R1"),
    ("rouge2", "R2"),
    ("rougeL", "RL"),
    ("pooled_rouge1", "R1 pooled"),
    ("pooled_rouge2", "R2 pooled"),
    ("pooled_rougeL", "RL pooled"),
    ("su4_recall", "SU4 R"),
    ("meteor", "METEOR"),
)
SCORER_NOTE = """\
**Scorers.** Scores are 0-100, computed per entity and averaged over entities; the same code
scores every row (`denoisesum evaluate` gives the full report of one file).
R1/R2/RL: ROUGE-1/2/L F1 from Google `rouge-score` (stemmed, `rougeL` = LCS of whole summaries,
F1 averaged over an entity's references), the primary numbers; the 95% interval of R1 is a
percentile bootstrap over entities (1000 resamples, seed 0).
*pooled*: the same F1 computed as py-rouge does (its tokenizer, WordNet + Porter stemming,
summary-level union LCS, counts pooled over references), the scorer behind the DenoiseSum, PlanSum
and COOP papers' tables: compare published numbers with these columns.
SU4 R: ROUGE-SU4 recall of the official Perl ROUGE-1.5.5 (`-m -2 4 -u`).
METEOR: METEOR 1.5 (official jar, `-norm`), mean of segment scores.
Words: mean summary length in words as ROUGE counts them (runs of letters and digits)."""


class Scoring:
    """`evaluate` with the same metrics for every entry, less the optional groups that could not
    be computed for an earlier one (a missing tool is found once, a failing one fails once)."""

    def __init__(self, metrics: Sequence[str], optional: Collection[str], log: Log) -> None:
        self.metrics, self.optional, self.log = list(metrics), optional, log
        self.not_computed: dict[str, str] = {}

    def __call__(
        self, predictions: Mapping[str, str], references: Mapping[str, Sequence[str]]
    ) -> EvaluationReport:
        report = evaluate(predictions, references, self.metrics, optional=self.optional)
        self.skip(report.not_computed)
        return report

    def skip(self, reasons: Mapping[str, str]) -> None:
        for group, reason in reasons.items():
            self.log(not_computed_warning(group, reason))
            self.not_computed[group] = reason
            if group in self.metrics:
                self.metrics.remove(group)


@dataclass
class Entry:
    name: str
    kind: str  # a key of KINDS
    report: EvaluationReport
    seconds: float | None = None  # time a baseline took to summarize every entity


def prediction_files(paths: Iterable[str | Path]) -> dict[str, Path]:
    """System name -> prediction file, from files and folders of `*.jsonl` files; the name is
    the file name up to its first dot (`copycat.test.jsonl` -> `copycat`)."""
    found: dict[str, Path] = {}
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(path.glob("*.jsonl"))
            if not files:
                raise InputError("no .jsonl prediction files in this folder", path=path)
        elif path.is_file():
            files = [path]
        else:
            raise InputError("no such file or folder", path=path)
        for file in files:
            found[file.name.split(".")[0]] = file
    return found


def parse_named(values: Iterable[str]) -> dict[str, Path]:
    """`NAME=FILE` pairs (the --predictions option) as a mapping."""
    named: dict[str, Path] = {}
    for value in values:
        name, sep, file = value.partition("=")
        if not sep or not name or not file:
            raise InputError(f"expected NAME=FILE, got '{value}'", field="--predictions")
        named[name] = require_file(file, field="--predictions")
    return named


def restrict(
    predictions: Mapping[str, str], references: Mapping[str, Sequence[str]], path: Path, gold: Path
) -> dict[str, str]:
    """The predictions of the scored entities; every one of them must be there. Predictions
    for other entities are left out, so a released file can be scored on a slice of its set."""
    kept = {e: predictions[e] for e in references if e in predictions}
    check_ids(kept, references, path, gold)
    return kept


def run_baseline(
    summarizer: Summarizer, sets: Sequence[ReviewSet], gold: Path
) -> tuple[dict[str, str], float]:
    start = time.perf_counter()
    predictions = {p.entity_id: p.summary for p in summarize_sets(summarizer, sets, gold)}
    return predictions, time.perf_counter() - start


def score_files(
    files: Mapping[str, Path],
    kind: str,
    references: Mapping[str, Sequence[str]],
    gold: Path,
    score: Scoring,
) -> list[Entry]:
    entries = []
    for name, path in files.items():
        predictions = restrict(load_predictions(path), references, path, gold)
        entries.append(Entry(name, kind, score(predictions, references)))
    return entries


def make_page(
    options: LeaderboardOptions, log: Log = silent, optional: Collection[str] = ()
) -> tuple[list[Entry], str]:
    """The entries of the leaderboard `options` describe and its Markdown page. Every input is
    checked before a baseline is trained or run, and so is every tool the metrics need: a
    metric group in `optional` whose tool is missing is left out with a warning (`log`), any
    other is an error."""
    started = time.perf_counter()
    metrics, missing = split_metrics(options.metrics, optional)
    score = Scoring(metrics, optional, log)
    summarizers = [
        create(n, words=options.words, seed=options.seed) for n in options.baseline_names()
    ]
    files = prediction_files(options.systems)
    extra = parse_named(options.predictions)
    notes = _read_notes(options.notes) if options.notes is not None else ""
    check_outputs(
        options,
        [s.name for s in summarizers],
        [
            options.gold,
            *files.values(),
            *extra.values(),
            *expand_paths(options.corpus),
            *([options.notes] if options.notes is not None else []),
        ],
    )
    gold = options.gold
    sets, references = _gold_sets(gold, options.limit)
    if not (files or extra or summarizers):
        raise DenoiseSumError("nothing to score: give --systems, --baselines or --predictions")
    score.skip(missing)
    summarizers = _prepare_word2vec(summarizers, options, log)
    entries = score_files(files, "system", references, gold, score)
    entries += _baseline_entries(summarizers, sets, references, score, options, log)
    entries += score_files(extra, "predictions", references, gold, score)
    page = render(
        entries,
        title=options.title or f"Leaderboard: {gold.name}",
        command=options.command_line(),
        gold=gold,
        settings=_settings(summarizers, options),
        seconds=time.perf_counter() - started,
        notes=notes,
        not_computed=score.not_computed,
    )
    return entries, page


def check_outputs(
    options: LeaderboardOptions, baselines: Sequence[str], inputs: Sequence[Path]
) -> None:
    """Refuse, before any work, a page or a baseline's saved predictions that cannot be written
    or that would overwrite one of the `inputs`, and a word2vec folder to save in that is a
    file."""
    check_output(options.output, inputs)
    if options.save_predictions is not None:
        check_output_dir(options.save_predictions)
        for name in baselines:
            check_output(options.save_predictions / f"{name}.jsonl", inputs)
    if options.word2vec_model is not None and options.corpus:
        check_output_dir(options.word2vec_model)


def _read_notes(path: Path) -> str:
    try:
        return require_file(path, field="--notes").read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path, field="--notes") from None


def _gold_sets(gold: Path, limit: int | None) -> tuple[list[ReviewSet], dict[str, list[str]]]:
    """The first `limit` review sets of the gold file, and their reference summaries."""
    require_file(gold)
    sets = list(read_review_sets(gold))[:limit]
    references = {s.entity_id: s.summaries for s in sets}
    check_references(references, gold)
    return sets, references


def _prepare_word2vec(
    summarizers: list[Summarizer], options: LeaderboardOptions, log: Log
) -> list[Summarizer]:
    # only word2vec learns from --corpus here: lexrank keeps its entity-level IDF (better here)
    return [
        prepare(
            s,
            options.corpus,
            sample=options.sample,
            seed=options.seed,
            model=options.word2vec_model,
            log=log,
        )
        if s.name == "word2vec"
        else s
        for s in summarizers
    ]


def _baseline_entries(
    summarizers: Sequence[Summarizer],
    sets: Sequence[ReviewSet],
    references: Mapping[str, Sequence[str]],
    score: Scoring,
    options: LeaderboardOptions,
    log: Log,
) -> list[Entry]:
    entries = []
    for summarizer in summarizers:
        found, seconds = run_baseline(summarizer, sets, options.gold)
        if options.save_predictions is not None:
            write_predictions(
                options.save_predictions / f"{summarizer.name}.jsonl",
                [Prediction(entity_id=e, summary=s) for e, s in found.items()],
            )
        entries.append(Entry(summarizer.name, "baseline", score(found, references), seconds))
        log(f"{summarizer.name}: {seconds:.1f} s")
    return entries


def _settings(summarizers: Sequence[Summarizer], options: LeaderboardOptions) -> list[str]:
    settings = [
        f"Sentence-level baselines (lexrank, opinosis): {options.words}-word budget; "
        f"seed {options.seed}."
    ]
    return settings + [f"word2vec: {s.describe()}." for s in summarizers if s.name == "word2vec"]


def _cell(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def table(entries: Sequence[Entry]) -> str:
    """The Markdown table: one row per entry, a column for every metric some entry has ('–'
    in the rows without it: a metric group that failed part way)."""
    present = {m for entry in entries for m in entry.report.scores}
    columns = [(key, label) for key, label in COLUMNS if key in present]
    header = ["system", "kind"] + [label for _, label in columns]
    if "rouge1" in present:
        header.insert(header.index("R1") + 1, "R1 95% CI")
    header += ["words", "seconds"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * 2 + "--:|" * (len(header) - 2)]
    for entry in entries:
        means = entry.report.means
        cells = [entry.name, KINDS[entry.kind]]
        for key, _ in columns:
            cells.append(_cell(means.get(key)))
            if key == "rouge1":
                low, high = entry.report.intervals.get(key, (None, None))
                cells.append("–" if low is None else f"{low:.2f}–{high:.2f}")
        cells += [_cell(entry.report.lengths()["prediction_words"], 1), _cell(entry.seconds, 1)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def render(
    entries: Sequence[Entry],
    *,
    title: str,
    command: str,
    gold: Path,
    settings: Sequence[str],
    seconds: float,
    notes: str = "",
    not_computed: Mapping[str, str] | None = None,
) -> str:
    """The whole leaderboard page."""
    first = entries[0].report
    lengths = first.lengths()
    lines = [
        f"# {title}",
        "",
        "Generated by `denoisesum leaderboard`; to reproduce, from the repository root:",
        "",
        "```bash",
        command,
        "```",
        "",
        f"Gold: `{gold}`, {len(first.entity_ids)} entities, reference summaries of "
        f"{lengths['reference_words']:.1f} words on average. Rows: released system outputs, "
        "baselines run on the gold file's reviews, and any prediction files given. "
        f'The whole run took {seconds / 60:.1f} min ("seconds": a baseline\'s time to '
        "summarize every entity, after any training).",
        "",
        table(entries),
        "",
        SCORER_NOTE,
    ]
    if not_computed:
        lines += [
            "",
            "**Not computed.**",
            "",
            *[f"- `{group}`: {reason}" for group, reason in not_computed.items()],
        ]
    if settings:
        lines += ["", "**Baseline settings.**", "", *[f"- {s}" for s in settings]]
    if notes.strip():
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"
