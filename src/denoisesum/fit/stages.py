"""The work of each stage of `denoisesum fit` (recipe.py lists the stages and runs them in
order): StageWork holds what the stages share (the request, its resolved settings, the
directories, the tokenized corpus) and a method per stage, each returning (a one-line summary,
its result). Apart from recipe.py so that the loop that skips, resumes or refuses a stage reads
on its own, and each stage's work reads without it."""

from __future__ import annotations

import copy
import dataclasses
import os
import shutil
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from denoisesum.data.corpus import CorpusReader, estimate_records
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.evaluation import heldout
from denoisesum.evaluation.decoded import choose_variant
from denoisesum.fit import adapt, compare, ledger
from denoisesum.fit.decoding import (
    best_band,
    candidate_lengths,
    compare_levers,
    dev_summarizer,
    given_stars_summaries,
    held_out_sets,
    search_min_length,
)
from denoisesum.fit.opinions import make_opinion_parts
from denoisesum.fit.request import FitRequest, Log, fit_config, read_dev_sets
from denoisesum.inference.policy import migrate_summarize, split_settings
from denoisesum.io import read_json, write_json
from denoisesum.models.rating import FILENAME as RATING
from denoisesum.models.rating import REPORT_FILENAME as RATING_REPORT
from denoisesum.models.store import (
    CONFIG,
    VOCAB,
    WEIGHTS,
    export_model_dir,
    load_bilm,
    noise_lm,
    read_settings,
)
from denoisesum.noising.pipeline import shortfall, synthesize
from denoisesum.opinions.aspects import FILENAME as ASPECTS
from denoisesum.training.checkpoint import latest_checkpoint

# the opinions method's aspect lexicon: from up to this many reviews of each entity, and in all


class StageWork:
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
            self.shipped_noise_lm = noise_lm(self.base_dir)
            if self.shipped_noise_lm is not None:
                request = dataclasses.replace(request, noise_lm=self.shipped_noise_lm)
        self.request = request
        self.cfg = fit_config(request)
        self.dev_sets = read_dev_sets(request.dev) if request.dev is not None else None
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

    def held_out(self) -> list[str]:
        """The ids of the businesses held out of training for the evaluate stage."""
        corpus = self.corpus
        return heldout.held_out_entities(corpus.entity, corpus.entities, self.cfg.evaluate)

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
        """What the opinions method reads (fit/opinions.py)."""
        return make_opinion_parts(self.reader, self.base_dir, self.dirs["aspects"])

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
        for name in (RATING, RATING_REPORT):  # the corpus's own, where --from brought none
            if (self.dirs["aspects"] / name).is_file() and not (self.root / name).is_file():
                shutil.copyfile(self.dirs["aspects"] / name, self.root / name)
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
