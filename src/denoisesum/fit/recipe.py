"""The stages of `denoisesum fit`, each a small function over the stage's own Python API, and the
loop that runs them in order, skipping, resuming or refusing each (ledger.py).

    tokenize    the corpus, once, into work/encoded          data.encoded.EncodedCorpus
    lm          the cloze LM, for noising and to start the    training.lm.LMTrainer
                summarizer (--lm DIR: that one instead;
                --noise-lm DIR: another one to noise with)
    synthesize  (noisy reviews, summary) pairs in work/pairs  noising.pipeline.synthesize
    topics      the discriminator's topic model               topics.build.build_topics
    train       the summarizer in work/train                  training.denoiser
    decode      the decoding min_length: best dev ROUGE       evaluation.decoded
                (--dev), else the candidate summaries' median
                length; with --dev, the decoding levers kept;
                the mixed_band whose summaries of the held-    evaluation.heldout
                out businesses agree most with their reviews
    export      model.safetensors, config.json, vocab.json at MODEL_DIR's root
    evaluate    the exported model on businesses held out of   evaluation.heldout
                training: work/heldout, fit-report.json

With --from MODEL (adapt.py) the summarizer starts from that trained summarizer, with its
vocabulary, sizes, topic count and decoding; the lm stage then trains an LM for noising alone, or
none with --noise-lm.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from denoisesum.config import build, merge
from denoisesum.data.corpus import CorpusReader, FieldNames, estimate_records
from denoisesum.data.encoded import EncodedCorpus, content_fingerprint
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.data.synthetic import find_shards, iter_pairs
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import ConfigError, DenoiseSumError, InputError
from denoisesum.evaluation import heldout
from denoisesum.evaluation.decoded import choose_variant
from denoisesum.fit import adapt, compare, ledger
from denoisesum.fit.config import (
    FitConfig,
    apply_budget,
    flatten,
    load_fit_config,
)
from denoisesum.fit.presets import DEFAULT_PRESET, preset_settings
from denoisesum.fit.report import FitReport, seconds_text
from denoisesum.inference.policy import migrate_summarize, split_settings
from denoisesum.io import read_json, write_json
from denoisesum.models.rating import FILENAME as RATING
from denoisesum.models.store import (
    CONFIG,
    VOCAB,
    WEIGHTS,
    export_model_dir,
    load_bilm,
    read_settings,
)
from denoisesum.noising.pipeline import SMALL_CORPUS_SETTINGS, shortfall, synthesize
from denoisesum.noising.plan import review_set_sizes
from denoisesum.opinions.aspects import FILENAME as ASPECTS
from denoisesum.training.checkpoint import latest_checkpoint

Log = Callable[[str], None]
# a trainer's limits: changed later (a new session's time budget), they continue the stage from
# its checkpoint instead of being refused as other settings (the trainers resume with new limits)
LIMITS = ("train.max_steps", "train.max_minutes")
# the opinions method's aspect lexicon: from up to this many reviews of each entity, and in all
ASPECT_REVIEWS_PER_ENTITY, ASPECT_REVIEWS = 12, 100_000
# every setting's default: a setting added to the code since a stage was recorded is taken at
# its default there (ledger.changed_settings), so an upgrade does not refuse finished stages;
# but exports recorded before export.fp16_weights existed wrote fp32, and are made again
DEFAULT_SETTINGS = {**flatten(FitConfig()), "export.fp16_weights": False}


@dataclass
class FitRequest:
    """What the `fit` command line says."""

    corpus: list[str]
    output: Path
    preset: str = DEFAULT_PRESET
    dev: Path | None = None  # review sets with reference summaries
    budget_hours: float | None = None
    lm: Path | None = None  # a trained BiLM to reuse
    noise_lm: Path | None = None  # a trained BiLM to noise with (default: the LM above)
    config: Path | None = None
    overrides: list[str] = field(default_factory=list)
    fields: FieldNames = field(default_factory=FieldNames)
    skip_bad: bool = False
    base: str | None = None  # --from: a trained summarizer to adapt (a directory or a name)

    @property
    def trains_lm(self) -> bool:
        """An LM is trained unless one is given: --lm, or --noise-lm when --from starts the
        summarizer (then nothing else would read an LM)."""
        return self.lm is None and not (self.base is not None and self.noise_lm is not None)


@dataclass
class Stage:
    name: str
    output: Path
    settings: dict[str, Any]  # flattened; compared with the record's before any work
    inputs: Callable[[], dict[str, str]]  # digests of the earlier outputs it reads
    complete: Callable[[], bool]  # its output is there
    run: Callable[[], tuple[str, dict[str, Any]]]  # -> (one-line summary, result)
    what: str  # shown when it starts
    remake: bool = False  # made whole from its inputs: made again when they changed
    # made again, not refused, when its settings changed too: only a stage that nothing but the
    # export reads (the decoding choice), and the export itself (export.fp16_weights)
    settings_remake: bool = False
    limits: dict[str, Any] = field(default_factory=dict)  # flattened LIMITS (trainers only)
    # the files it makes, recorded by size and SHA-256: it is skipped only while they are intact
    made: Callable[[], list[Path]] = list


def files(directory: Path, nested: bool = True) -> list[Path]:
    """The files in `directory`, or only at its top (a trainer's: its checkpoints and caches,
    below, are its own to manage and change when it continues)."""
    found = directory.rglob("*") if nested else directory.glob("*")
    return sorted(path for path in found if path.is_file())


def without_limits(settings: dict[str, Any], prefix: str) -> tuple[dict, dict]:
    """Split a trainer stage's flattened settings into (the others, its LIMITS)."""
    keys = {f"{prefix}.{name}" for name in LIMITS}
    return (
        {k: v for k, v in settings.items() if k not in keys},
        {k: v for k, v in settings.items() if k in keys},
    )


