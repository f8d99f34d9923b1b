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

This module lists the stages as data (Stage) and runs them; each stage's work is in stages.py,
the request and its settings in request.py, the decoding of dev and held-out sets in
decoding.py.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from denoisesum.data.encoded import content_fingerprint
from denoisesum.errors import DenoiseSumError
from denoisesum.fit import ledger
from denoisesum.fit.config import (
    FitConfig,
    flatten,
)
from denoisesum.fit.opinions import ASPECT_REVIEWS, ASPECT_REVIEWS_PER_ENTITY, RATED_REVIEWS
from denoisesum.fit.report import FitReport, seconds_text
from denoisesum.fit.request import FitRequest, Log
from denoisesum.fit.stages import StageWork
from denoisesum.io import write_json
from denoisesum.models.store import (
    CONFIG,
    VOCAB,
    WEIGHTS,
)
from denoisesum.noising.pipeline import SMALL_CORPUS_SETTINGS
from denoisesum.opinions.aspects import FILENAME as ASPECTS
from denoisesum.training.checkpoint import latest_checkpoint

# a trainer's limits: changed later (a new session's time budget), they continue the stage from
# its checkpoint instead of being refused as other settings (the trainers resume with new limits)
LIMITS = ("train.max_steps", "train.max_minutes")
# every setting's default: a setting added to the code since a stage was recorded is taken at
# its default there (ledger.changed_settings), so an upgrade does not refuse finished stages;
# but exports recorded before export.fp16_weights existed wrote fp32, and are made again
DEFAULT_SETTINGS = {**flatten(FitConfig()), "export.fp16_weights": False}


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


class Recipe(StageWork):
    # ---- the stages -------------------------------------------------------------------------

    def stages(self) -> list[Stage]:
        return self._data_stages() + self._model_stages()

    def _data_stages(self) -> list[Stage]:
        """tokenize, lm, synthesize, topics: the corpus, the LM and what they make."""
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
        return out

    def _model_stages(self) -> list[Stage]:
        """train, decode, aspects, export, evaluate: the summarizer and what it is shipped with."""
        c = self.cfg
        fields = dataclasses.asdict(self.request.fields)
        out = []
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
        out.append(self._decode_stage())
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
                        "rated_reviews": RATED_REVIEWS,
                    }
                ),
                dict,
                self.aspects,
                "the aspect lexicon (what reviewers talk about), for the opinions method",
            )
        )
        out.append(self._export_stage())
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

    def _decode_stage(self) -> Stage:
        """The decoding choice: made again, not refused, when its settings change (nothing but
        the export reads it)."""
        c = self.cfg
        return Stage(
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

    def _export_stage(self) -> Stage:
        """The model folder at MODEL_DIR's root: complete when its three files are there."""
        c = self.cfg
        return Stage(
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

    def _synthesis_inputs(self) -> dict[str, str]:
        """The corpus and the LM the pairs were noised with (its key stays "lm": the one LM of
        a fit without --noise-lm, so earlier runs' records still match)."""
        digests = self._digests("tokenize", "noise_lm")
        return {"tokenize": digests["tokenize"], "lm": digests["noise_lm"]}

    @staticmethod
    def _minutes(minutes: float) -> str:
        return f" or {minutes:g} minutes" if minutes else ""

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


def run_fit(request: FitRequest, log: Log = print, progress: bool = True) -> FitReport:
    """Run (or finish) every stage of the recipe into request.output; returns the report."""
    return Recipe(request, log, progress).run()
