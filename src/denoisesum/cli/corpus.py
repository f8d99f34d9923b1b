"""Commands that read a corpus and make something of it: stats, tokenize, vocab, rating,
aspects, opinion-set, topics."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from denoisesum.cli.app import app
from denoisesum.cli.options import (
    DEFAULT_CORPUS_OPTIONS,
    CorpusArg,
    CorpusOptions,
    SampleSeed,
    Workers,
    check_output_dir,
    check_output_file,
    checked_options,
    corpus_options_of,
    count_option,
    encode_corpus,
    rated_corpus_options,
    report_skips,
    say,
)
from denoisesum.errors import DenoiseSumError


@app.command()
@corpus_options_of()
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
    report_skips(reader)


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
@corpus_options_of()
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

    checked_options(VocabConfig, max_size=max_size, min_count=min_count)
    reader = corpus_options.reader(corpus)
    check_output_file(output, reader.paths)
    check_output_dir(cache or output.parent / "encoded")
    encoded = encode_corpus(reader, cache or output.parent / "encoded", workers)
    built = encoded.build_vocab(max_size, min_count)
    built.save(output)
    covered = int(encoded.counts[: len(built) - 4].sum()) / max(encoded.n_tokens, 1)
    typer.echo(
        f"{len(built):,} tokens in the vocabulary, covering {covered:.2%} of "
        f"{encoded.n_tokens:,} corpus tokens -> {output}"
    )


@app.command("rating")
@rated_corpus_options
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
    sample: count_option(
        100, 5_000_000, "Rated reviews sampled from CORPUS to train on."
    ) = 250_000,
    heldout_sample: count_option(10, 1_000_000, "Rated reviews sampled from --heldout.") = 20_000,
    max_features: count_option(10, 5_000_000, "Most frequent n-grams kept as features.") = 200_000,
    seed: SampleSeed = 0,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Train the rating model (stars a text reads as) on the corpus's own ratings; it measures
    the opinion of summaries and lets decoding follow their reviews' opinion."""
    from dataclasses import asdict

    from denoisesum.io import write_json
    from denoisesum.models.rating import REPORT_FILENAME
    from denoisesum.training.rating import rated_sample, train_rating_model

    check_output_dir(output)
    readers = [corpus_options.reader(paths) for paths in (corpus, heldout)]
    train = rated_sample(readers[0], sample, seed)
    held = rated_sample(readers[1], heldout_sample, seed)
    say(f"training on {len(train):,} rated reviews, reporting on {len(held):,}")
    model, report = train_rating_model(train, held, max_features=max_features)
    path = model.save(output)
    write_json(output / REPORT_FILENAME, asdict(report))
    typer.echo(json.dumps(asdict(report), indent=2))
    typer.echo(f"-> {path}", err=True)


@app.command("aspects")
@corpus_options_of("entity_field", "text_field", "skip_bad")
def aspects_command(
    corpus: CorpusArg,
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Directory to write aspects.json to.")
    ],
    model: Annotated[
        str,
        typer.Option(help="Model directory or installed name whose rating model tells opinions."),
    ] = "denoisesum-yelp",
    per_entity: count_option(1, 10_000, "Reviews read per entity.") = 12,
    max_reviews: count_option(100, 10_000_000, "Reviews read in all.") = 100_000,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Learn the aspect lexicon (what reviewers talk about: "broth", "front desk") that the
    opinions method reads sentences with; `fit` makes it too."""
    from denoisesum.models.rating import RatingModel
    from denoisesum.opinions.aspects import build_lexicon, evaluative_words, sample_reviews
    from denoisesum.progress import progress_bar
    from denoisesum.summarizer import resolve_model

    check_output_dir(output)
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
@rated_corpus_options
def opinion_set_command(
    corpus: CorpusArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Review-set file (JSONL).")],
    per_stratum: count_option(1, 100_000, "Businesses at most in each stratum.") = 100,
    size: count_option(1, 1000, "Rated reviews drawn per business.") = 8,
    seed: SampleSeed = 0,
    corpus_options: CorpusOptions = DEFAULT_CORPUS_OPTIONS,
) -> None:
    """Review sets stratified by their reviews' mean stars (mostly negative <= 2, mixed
    2.75-3.25, mostly positive >= 4.5), with the stars: the set `denoisesum opinion` scores."""
    from collections import Counter

    from denoisesum.evaluation.opinion import build_opinion_set
    from denoisesum.io import atomic_write

    check_output_file(output)
    reader = corpus_options.reader(corpus)
    sets = build_opinion_set(reader, per_stratum, seed, size)
    with atomic_write(output) as handle:
        handle.writelines(json.dumps(s, ensure_ascii=False) + "\n" for s in sets)
    counts = Counter(s["stratum"] for s in sets)
    typer.echo(f"{len(sets)} review sets ({dict(counts)}) -> {output}", err=True)


@app.command("topics")
@corpus_options_of()
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
    check_output_dir(output)
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