def fit_config(request: FitRequest) -> FitConfig:
    """The preset, what --from takes from its model, what --dev implies (N from the dev sets,
    selection on dev ROUGE), --config, --set, then --budget."""
    settings = preset_settings(request.preset)
    if request.base is not None:
        if request.lm is not None:
            raise ConfigError(
                "--lm starts the summarizer from an LM and --from from a trained "
                "summarizer: give one (--noise-lm DIR noises the pairs with an LM)"
            )
        settings = merge(settings, adapt.base_settings(adapt.resolve_base(request.base)))
    base = build(FitConfig, settings)
    if request.dev is not None:
        base.synthesize.n_mean, base.synthesize.n_std = review_set_sizes(request.dev)
        base.train.train.select_on = "dev-rouge"
    cfg = load_fit_config(request.preset, request.config, request.overrides, base=base)
    if cfg.decode.levers and request.dev is None:
        raise ConfigError(
            "decode.levers are chosen on dev ROUGE: they need --dev (review sets "
            "with reference summaries)"
        )
    if cfg.train.train.select_on == "dev-rouge" and request.dev is None:
        raise ConfigError(
            "train.train.select_on = 'dev-rouge' needs --dev (review sets with reference summaries)"
        )
    if request.budget_hours is not None:
        apply_budget(cfg, request.budget_hours, train_lm=request.trains_lm)
    return cfg


def _dev_sets(path: Path) -> list:
    sets = list(read_review_sets(path))
    missing = [s.entity_id for s in sets if not s.summaries]
    if not sets or missing:
        raise InputError(
            "--dev needs review sets with reference summaries"
            + (f" (none for {', '.join(missing[:5])})" if missing else " (the file is empty)"),
            path=path,
            field="summaries",
        )
    return sets


class Recipe:
    def __init__(self, request: FitRequest, log: Log, progress: bool) -> None:
        self.log, self.progress = log, progress
        self.root = Path(request.output)
        self.work = self.root / "work"
        self.reader = CorpusReader(request.corpus, request.fields, skip_bad=request.skip_bad)
        self.base_dir = adapt.resolve_base(request.base) if request.base is not None else None
        # --from noises with MODEL's own noising LM when it has one, unless --lm or --noise-lm
        # say otherwise, or a run in this directory already trained one (its pairs were made
        # with it: resuming keeps it)
        self.shipped_noise_lm = None
        if (
            self.base_dir is not None
            and request.lm is None
            and request.noise_lm is None
            and ledger.read_record(self.work, "lm") is None
        ):
            self.shipped_noise_lm = adapt.noise_lm(self.base_dir)
            if self.shipped_noise_lm is not None:
                request = dataclasses.replace(request, noise_lm=self.shipped_noise_lm)
        self.request = request
        self.cfg = fit_config(request)
        self.dev_sets = _dev_sets(request.dev) if request.dev is not None else None
        for given in (request.lm, request.noise_lm):
            if given is not None:
                load_bilm(given)  # not a trained BiLM: an error before any work
        self.workers = self.cfg.workers or os.cpu_count() or 1
        self.lm_dir = Path(request.lm) if request.lm is not None else self.work / "lm"
        # the LM that noises may be another (e.g. larger) one than the LM the summarizer starts
        # from, which must have the summarizer's sizes
        self.noise_lm_dir = Path(request.noise_lm) if request.noise_lm is not None else self.lm_dir
        self.dirs = {
            "tokenize": self.work / "encoded",
            "lm": self.lm_dir,
            "synthesize": self.work / "pairs",
            "topics": self.work / "topics",
            "aspects": self.work / "aspects",
            "train": self.work / "train",
            "evaluate": self.work / "heldout",
        }
        self._corpus: EncodedCorpus | None = None

    # ---- what the stages read ---------------------------------------------------------------

    @property
    def corpus(self) -> EncodedCorpus:
        if self._corpus is None:
            self._corpus = EncodedCorpus(self.dirs["tokenize"])
        return self._corpus

    def _digests(self, *names: str) -> dict[str, str]:
        files = {
            "tokenize": [self.dirs["tokenize"] / "meta.json"],
            "lm": [self.lm_dir / WEIGHTS],
            "noise_lm": [self.noise_lm_dir / WEIGHTS],
            "synthesize": [self.dirs["synthesize"] / "manifest.json"],
            "topics": sorted(self.dirs["topics"].glob("topics.*")),
            "aspects": [self.dirs["aspects"] / ASPECTS],
            "train": [self.dirs["train"] / WEIGHTS, self.dirs["train"] / CONFIG],
            "export": [self.root / WEIGHTS, self.root / CONFIG],
        }
        out = {name: ledger.digest(files[name]) for name in names if name in files}
        if "decode" in names:
            out["decode"] = ledger.digest_value(self._decoding())
        if self.request.dev is not None and "dev" in names:
            out["dev"] = ledger.digest([Path(self.request.dev)])
        return out

    def _decoding(self) -> dict[str, Any]:
        return (ledger.read_record(self.work, "decode") or {}).get("result", {})

    def _relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix() if path != self.root else str(path)
        except ValueError:
            return str(path)

    # ---- the stages -------------------------------------------------------------------------

    def stages(self) -> list[Stage]:
        c = self.cfg
        fields = dataclasses.asdict(self.request.fields)
        out = [
            self._stage(
                "tokenize",
                "meta.json",
                flatten(
                    {
                        "corpus": content_fingerprint(self.reader.paths),
                        "fields": fields,
                        "skip_bad": self.request.skip_bad,
                    }
                ),
                dict,
                self.tokenize,
                f"tokenizing {len(self.reader.paths)} file(s)",
            ),
        ]
        if self.request.trains_lm:
            t = c.lm.train
            out.append(
                self._trainer_stage(
                    "lm",
                    lambda: self._digests("tokenize"),
                    self.train_lm,
                    f"training the cloze LM ({c.lm.model.hidden_dim}-unit LSTMs, up to "
                    f"{t.max_steps:,} steps{self._minutes(t.max_minutes)})",
                )
            )
        out.append(
            self._stage(
                "synthesize",
                "manifest.json",
                {**flatten(c.synthesize, "synthesize"), **self._held_out_settings()},
                self._synthesis_inputs,
                self.synthesize,
                f"making {c.synthesize.pairs:,} synthetic pairs",
            )
        )
        if c.train.model.discriminator:
            source = "synthesize" if c.topics.source == "pairs" else "tokenize"
            out.append(
                self._stage(
                    "topics",
                    "topics.json",
                    flatten(c.topics, "topics"),
                    lambda: self._digests(source),
                    self.topics,
                    f"the topic model ({c.topics.kind}, from the {c.topics.source})",
                    remake=True,
                )
            )
        t = c.train.train
        starts = () if c.train.train.init_model else ("lm",)  # else it does not read the LM
        out.append(
            self._trainer_stage(
                "train",
                lambda: self._digests(
                    "synthesize",
                    *starts,
                    "dev",
                    *(("topics",) if c.train.model.discriminator else ()),
                ),
                self.train,
                f"training the summarizer (up to {t.max_steps:,} steps"
                f"{self._minutes(t.max_minutes)}, selected on {t.select_on})",
            )
        )
        out.append(
            Stage(
                "decode",
                ledger.record_path(self.work, "decode"),
                # the held-out businesses' settings too: decode.mixed_bands is chosen on them
                {
                    **flatten(c.decode, "decode"),
                    **flatten(c.evaluate, "evaluate"),
                    "dev": self.request.dev is not None,
                },
                lambda: self._digests("train", "synthesize", "dev"),
                lambda: True,
                self.choose_decoding,
                "choosing the decoding (min_length, levers, mixed_band)",
                remake=True,
                settings_remake=True,
            )
        )
        out.append(
            self._stage(
                "aspects",
                ASPECTS,
                flatten(
                    {
                        "corpus": content_fingerprint(self.reader.paths),
                        "fields": fields,
                        "from": self.request.base,
                        "per_entity": ASPECT_REVIEWS_PER_ENTITY,
                        "max_reviews": ASPECT_REVIEWS,
                    }
                ),
                dict,
                self.aspects,
                "the aspect lexicon (what reviewers talk about), for the opinions method",
            )
        )
        out.append(
            Stage(
                "export",
                self.root,
                flatten(c.export, "export"),
                lambda: self._digests("train", "decode", "aspects"),
                lambda: all((self.root / f).is_file() for f in (WEIGHTS, CONFIG, VOCAB)),
                self.export,
                "exporting the model",
                remake=True,
                settings_remake=True,
                made=lambda: [self.root / f for f in (WEIGHTS, CONFIG, VOCAB)],
            )
        )
        if c.evaluate.entities:
            out.append(
                self._stage(
                    "evaluate",
                    "scores.json",
                    flatten(c.evaluate, "evaluate"),
                    lambda: self._digests("export"),
                    self.evaluate,
                    "scoring the model on the businesses held out of training",
                    remake=True,
                )
            )
        return out

    def _stage(self, name, marker, settings, inputs, run, what, nested=True, **options) -> Stage:
        """The stage that makes its directory (self.dirs[name]): complete when its `marker` file
        is there; the files it makes: those in the directory (nested=False: at its top only)."""
        directory = self.dirs[name]
        return Stage(
            name,
            directory,
            settings,
            inputs,
            lambda: (directory / marker).is_file(),
            run,
            what,
            made=lambda: files(directory, nested=nested),
            **options,
        )

    def _trainer_stage(self, name: str, inputs, run, what: str) -> Stage:
        """A trainer's stage (lm, train): complete when it has written results.json; its
        LIMITS kept apart from its other settings; the files at the top of its directory
        recorded, not its checkpoints and caches (its own to change when it continues)."""
        settings, limits = without_limits(flatten(getattr(self.cfg, name), name), name)
        return self._stage(
            name, "results.json", settings, inputs, run, what, nested=False, limits=limits
        )

    def _held_out_settings(self) -> dict[str, Any]:
        """The settings that choose the held-out businesses (synthesis leaves them out)."""
        e = self.cfg.evaluate
        return flatten(
            {
                "entities": e.entities,
                "min_reviews": e.min_reviews,
                "share": e.share,
                "seed": e.seed,
            },
            "evaluate",
        )

    def held_out(self) -> list[str]:
        """The ids of the businesses held out of training for the evaluate stage."""
        corpus = self.corpus
        return heldout.held_out_entities(corpus.entity, corpus.entities, self.cfg.evaluate)

    def _synthesis_inputs(self) -> dict[str, str]:
        """The corpus and the LM the pairs were noised with (its key stays "lm": the one LM of
        a fit without --noise-lm, so earlier runs' records still match)."""
        digests = self._digests("tokenize", "noise_lm")
        return {"tokenize": digests["tokenize"], "lm": digests["noise_lm"]}

    @staticmethod
    def _minutes(minutes: float) -> str:
        return f" or {minutes:g} minutes" if minutes else ""

    def tokenize(self) -> tuple[str, dict[str, Any]]:
        encoded = EncodedCorpus.build(
            self.reader,
            self.dirs["tokenize"],
            Tokenizer(),
            workers=self.workers,
            total=estimate_records(self.reader.paths),
        )
        self._corpus = encoded
        skipped = encoded.meta.get("skipped_bad_records", 0)
        if self.reader.skipped.count:
            self.log(self.reader.skipped.report())
        result = {
            "reviews": len(encoded),
            "entities": len(encoded.entities),
            "tokens": encoded.n_tokens,
            "skipped_bad_records": skipped,
        }
        return (
            f"{len(encoded):,} reviews of {len(encoded.entities):,} entities, "
            f"{encoded.n_tokens:,} tokens"
            + (f", {skipped:,} bad records skipped" if skipped else "")
        ), result

    def train_lm(self) -> tuple[str, dict[str, Any]]:
        from denoisesum.training.lm import LMTrainer

        out = self.dirs["lm"]
        trainer = LMTrainer(
            self.corpus,
            out,
            copy.deepcopy(self.cfg.lm),
            resume=latest_checkpoint(out) is not None,
            progress=self.progress,
        )
        self._note_start(trainer.state["step"])
        result = trainer.fit()
        held = result["heldout"]
        quality = (
            f"held-out perplexity {held['ppl']:.2f}" if held["tokens"] else "no held-out reviews"
        )
        return (
            f"{result['steps']:,} steps, {quality}, vocabulary {result['vocab_size']:,}, "
            f"{result['tokens_per_second']:,.0f} tokens/s"
        ), result

    def _note_start(self, step: int) -> None:
        if step:
            self.log(f"  continuing from the checkpoint of step {step:,}")

    def synthesize(self) -> tuple[str, dict[str, Any]]:
        s = self.cfg.synthesize
        manifest = synthesize(
            self.corpus,
            self.dirs["synthesize"],
            self.noise_lm_dir,
            copy.deepcopy(s),
            excluded=self.held_out(),
            workers=0 if self.workers == 1 else self.workers,
            progress=self.progress,
        )
        found = manifest["candidate_filter"]
        constraints = "custom" if s.candidates is not None else f"'{s.preset}'"
        if "fitted_lengths" in found:
            f = found["fitted_lengths"]
            given = "-".join(str(x) for x in f["given"])
            constraints += (
                f", lengths {f['min_tokens']}-{f['max_tokens']} tokens fitted to the corpus's"
                f" reviews (given {given})"
            )
        reuse = ""
        if found.get("pairs_per_candidate", 1) > 1:
            reuse = f", {found['pairs_per_candidate']:g} pairs per candidate"
        warning = shortfall(manifest)
        result = {
            "pairs": manifest["pairs"],
            "asked": s.pairs,
            "candidates": found,
            "warning": warning,
        }
        noised = (
            ""
            if self.noise_lm_dir == self.lm_dir
            else f"; noised with the LM in {self.noise_lm_dir}"
        )
        return (
            f"{manifest['pairs']:,} pairs of the {s.pairs:,} asked for; {found['eligible']:,}"
            f" of {found['reviews']:,} reviews qualify as candidate summaries ({constraints}"
            f" constraints){reuse}"
            + ("; too few candidates, see the warning" if warning else "")
            + noised
        ), result

    def aspects(self) -> tuple[str, dict[str, Any]]:
        """The corpus's aspect lexicon (opinions/aspects.py), joined with the base model's
        (--from) so that an adapted model knows both domains' aspects."""
        from denoisesum.opinions.aspects import (
            Lexicon,
            build_lexicon,
            evaluative_words,
            merge_lexicons,
            sample_reviews,
        )

        rating = self._rating_model()
        evaluative = evaluative_words(rating) if rating is not None else []
        reviews = sample_reviews(self.reader, ASPECT_REVIEWS_PER_ENTITY, ASPECT_REVIEWS)
        lexicon = build_lexicon(reviews, evaluative)
        if self.base_dir is not None and (self.base_dir / ASPECTS).is_file():
            lexicon = merge_lexicons(lexicon, Lexicon.load(self.base_dir))
        lexicon.save(self.dirs["aspects"])
        return (
            f"{len(lexicon.terms):,} aspects, from {len(reviews):,} reviews of "
            f"{lexicon.entities:,} entities",
            {"aspects": len(lexicon.terms), "reviews": len(reviews)},
        )

    def topics(self) -> tuple[str, dict[str, Any]]:
        from denoisesum.topics.build import build_topics

        t = self.cfg.topics
        sources = (
            [str(self.dirs["synthesize"])] if t.source == "pairs" else list(self.request.corpus)
        )
        model = build_topics(sources, lambda: self.reader, t.kind, t.lda(), log=self.log)
        model.save(self.dirs["topics"])
        if model.kind != "lda":
            return (
                f"{model.n_topics} categories over {len(model.entities):,} entities",
                {"kind": model.kind, "topics": model.n_topics},
            )
        return (
            f"{model.n_topics} topics over {len(model.words):,} words; the first: "
            f"{' '.join(model.top_words(0, 6))}"
        ), {"kind": model.kind, "topics": model.n_topics}

    def train(self) -> tuple[str, dict[str, Any]]:
        from denoisesum.training.denoiser import SummarizerTrainer

        cfg, out = copy.deepcopy(self.cfg.train), self.dirs["train"]
        if not cfg.train.init_model:  # else it continues a trained summarizer (its vocabulary)
            cfg.train.init_lm = str(self.lm_dir)
        if cfg.model.discriminator:
            cfg.data.topics = str(self.dirs["topics"])
        if cfg.train.select_on == "dev-rouge":
            cfg.train.dev_set = str(self.request.dev)
        trainer = SummarizerTrainer(
            self.dirs["synthesize"],
            out,
            cfg,
            resume=latest_checkpoint(out) is not None,
            progress=self.progress,
        )
        self._note_start(trainer.state["step"])
        result = trainer.fit()
        del trainer  # its memory maps of the pair cache, before compact_run removes it
        result["compacted_bytes"] = compact_run(out)
        start = read_json(out / "lm-init.json") if (out / "lm-init.json").is_file() else None
        rouge, loss = result["best_dev_rouge"], result["best_val_loss"]
        chosen = (
            f"dev ROUGE {rouge:.2f}"
            if rouge is not None
            else f"validation loss {loss:.4f}"
            if loss is not None
            else "the last model"
        )
        line = (
            f"{result['steps']:,} steps ({result['epochs']:.1f} epochs of "
            f"{result['train_pairs']:,} pairs), kept step {result['best_step']:,} by "
            f"{chosen}; {result['pairs_per_second']:.1f} pairs/s"
        )
        if start is not None:
            line += (
                f"; from the LM: {start['embedding_rows']:,} embedding rows, "
                f"{len(start['copied'])} of {len(start['copied']) + len(start['skipped'])}"
                " parts"
            )
        return line, {**result, "lm_init": start}

    def choose_decoding(self) -> tuple[str, dict[str, Any]]:
        d = self.cfg.decode
        line, result = self._choose_decoding()
        if d.shortlist is not None:
            result["shortlist"] = d.shortlist
            line += f"; shortlist {d.shortlist} (set)"
        if d.mixed_bands:
            band_line, bands = self._choose_band(result)
            result["bands"] = bands
            changes = result.setdefault("changes", {})
            changes["mixed_band"] = bands["mixed_band"]
            line += f"; {band_line}"
        return line, result

    def _choose_band(self, choice: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """decode.mixed_bands: the held-out businesses summarized with the decoding's own
        mixed_band and with each of these; the band kept is the one whose summaries' opinion
        agrees with their reviews' most often (the decoding's own on a tie). The shipped band
        was narrowed for MeanSum's ROUGE; a corpus without reference summaries has only the
        readers' side of that trade (docs/results/adaptation-choice.md)."""
        d = self.cfg.decode
        summarizer = dev_summarizer(self.dirs["train"], d.shortlist, self.cfg.train.train.device)
        own = summarizer.config.search
        options = {
            **choice.get("changes", {}),
            "min_words": min(choice["min_length"], own.max_words),
        }
        base = summarizer.denoisesum.decoding(options).policy
        ids, rating = self.held_out(), self._rating_model()
        unused = [
            why
            for missing, why in (
                (not base.avoid_contradiction, "its decoding does not avoid contradiction"),
                (not ids, "no business held out"),
                (rating is None, "no rating model"),
            )
            if missing
        ]
        if unused:
            kept = {"mixed_band": base.mixed_band, "how": unused[0]}
            return f"mixed_band {base.mixed_band:g} kept ({unused[0]})", kept
        summarizer.rating = rating
        sets = held_out_sets(self.corpus, ids, self.cfg.evaluate)
        rows = []
        for band in dict.fromkeys([base.mixed_band, *d.mixed_bands]):
            summaries = given_stars_summaries(summarizer, sets, **options, mixed_band=band)
            scores = self._held_out_scores(summaries, sets, rating)
            rows.append({"mixed_band": band, **scores})
            self.log(f"  mixed_band {band:g}: {heldout.scores_line(scores)}")
        best = best_band(rows, base.mixed_band)
        line = (
            f"mixed_band {best['mixed_band']:g} of {[r['mixed_band'] for r in rows]}: opinion "
            f"agrees {best['opinion_agrees']:.0%} on {len(sets)} held-out businesses"
        )
        return line, {"mixed_band": best["mixed_band"], "how": "held-out-agreement", "rows": rows}

    def _choose_decoding(self) -> tuple[str, dict[str, Any]]:
        d = self.cfg.decode
        if d.min_length is not None:
            return f"min_length {d.min_length} (set)", {"min_length": d.min_length, "how": "set"}
        lengths = candidate_lengths(self.dirs["synthesize"], d.summaries_sampled)
        if self.dev_sets is None:
            chosen = int(np.median(lengths))
            result = {"min_length": chosen, "how": "candidate-median", "summaries": len(lengths)}
            return (
                f"min_length {chosen}: the median length of {len(lengths):,} candidate "
                "summaries (no dev set)"
            ), result
        grid = d.min_lengths or sorted({int(np.percentile(lengths, q)) for q in (25, 50, 75)})
        sets = self.dev_sets[: d.dev_entities or None]
        device = self.cfg.train.train.device
        rows = search_min_length(self.dirs["train"], sets, grid, self.log, d.shortlist, device)
        best = max(rows, key=lambda row: row["mean"])
        line = (
            f"min_length {best['min_length']} of {grid}: dev ROUGE (mean of R1/R2/RL) "
            f"{best['mean']:.2f} on {len(sets)} review sets"
        )
        result = {"min_length": best["min_length"], "how": "dev-rouge", "search": rows}
        if d.levers:
            levers = compare_levers(
                self.dirs["train"],
                sets,
                best["min_length"],
                d.levers,
                self.log,
                d.shortlist,
                device,
            )
            chosen = choose_variant({n: r["mean"] for n, r in levers.items()})
            result.update(levers=levers, lever=chosen, changes=d.levers.get(chosen, {}))
            line += f"; levers: {chosen} kept ({levers[chosen]['mean']:.2f})"
        return line, result

    def export(self) -> tuple[str, dict[str, Any]]:
        from denoisesum.summarizer import load_model

        source, choice = self.dirs["train"], self._decoding()
        config = read_settings(source)
        summarize = config["summarize"] = migrate_summarize(config.get("summarize", {}))
        search = summarize.setdefault("search", {})
        changes = {  # the lever kept on dev, if any
            **choice.get("changes", {}),
            "min_words": min(choice["min_length"], search.get("max_words", 100)),
        }
        for part, values in split_settings(changes).items():
            summarize.setdefault(part, {}).update(values)
        if choice.get("shortlist") is not None:
            config["summarize"]["shortlist"] = choice["shortlist"]
        config["fit"] = {
            "preset": self.request.preset,
            "min_length": choice["how"],
            "select_on": config["train"]["select_on"],
        }
        if self.base_dir is not None:
            config["fit"]["from"] = self.request.base
            adapt.export_rating(self.base_dir, self.root)
        # the opinions method is the default where it has what it reads: the aspects learnt
        # here and a rating model (the base's; a corpus alone gives none)
        shutil.copyfile(self.dirs["aspects"] / ASPECTS, self.root / ASPECTS)
        config["method"] = "opinions" if (self.root / RATING).is_file() else "denoisesum"
        fp16 = self.cfg.export.fp16_weights
        export_model_dir(source, self.root, config, fp16=fp16)
        model, vocab, _ = load_model(self.root)  # what `summarize --model` will load
        params = sum(p.numel() for p in model.parameters())
        return (
            f"{params:,} parameters ({'fp16' if fp16 else 'fp32'}), "
            f"vocabulary {len(vocab):,}, min_length "
            f"{summarize['search']['min_words']}: denoisesum summarize REVIEW_SETS --model "
            f"{self.root}"
        ), {"parameters": params}

    def evaluate(self) -> tuple[str, dict[str, Any]]:
        """Summarize the held-out businesses with the exported model and score the summaries
        (evaluation/heldout.py); a warning when the model is not usable yet."""
        from denoisesum.summarizer import Summarizer

        out, e = self.dirs["evaluate"], self.cfg.evaluate
        ids = self.held_out()
        if not ids:
            return (
                f"no business held out (evaluate.entities {e.entities}; businesses with at "
                f"least {e.min_reviews} reviews: too few)"
            ), {"scores": None}
        sets = held_out_sets(self.corpus, ids, e)
        summarizer = Summarizer.from_pretrained(self.root, device=self.cfg.train.train.device)
        if summarizer.rating is None:
            summarizer.rating = self._rating_model()
        rating = summarizer.rating
        if rating is None:
            return "no rating model to read the summaries' opinion", {"scores": None}
        summaries = given_stars_summaries(summarizer, sets)
        scores = self._held_out_scores(summaries, sets, rating)
        out.mkdir(parents=True, exist_ok=True)
        write_json(
            out / "summaries.json",
            [{**s, "summary": summary} for s, summary in zip(sets, summaries, strict=True)],
        )
        write_json(out / "scores.json", {**scores, "domain_terms": self.domain_terms})
        failed = heldout.failures(scores)
        result = {
            "scores": scores,
            "held_out": ids,
            "usable": not failed,
            "warning": self._not_usable(failed, len(ids)) if failed else None,
            "few": compare.few_text(len(ids)),
        }
        line = f"{len(ids)} held-out businesses: {heldout.scores_line(scores)}"
        if self.base_dir is not None:
            result["base"] = self._against_base(ids, sets)
            base_scores = heldout.scores_line(result["base"]["scores"])
            line += f"; {self.request.base} on them: {base_scores}"
            if result["base"]["review_loss"] is not None:
                loss = result["base"]["review_loss"]
                line += f"; review loss {loss['model']:.3f} against {loss['base']:.3f}"
            write_json(out / "base.json", result["base"])
        return line, result

    def _against_base(self, ids: list[str], sets: list[dict]) -> dict[str, Any]:
        """The model --from started from, on the same held-out businesses (fit/compare.py): its
        summaries' scores, and both models' loss of the held-out reviews."""
        from denoisesum.summarizer import Summarizer

        base = Summarizer.from_pretrained(self.base_dir, device=self.cfg.train.train.device)
        if base.rating is None:
            base.rating = self._rating_model()
        scores = self._held_out_scores(given_stars_summaries(base, sets), sets, base.rating)
        targets = compare.review_targets(self.corpus, ids, self.cfg.evaluate.seed)
        loss = None
        if targets:
            mine = compare.by_business(targets, compare.review_loss(self.root, targets))
            theirs = compare.by_business(targets, compare.review_loss(self.base_dir, targets))
            loss = {**compare.paired(mine, theirs), "reviews": len(targets)}
        return {"model": self.request.base, "scores": scores, "review_loss": loss}

    def _rating_model(self):
        """The rating model that reads the held-out summaries: the base model's (--from; the
        export copies it), else the installed default model's, else None."""
        from denoisesum.models.rating import find_rating_model
        from denoisesum.summarizer import DEFAULT_MODEL_DIR

        source = self.base_dir or DEFAULT_MODEL_DIR
        return find_rating_model(source) if source.is_dir() else None

    @cached_property
    def domain_terms(self) -> list[str]:
        """The domain's terms the held-out measures count: the corpus's own words, against the
        base model's vocabulary (heldout.domain_terms); read once for the band choice and the
        evaluate stage."""
        base_tokens = None
        if self.base_dir is not None:
            base_tokens = read_json(self.base_dir / VOCAB).get("tokens")
        return heldout.domain_terms(self.corpus.types, self.corpus.counts, base_tokens)

    def _held_out_scores(self, summaries: list[str], sets: list[dict], rating) -> dict[str, Any]:
        """evaluation/heldout.py's measures of the summaries of held-out `sets`."""
        tokenize = self.corpus.tokenizer.tokenize
        return heldout.score(summaries, sets, rating, self.domain_terms, tokenize)

    def _not_usable(self, failed: list[str], businesses: int) -> str:
        """The plain warning, with what to change (the trainer's steps, the pairs made)."""
        train = (ledger.read_record(self.work, "train") or {}).get("result", {})
        pairs = (ledger.read_record(self.work, "synthesize") or {}).get("result", {})
        budget = (
            f"a larger --budget (rerunning with it continues from the checkpoint; this "
            f"run trained {train.get('steps', 0):,} steps)"
        )
        more = (
            f"more pairs (--set synthesize.pairs={2 * pairs.get('pairs', 0):,}; this run "
            f"made {pairs.get('pairs', 0):,})"
        )
        return (
            f"the model is not usable yet: on {businesses} businesses held out of training "
            f"{'; '.join(failed)}. Train longer with {budget}, or make {more}; a corpus "
            "with more reviews per business helps both"
        )

    # ---- the loop ---------------------------------------------------------------------------

    def _upgrade_corpus_record(self, record: dict[str, Any] | None, corpus: list[dict]) -> None:
        """A run made before the corpus was known by content (path, size, mtime) is taken as made
        from this corpus when every file's name and size agree, and its record is rewritten with
        the content fingerprint, so that upgrading does not refuse a run's finished stages."""
        old = (record or {}).get("settings", {}).get("corpus")
        if not (isinstance(old, list) and old and "mtime" in old[0]):
            return
        if [(Path(o["path"]).name, o["bytes"]) for o in old] == [
            (c["file"], c["bytes"]) for c in corpus
        ]:
            record["settings"]["corpus"] = corpus
            ledger.write_record(self.work, "tokenize", record)

    def _upgrade_synthesis_record(self, record: dict[str, Any] | None) -> None:
        """Pairs made before synthesize.fit_lengths and uses_per_candidate existed, every one
        asked for: those settings act only on a corpus with too few candidates, so they would
        have changed nothing, and the record takes the present values."""
        if record is None or not record.get("done"):
            return
        settings, result = record["settings"], record.get("result", {})
        keys = [f"synthesize.{name}" for name in SMALL_CORPUS_SETTINGS]
        if all(k in settings for k in keys) or result.get("pairs", 0) < result.get("asked", 1):
            return
        for key in keys:
            settings.setdefault(key, flatten(self.cfg.synthesize, "synthesize")[key])
        ledger.write_record(self.work, "synthesize", record)

    def run(self) -> FitReport:
        stages = self.stages()
        records = {s.name: ledger.read_record(self.work, s.name) for s in stages}
        self._upgrade_corpus_record(records["tokenize"], stages[0].settings["corpus"])
        self._upgrade_synthesis_record(records.get("synthesize"))
        for s in stages:  # every settings check before any work (a failed stage starts over)
            if (
                records[s.name] is not None
                and not s.settings_remake
                and not records[s.name].get("failed")
            ):
                recorded, _ = without_limits(records[s.name]["settings"], s.name)
                ledger.check_settings(
                    s.name, self._relative(s.output), recorded, s.settings, DEFAULT_SETTINGS
                )
        for s in stages:  # and, of a stage to skip that cannot make it again, its output
            if (records[s.name] or {}).get("done") and s.complete() and not s.remake:
                ledger.check_made(
                    s.name,
                    self._relative(s.output),
                    ledger.damaged(self.root, records[s.name].get("made", {})),
                )
        self.work.mkdir(parents=True, exist_ok=True)
        write_json(self.work / "fit-config.json", dataclasses.asdict(self.cfg))
        report = FitReport(
            self.root,
            preset=self.request.preset,
            dev=str(self.request.dev) if self.request.dev else None,
            budget_hours=self.request.budget_hours,
        )
        for number, stage in enumerate(stages, 1):
            if stage.name == "synthesize" and not self.request.trains_lm:
                given = self.lm_dir if self.request.lm is not None else self.noise_lm_dir
                summary = f"the BiLM in {given}"
                if self.shipped_noise_lm is not None:
                    summary = f"the noising LM of {self.request.base}, in {given}"
                report.add("lm", "given", str(given), summary=summary)
            if stage.name == "train" and not self.cfg.train.model.discriminator:
                report.add("topics", "not needed", "", summary="train.model.discriminator = false")
            label = f"[{number}/{len(stages)}] {stage.name}"
            try:
                self._run_stage(stage, records[stage.name], label, report)
            except BaseException as exc:
                cut = isinstance(exc, KeyboardInterrupt)
                report.add(
                    stage.name,
                    "interrupted" if cut else "failed",
                    self._relative(stage.output),
                    summary=str(exc)[:500],
                )
                report.write(interrupted_in=stage.name if cut else None)
                raise
            report.write()
        record = ledger.read_record(self.work, "evaluate") or {}
        report.data["quality"] = record.get("result")
        report.write(finished=True)
        return report

    def _mark_failed(self, name: str, exc: BaseException) -> None:
        """Note in a stage's record that it failed (not cut off): a rerun with other settings
        or inputs then starts it over instead of refusing them."""
        record = ledger.read_record(self.work, name)
        if record is not None and not record["done"]:
            ledger.write_record(
                self.work, name, {**record, "failed": str(exc)[:300] or type(exc).__name__}
            )

    def _after_failure(
        self, stage: Stage, record: dict[str, Any], inputs: dict[str, str], label: str
    ) -> dict[str, Any] | None:
        """A stage that failed in an earlier run: resumed as it was when its settings and inputs
        are the same, else started over (its output under work/ removed), so that fixing what
        made it fail needs no directory deleted by hand."""
        recorded, _ = without_limits(record["settings"], stage.name)
        changed = ledger.changed_settings(
            recorded, stage.settings, DEFAULT_SETTINGS
        ) + ledger.changed_inputs(record["inputs"], inputs)
        if not changed:
            return record
        self.log(
            f"{label}: it failed earlier ({record['failed']}); {', '.join(changed[:3])} "
            "changed since: starting it over"
        )
        output = stage.output.resolve()
        if output.is_dir() and self.work.resolve() in output.parents:
            shutil.rmtree(output)
        return None

    def _run_stage(
        self, stage: Stage, record: dict[str, Any] | None, label: str, report: FitReport
    ) -> None:
        where = self._relative(stage.output)
        inputs = stage.inputs()
        if record is not None and record.get("failed"):
            record = self._after_failure(stage, record, inputs, label)
        changed = ledger.changed_inputs(record["inputs"], inputs) if record is not None else []
        if record is not None and stage.settings_remake:
            changed += ledger.changed_settings(record["settings"], stage.settings, DEFAULT_SETTINGS)
        if changed and stage.remake:
            self.log(f"{label}: {', '.join(changed)} changed since it ran: making it again")
            record = None
        done_before = record is not None and record["done"] and stage.complete()
        damage = (
            ledger.damaged(self.root, record.get("made", {}))
            if done_before and stage.remake
            else []
        )  # run() checked the others
        if damage:
            self.log(
                f"{label}: its output changed since it ran ({ledger.damage_text(damage)}):"
                " making it again"
            )
            record, done_before = None, False
        if record is not None and (done_before or not record["done"]):
            ledger.check_inputs(stage.name, where, record["inputs"], inputs)
        continued = done_before and self._new_limits(stage, record, label)
        if continued:
            done_before = False
        if done_before:
            self.log(
                f"{label}: skipped (done earlier, in {seconds_text(record['seconds'])}): "
                f"{record['summary']}"
            )
            report.add(
                stage.name,
                "skipped",
                where,
                summary=record["summary"],
                seconds_when_done=record["seconds"],
                warning=record["result"].get("warning"),
            )
            return
        resumed = record is not None and not record["done"]  # cut off in an earlier run
        self.log(
            f"{label}: {stage.what} -> {where}"
            + (" (resuming: cut off in an earlier run)" if resumed else "")
        )
        entry = {
            "output": where,
            "settings": stage.settings,
            "limits": stage.limits,
            "inputs": inputs,
        }
        ledger.write_record(self.work, stage.name, {**entry, "done": False})
        start = time.perf_counter()
        try:
            summary, result = stage.run()
        except Exception as exc:  # failed, not cut off (KeyboardInterrupt is no Exception)
            self._mark_failed(stage.name, exc)
            raise
        seconds = time.perf_counter() - start
        ledger.write_record(
            self.work,
            stage.name,
            {
                **entry,
                "done": True,
                "seconds": seconds,
                "made": ledger.made(self.root, stage.made()),
                "summary": summary,
                "result": result,
            },
        )
        self.log(f"{label}: done in {seconds_text(seconds)}: {summary}")
        status = "continued" if continued else "resumed" if resumed else "ran"
        report.add(stage.name, status, where, seconds, summary, warning=result.get("warning"))

    def _new_limits(self, stage: Stage, record: dict[str, Any], label: str) -> bool:
        """True when a finished trainer stage's limits changed since it ran: it then continues
        from its last checkpoint up to the new limits (a lower one stops it at once)."""
        before = record.get("limits") or without_limits(record["settings"], stage.name)[1]
        if not stage.limits or before == stage.limits:
            return False
        if latest_checkpoint(stage.output) is None:
            raise DenoiseSumError(
                f"stage '{stage.name}' ({self._relative(stage.output)}) ran with other limits "
                f"({self._limits_text(before)}) and has no checkpoint to continue from: give the "
                f"same limits, or delete {self._relative(stage.output)} to train it again"
            )
        self.log(
            f"{label}: its limits changed since it ran ({self._limits_text(before)} -> "
            f"{self._limits_text(stage.limits)}): continuing from its checkpoint"
        )
        return True

    @staticmethod
    def _limits_text(limits: dict[str, Any]) -> str:
        return ", ".join(f"{key.split('.')[-1]} {value:g}" for key, value in sorted(limits.items()))


def compact_run(run: Path) -> int:
    """What a finished trainer's run directory holds that neither the later stages nor a
    continuation need as a copy, removed; returns the bytes freed. Its pair cache (data/: the
    shards' token ids, memory-mapped, and the topic distributions) is made again from the
    shards when training continues (seconds for thousands of pairs); the latest checkpoint's
    weights, when they are the kept model's byte for byte (training ended at its best step),
    become a hard link to run/model.safetensors (both are only ever replaced, never written
    in place, so neither changes the other). The checkpoint itself stays: continuing with a
    larger budget resumes from it, optimizer state and all."""
    freed = 0
    cache = run / "data"
    if cache.is_dir():
        freed += sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
        shutil.rmtree(cache)
    checkpoint, kept = latest_checkpoint(run), run / WEIGHTS
    if checkpoint is None or not kept.is_file():
        return freed
    copy_ = checkpoint / WEIGHTS
    if copy_.is_file() and not copy_.samefile(kept):
        size = copy_.stat().st_size
        if size == kept.stat().st_size and ledger.digest([copy_]) == ledger.digest([kept]):
            tmp = copy_.with_name(f".{copy_.name}.link")
            try:
                os.link(kept, tmp)
            except OSError:  # a file system without hard links: both copies stay
                return freed
            os.replace(tmp, copy_)
            freed += size
    return freed


def held_out_sets(corpus: EncodedCorpus, ids: list[str], cfg) -> list[dict]:
    """A review set per held-out business: up to cfg.reviews of its reviews (drawn with
    cfg.seed), as text (tokens joined by spaces) with their stars (None where unknown)."""
    from denoisesum.noising.pipeline import review_ids

    index = {entity: i for i, entity in enumerate(corpus.entities)}
    rng = np.random.default_rng([cfg.seed, 1])
    sets = []
    for entity in ids:
        reviews = np.flatnonzero(corpus.entity == index[entity])
        if len(reviews) > cfg.reviews:
            reviews = np.sort(rng.choice(reviews, size=cfg.reviews, replace=False))
        stars = [float(corpus.ratings[r]) for r in reviews]
        sets.append(
            {
                "entity_id": entity,
                "reviews": [
                    " ".join(corpus.types[t] for t in review_ids(corpus, int(r))) for r in reviews
                ],
                "ratings": [None if np.isnan(x) else x for x in stars],
            }
        )
    return sets


def best_band(rows: list[dict[str, Any]], own: float) -> dict[str, Any]:
    """The row of the band whose summaries agree most often with their reviews' opinion; on a
    tie the decoding's `own` band, then the narrower (the fewer two-sided summaries)."""
    return max(rows, key=lambda r: (r["opinion_agrees"], r["mixed_band"] == own, -r["mixed_band"]))


def given_stars_summaries(summarizer, sets: list[dict], **options: Any) -> list[str]:
    """The summaries of held_out_sets' `sets`, each review's stars given where the corpus has
    them, as a user with a rated corpus would; options: per-call (Summarizer.summarize's)."""
    ratings = [s["ratings"] if any(r is not None for r in s["ratings"]) else None for s in sets]
    results = summarizer.summarize_results([s["reviews"] for s in sets], ratings, **options)
    return [r.summary for r in results]


def candidate_lengths(pairs_dir: Path, limit: int) -> np.ndarray:
    """Lengths (tokens) of the first `limit` candidate summaries of the pairs: a uniform sample,
    since the synthesis plan draws candidates at random."""
    pairs = islice(iter_pairs(find_shards(pairs_dir)), limit or None)
    return np.array([len(pair.summary) for pair in pairs], dtype=np.int64)


def dev_summarizer(model_dir: Path, shortlist: int | None, device: str = "cpu"):
    """The model with its own settings, but `shortlist` when not None, on `device` (fit's
    train.train.device: auto, cpu or cuda)."""
    from denoisesum.summarizer import Summarizer, load_model

    model, vocab, config = load_model(model_dir)
    if shortlist is not None:
        config = dataclasses.replace(config, shortlist=shortlist)
    return Summarizer(model, vocab, config, device)


def search_min_length(
    model_dir: Path,
    sets: list,
    grid: list[int],
    log: Log,
    shortlist: int | None = None,
    device: str = "cpu",
) -> list[dict]:
    """Decode the review sets with each min_length of `grid` (the model's other settings) and
    score the summaries against the references (rouge-score F1): a row per value."""
    from denoisesum.evaluation.decoded import decode_and_score
    from denoisesum.evaluation.rouge import ROUGE_TYPES

    summarizer = dev_summarizer(model_dir, shortlist, device)
    cap = summarizer.config.search.max_words
    rows = []
    for value in grid:
        run = decode_and_score(summarizer, sets, "rouge", min_words=min(value, cap))
        rows.append(
            {
                "min_length": value,
                **{t: run.means[t] for t in ROUGE_TYPES},
                "mean": run.rouge_mean,
                "words": run.words,
            }
        )
        log(
            f"  min_length {value}: dev ROUGE mean {rows[-1]['mean']:.2f}, "
            f"{rows[-1]['words']:.1f} words"
        )
    return rows


def compare_levers(
    model_dir: Path,
    sets: list,
    min_length: int,
    levers: dict[str, dict],
    log: Log,
    shortlist: int | None = None,
    device: str = "cpu",
) -> dict[str, dict]:
    """Decode the review sets with the model's decoding at `min_length` ("base") and with each
    lever's changes on top; rouge-score means and, for the levers, paired tests against base."""
    from denoisesum.evaluation.decoded import decode_and_score
    from denoisesum.evaluation.report import compare

    summarizer = dev_summarizer(model_dir, shortlist, device)
    base = {"min_words": min(min_length, summarizer.config.search.max_words)}
    out, base_report = {}, None
    for name, changes in {"base": {}, **levers}.items():
        run = decode_and_score(summarizer, sets, "rouge", **{**base, **changes})
        out[name] = {"changes": changes, **run.means, "mean": run.rouge_mean, "words": run.words}
        if base_report is None:
            base_report = run.report
        else:
            out[name]["vs_base"] = {
                m: t.to_dict() for m, t in compare(run.report, base_report).items()
            }
        log(f"  {name}: dev ROUGE mean {out[name]['mean']:.2f}, {out[name]['words']:.1f} words")
    return out


def run_fit(request: FitRequest, log: Log = print, progress: bool = True) -> FitReport:
    """Run (or finish) every stage of the recipe into request.output; returns the report."""
    return Recipe(request, log, progress).run()
