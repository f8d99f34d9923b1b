"""Training the DenoiseSum summarizer on synthetic pairs (`denoisesum train`).

Loss = generation NLL (mean over summary tokens) + kl_weight * KL(p(z) || q(z)) (paper §3.3),
plus coverage_weight * the coverage loss (mean over summary tokens) when model.coverage is on:
the paper's second phase for Yelp, started from the first phase's model with train.init_model.
Selection and validation use NLL + KL only.
Adam (lr 1e-3), gradient norm clipped at 3, batches of 8 pairs (paper §4). The model is evaluated
on held-out pairs every `eval_every` steps; the best one by validation loss is exported to the run
directory, and training stops early after `patience` evaluations without improvement. With
select_on = "dev-rouge" the model is chosen by the ROUGE of its beam-search summaries of a dev
set, decoded with the run's [summarize] settings (length, n-gram blocking, shortlist), which the
exported config.json keeps, so the model is used as it was selected.

With train.ema_decay > 0 (not in the paper; 0 = off) an exponential moving average of the weights
(Polyak averaging, torch's AveragedModel) is kept beside them, and it is the averaged model that is
validated, scored on dev and exported: batches of 8 make the weights wander from step to step, and
the average sits in the middle of where they wander. Checkpoints keep it, so resuming is exact.

Crash safety as in the LM trainer: checkpoints every `save_every` steps and on Ctrl-C;
`resume=True` restarts from the latest checkpoint with the same weights, optimizer, RNG and
position in the epoch, so a resumed run computes exactly what an uninterrupted one would (on
CPU; CUDA kernels are not bitwise deterministic). Ctrl-C finishes the current step before saving
(a second Ctrl-C stops at once, keeping the previous checkpoint), so a checkpoint never holds a
half-done step.

Under torchrun (distributed.py) each process computes on its share of every batch of
`batch_size` pairs, the validation loss and dev ROUGE are computed on shares too, and rank 0
alone writes the run directory; a step computes the same update as with one process.

Run directory:
    model.safetensors, config.json, vocab.json   the best model ({"kind": "denoisesum", ...})
    checkpoints/step-NNNNNNNNN/, checkpoints/LATEST
    data/            the encoded pairs and the summaries' topic distributions (pairs.py)
    metrics.jsonl    training loss, pairs/s, validation loss; run-config.json; results.json
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm import tqdm

from denoisesum.config import check
from denoisesum.data.batch import review_word_counts
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.data.vocab import EOS_ID, PAD_ID, Vocab
from denoisesum.errors import ConfigError, DenoiseSumError, InputError
from denoisesum.io import write_json
from denoisesum.models.bilm import add_boundaries
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.models.store import VOCAB, read_model_dir, save_model_dir
from denoisesum.summarizer import Summarizer, SummarizerConfig
from denoisesum.training import distributed
from denoisesum.training import pairs as pair_data
from denoisesum.training.checkpoint import latest_checkpoint, load_state
from denoisesum.training.denoiser_config import (
    SummarizerRunConfig,
    autocast_dtype,
    pick_device,
    require_inputs,
    resumed_config,
)
from denoisesum.training.lm_init import init_from_lm_dir
from denoisesum.training.loop import ResumableTrainer, StepLogger
from denoisesum.training.pairs import PairCorpus


def supported_targets(batch) -> torch.Tensor:
    """[B, S] True where the teacher-forced target (the summary's words, then </s>) is </s> or
    a word that some input review of its pair holds; padding positions are False."""
    target = add_boundaries(batch.summary, batch.summary_lengths)[:, 1:]  # [B, S]
    vocab = int(max(target.max(), batch.reviews.max())) + 1
    counts = review_word_counts(batch.reviews, batch.review_pair, batch.n_pairs, vocab)
    held = counts > 0  # [B, V]
    held[:, PAD_ID] = False  # reviews' padding holds no word
    held[:, EOS_ID] = True
    return held.gather(1, target) & (target != PAD_ID)


class SummarizerTrainer(ResumableTrainer):
    def __init__(
        self,
        pairs_dir: str | Path,
        out_dir: str | Path,
        cfg: SummarizerRunConfig,
        vocab: Vocab | None = None,
        resume: bool = False,
        cache_dir: str | Path | None = None,
        on_step: Callable[[int, float], None] | None = None,
        progress: bool = True,
    ) -> None:
        self.out, self.on_step, self.progress = Path(out_dir), on_step, progress
        self.dist = distributed.setup()
        checkpoint = latest_checkpoint(self.out) if resume else None
        if resume and checkpoint is None:
            raise DenoiseSumError(f"--resume: no checkpoint found in {self.out}/checkpoints")
        saved = load_state(checkpoint) if checkpoint is not None else None
        if saved is not None:
            cfg = resumed_config(cfg, saved)
        check(cfg)  # a config made in Python has not been through config.build
        require_inputs(cfg)
        self.cfg, t = cfg, cfg.train
        if t.threads:
            torch.set_num_threads(t.threads)
        with self.dist.main_first():  # rank 0 builds the caches (pairs, topics), then the others
            self.corpus = PairCorpus.build(
                pairs_dir,
                cache_dir or self.out / "data",
                cfg.data.max_review_tokens,
                progress and self.dist.is_main,
            )
            weights, vocab = self._vocabulary(pairs_dir, checkpoint, saved, vocab)
            self.table = self.corpus.vocab_table(self.vocab)
            self.topics = self._topics(resumed=saved is not None)
        self.train_pairs, self.held_pairs = self._split()
        self.eval_pairs = self.held_pairs[: cfg.data.eval_pairs or None]
        self._build_model()
        self.state = {
            "step": 0,
            "epoch": 0,
            "batch_in_epoch": 0,
            "pairs": 0,
            "tokens": 0,
            "train_seconds": 0.0,
            "best_loss": math.inf,
            "best_step": 0,
            "evals_since_best": 0,
        }
        self.init_report: dict[str, Any] | None = None
        if self.dist.enabled:  # every rank its own dropout masks
            torch.manual_seed(self.dist.rank_seed(t.seed))
        self._load_weights(saved, weights, vocab)
        self.ema = self._moving_average(saved)
        # what training calls: DistributedDataParallel under torchrun, else the model itself
        self.train_model = self.dist.wrap(self.model)
        self.logger = StepLogger(
            self.out / "metrics.jsonl", self.state["step"], enabled=self.dist.is_main
        )
        self.dev_sets = self._dev_sets()

    # ---- setup ------------------------------------------------------------------------------

    def _vocabulary(
        self,
        pairs_dir: str | Path,
        checkpoint: Path | None,
        saved: dict[str, Any] | None,
        vocab: Vocab | None,
    ) -> tuple[dict[str, torch.Tensor] | None, Vocab | None]:
        """Set self.vocab: the checkpoint's (resuming), else the one given, train.init_model's,
        the LM's (vocab.source = "lm") or one built from the pairs. Returns (the weights read
        with it: the checkpoint's or train.init_model's, else None; the vocabulary given or
        read, which _load_weights reads as __init__ did)."""
        cfg, t, weights = self.cfg, self.cfg.train, None
        if saved is not None:
            weights, _, self.vocab = read_model_dir(checkpoint)
            if saved["data_signature"] != self.corpus.signature():
                raise DenoiseSumError(
                    f"--resume: the pairs in {pairs_dir} are not those this run was trained on"
                )
            return weights, vocab
        if t.init_model and vocab is None:
            weights, _, vocab = read_model_dir(t.init_model)
        if cfg.vocab.source == "lm" and vocab is None:
            vocab = Vocab.load(Path(t.init_lm) / VOCAB)
        self.vocab = vocab or self.corpus.build_vocab(cfg.vocab.max_size, cfg.vocab.min_count)
        cfg.model.vocab_size = len(self.vocab)
        return weights, vocab

    def _build_model(self) -> None:
        """The device, the autocast dtype, the model (seeded by train.seed), Adam and, for fp16,
        its loss scaler."""
        t = self.cfg.train
        self.device = self.dist.device(pick_device(t.device))
        self.amp = autocast_dtype(t.precision, self.device)
        torch.manual_seed(t.seed)
        self.model = DenoiseSum(self.cfg.model).to(self.device)
        self.optimizer = torch.optim.Adam(self._param_groups(), lr=t.lr)
        # fp16 needs loss scaling; bf16 has fp32's range and does not
        self.scaler = torch.amp.GradScaler("cuda") if self.amp == torch.float16 else None

    def _load_weights(
        self,
        saved: dict[str, Any] | None,
        weights: dict[str, torch.Tensor] | None,
        vocab: Vocab | None,
    ) -> None:
        """The model's first weights: the checkpoint's with its state (resuming), else the LM's
        matching ones (train.init_lm), else a trained summarizer's (train.init_model)."""
        t = self.cfg.train
        if saved is not None:
            self.model.load_state_dict(weights)
            self._restore(saved)
            self._restore_rank_rng(saved)
        elif t.init_lm:
            self.init_report = init_from_lm_dir(self.model, self.vocab, t.init_lm)
            if self.dist.is_main:
                write_json(self.out / "lm-init.json", self.init_report)
        elif t.init_model:
            self._start_from(weights if vocab is None else read_model_dir(t.init_model)[0])

    def _start_from(self, weights: dict[str, torch.Tensor]) -> None:
        """Load a trained summarizer's weights (train.init_model); only the coverage weights
        and the opinion table, which that model may lack, may be missing (both start at zero:
        the model starts as the one loaded)."""
        where = self.cfg.train.init_model
        try:
            result = self.model.load_state_dict(weights, strict=False)
        except RuntimeError as exc:  # wrong shapes
            raise ConfigError(
                f"train.init_model={where!r} does not fit this model: "
                f"{str(exc).splitlines()[-1].strip()}"
            ) from None
        missing = [
            k
            for k in result.missing_keys
            if not k.endswith("decoder.coverage") and k not in DenoiseSum.ZERO_INIT_KEYS
        ]
        if missing or result.unexpected_keys:
            raise ConfigError(
                f"train.init_model={where!r} does not fit this model (missing "
                f"{missing[:3]}, unexpected {result.unexpected_keys[:3]}): the "
                "[model] settings must be that model's, coverage aside"
            )

    def _param_groups(self) -> list[dict[str, Any]]:
        """Adam's parameter groups: every weight at train.lr, except the opinion table at
        train.opinion_lr when that is set (a second group)."""
        t, table = self.cfg.train, self.model.opinion
        if table is None or not t.opinion_lr:
            return [{"params": list(self.model.parameters())}]
        rest = [p for p in self.model.parameters() if p is not table.weight]
        return [{"params": rest}, {"params": [table.weight], "lr": t.opinion_lr}]

    def _moving_average(self, saved: dict[str, Any] | None) -> AveragedModel | None:
        """The averaged weights (train.ema_decay), from the checkpoint when it has them, else
        from the current weights (a run that turns averaging on when it resumes)."""
        decay = self.cfg.train.ema_decay
        if not decay:
            return None
        ema = AveragedModel(self.model, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=True)
        if saved is not None and saved.get("ema") is not None:
            ema.load_state_dict(saved["ema"])
        return ema

    @property
    def eval_model(self) -> DenoiseSum:
        """The model that is validated, scored on dev and exported."""
        return self.model if self.ema is None else self.ema.module

    def _topics(self, resumed: bool) -> np.ndarray | None:
        m, d = self.cfg.model, self.cfg.data
        if not m.discriminator:
            return None
        if not d.topics:
            raise DenoiseSumError(
                "model.discriminator is on but no topic model was given: make one with "
                "`denoisesum topics CORPUS -o TOPICS_DIR` and pass --topics TOPICS_DIR, or turn "
                "the discriminator off with --set model.discriminator=false"
            )
        matrix = pair_data.topic_matrix(self.corpus, d.topics)
        if self.cfg.model.n_topics != matrix.shape[1]:
            if resumed:
                raise DenoiseSumError(
                    f"the topic model in {d.topics} has {matrix.shape[1]} "
                    f"topics, this run's model {m.n_topics}"
                )
            m.n_topics = matrix.shape[1]
        return matrix

    def _dev_sets(self) -> list:
        t = self.cfg.train
        if t.select_on != "dev-rouge":
            return []
        sets = list(read_review_sets(t.dev_set))[: t.dev_entities or None]
        missing = [s.entity_id for s in sets if not s.summaries]
        if not sets or missing:
            raise InputError(
                "dev-rouge selection needs review sets with reference summaries"
                + (f" (none for {', '.join(missing[:5])})" if missing else ""),
                path=t.dev_set,
                field="summaries",
            )
        return sets

    def _split(self) -> tuple[np.ndarray, np.ndarray]:
        m = self.cfg.model
        # a pair needs a review of a kind the model reads (document noise can be empty when the
        # entity has a single review); an ablated model simply skips the others
        usable = ((self.corpus.n_segment > 0) & m.segment_noise) | (
            (self.corpus.n_document > 0) & m.document_noise
        )
        return pair_data.split_pairs(self.corpus, self.cfg.data, usable, self.cfg.train.seed)

    def _restore(self, saved: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(saved["optimizer"])
        if self.scaler is not None and saved.get("scaler"):
            self.scaler.load_state_dict(saved["scaler"])
        torch.set_rng_state(saved["torch_rng"])
        if self.device.type == "cuda" and saved.get("cuda_rng") is not None:
            torch.cuda.set_rng_state_all(saved["cuda_rng"])
        self.state = saved["progress"]

    def config_dict(self) -> dict[str, Any]:
        """config.json of the exported model: what the Summarizer loader reads ("kind", "model"),
        plus the settings it was trained with."""
        run = dataclasses.asdict(self.cfg)
        return {
            "kind": "denoisesum",
            "model": run.pop("model"),
            "train": run.pop("train"),
            **run,
            "summarize": dataclasses.asdict(self.summarize_config()),
        }

    def summarize_config(self) -> SummarizerConfig:
        # reviews are cut at inference as they were cut in training
        return dataclasses.replace(
            self.cfg.summarize, max_review_tokens=self.cfg.data.max_review_tokens
        )

    def _checkpoint_state(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else None,
            "ema": self.ema.state_dict() if self.ema is not None else None,
            "progress": dict(self.state),
            "run_config": dataclasses.asdict(self.cfg),
            "data_signature": self.corpus.signature(),
        }

    # ---- training ---------------------------------------------------------------------------

    def batch(self, pairs: np.ndarray, hide_opinion: np.ndarray | None = None):
        m = self.cfg.model
        return pair_data.collate(
            self.corpus,
            self.table,
            pairs,
            self.cfg.data,
            self.topics,
            m.segment_noise,
            m.document_noise,
            hide_opinion,
        ).to(self.device)

    def _hidden_opinions(self, pairs: np.ndarray, mine: np.ndarray) -> np.ndarray | None:
        """bool [len(mine)]: which of this rank's pairs train with their rating hidden
        (train.opinion_dropout). Drawn for the whole global batch `pairs` from a stream of
        (seed, step) alone: the same pairs whatever the number of processes, the same after a
        resume, and no draw from torch's generator (dropout masks stay those of a run without
        opinion)."""
        t = self.cfg.train
        if not self.cfg.model.opinion or not t.opinion_dropout:
            return None
        rng = np.random.default_rng([t.seed, 3, self.state["step"]])
        hidden = set(pairs[rng.random(len(pairs)) < t.opinion_dropout].tolist())
        return np.array([p in hidden for p in mine.tolist()], dtype=bool)

    def _epoch_order(self, epoch: int) -> list:
        t = self.cfg.train
        order = pair_data.epoch_batches(len(self.train_pairs), t.batch_size, t.seed, epoch)
        return [self.train_pairs[batch] for batch in order]

    def _autocast(self):
        if self.amp is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp)

    def _should_stop(self) -> bool:
        t = self.cfg.train
        stalled = bool(t.patience) and self.state["evals_since_best"] >= t.patience
        return super()._should_stop() or stalled

    def _train_step(self, pairs: np.ndarray, bar: tqdm) -> None:
        """One step on the global batch `pairs` (this rank's share of it when distributed)."""
        start = time.perf_counter()
        mine, counted = self.dist.shard(pairs)
        batch = self.batch(mine, self._hidden_opinions(pairs, mine))
        out = self._forward(batch, self.train_model, weighted=True)
        if self.dist.enabled:
            out = self._global_loss(out, len(mine) if counted else 0, len(pairs))
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is not None:
            self.scaler.scale(out["loss"]).backward()
            self.scaler.unscale_(self.optimizer)
        else:
            out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.train.grad_clip)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        if self.ema is not None:
            self.ema.update_parameters(self.model)
        value = out["value"] if self.dist.enabled else out["loss"].item()
        seconds = time.perf_counter() - start
        s = self.state
        s["step"] += 1
        s["pairs"] += len(pairs)
        s["tokens"] += out["n_tokens"]
        s["train_seconds"] += seconds
        if not math.isfinite(value):
            raise DenoiseSumError(
                f"training diverged at step {s['step']} (loss {value}); lower train.lr"
            )
        bar.update(1)
        bar.set_postfix(loss=f"{value:.3f}", pairs_s=f"{len(pairs) / seconds:.1f}")
        self._last_loss = value
        if s["step"] % self.cfg.train.log_every == 0:
            nll, kl, cov = (
                out[k].item() if torch.is_tensor(out[k]) else out[k]
                for k in ("nll", "kl", "coverage")
            )
            self.logger.log(
                step=s["step"],
                loss=value,
                nll=nll,
                kl=kl,
                **({"coverage": cov} if self.cfg.model.coverage else {}),
                pairs_per_s=len(pairs) / seconds,
                epoch=s["epoch"],
                pairs=s["pairs"],
            )

    def _forward(
        self, batch, model: torch.nn.Module | None = None, weighted: bool = False
    ) -> dict[str, Any]:
        """The model's losses on `batch`, summed into "loss"; `weighted` (training steps): the
        NLL with train.unsupported_weight on the target words no input review holds (still a
        mean over all target tokens, so its scale stays the paper's)."""
        with self._autocast():
            out = (self.model if model is None else model)(batch)
        t = self.cfg.train
        if weighted and t.unsupported_weight != 1.0:
            weight = torch.where(supported_targets(batch), 1.0, t.unsupported_weight)
            out["nll"] = (out["token_nll"] * weight).sum() / out["n_tokens"]
        out["loss"] = out["nll"] + t.coverage_weight * out["coverage"] + t.kl_weight * out["kl"]
        return out

    def _global_loss(self, out: dict[str, Any], pairs: int, global_pairs: int) -> dict[str, Any]:
        """This rank's share of the loss of the whole batch (`pairs` of its `global_pairs`
        counted; 0 for a weight-0 stand-in). The NLL is a mean over the batch's target tokens
        and the KL a mean over its pairs, so each rank weights its means by its share of them,
        times the world size W: DDP's gradient average over the ranks is then the gradient of
        the single-process loss. `nll`, `kl`, `n_tokens` and `value` become the whole batch's.
        """
        t = self.cfg.train
        tokens = out["n_tokens"] if pairs else 0
        nll, kl, cov = out["nll"], out["kl"], out["coverage"]
        n_tokens, nll_sum, kl_sum, cov_sum = self.dist.sum(
            tokens,
            float(nll.detach()) * tokens,
            float(kl.detach()) * pairs,
            float(cov.detach()) * tokens,
        )
        w = self.dist.world_size
        # the coverage loss is a mean over target tokens, like the NLL
        out["loss"] = w * (
            (nll + t.coverage_weight * cov) * (tokens / n_tokens)
            + t.kl_weight * kl * (pairs / global_pairs)
        )
        out["nll"], out["kl"] = nll_sum / n_tokens, kl_sum / global_pairs
        out["coverage"] = cov_sum / n_tokens
        out["n_tokens"] = int(n_tokens)
        out["value"] = out["nll"] + t.coverage_weight * out["coverage"] + t.kl_weight * out["kl"]
        return out

    @torch.no_grad()
    def evaluate(self, pairs: np.ndarray | None = None) -> dict[str, float]:
        """Validation loss on held-out pairs: token-averaged NLL, pair-averaged KL."""
        pairs = self.eval_pairs if pairs is None else pairs
        model = self.eval_model
        was_training = model.training
        model.eval()
        nll = kl = 0.0
        tokens = 0
        size = self.cfg.train.batch_size
        starts = range(0, len(pairs), size)[self.dist.rank :: self.dist.world_size]  # a share each
        for begin in starts:
            chunk = pairs[begin : begin + size]
            out = self._forward(self.batch(chunk), model)
            nll += float(out["token_nll"].float().sum())
            kl += float(out["kl"]) * len(chunk)
            tokens += out["n_tokens"]
        model.train(was_training)
        nll, kl, tokens = self.dist.sum(nll, kl, tokens)
        tokens = int(tokens)
        nll, kl = nll / max(tokens, 1), kl / max(len(pairs), 1)
        return {
            "nll": nll,
            "ppl": math.exp(min(nll, 50.0)),
            "kl": kl,
            "loss": nll + self.cfg.train.kl_weight * kl,
            "pairs": len(pairs),
            "tokens": tokens,
        }

    def dev_rouge(self) -> dict[str, float]:
        """rouge-score F1 (0-100) of the current model's beam-search summaries of the dev sets."""
        from denoisesum.evaluation.decoded import decode_and_score
        from denoisesum.evaluation.rouge import ROUGE_TYPES

        model = self.eval_model
        was_training = model.training
        world = self.dist.world_size
        mine = self.dev_sets[self.dist.rank :: world]  # distributed: each rank decodes a share
        per_entity = []
        if mine:
            summarizer = Summarizer(model, self.vocab, self.summarize_config(), self.device)
            scores = decode_and_score(summarizer, mine, "rouge").report.scores
            per_entity = [{t: scores[t][i] for t in ROUGE_TYPES} for i in range(len(mine))]
        model.train(was_training)  # the Summarizer switched it to eval mode
        shares = self.dist.all_gather(per_entity)
        scores = [shares[i % world][i // world] for i in range(len(self.dev_sets))]
        out = {t: float(np.mean([x[t] for x in scores])) for t in ROUGE_TYPES}
        return {**out, "mean": float(np.mean(list(out.values())))}

    def _evaluate_and_keep_best(self) -> None:
        """Score the model (held-out synthetic loss, and dev ROUGE when selecting on it) and
        export it when the selection criterion improves (lower is better)."""
        s = self.state
        s["evaluated_step"] = s["step"]
        record: dict[str, Any] = {"step": s["step"]}
        criterion = None
        if len(self.eval_pairs):
            result = self.evaluate()
            criterion = result["loss"]
            record.update(
                val_loss=result["loss"],
                val_nll=result["nll"],
                val_ppl=result["ppl"],
                val_kl=result["kl"],
            )
        if self.cfg.train.select_on == "dev-rouge":
            rouge = self.dev_rouge()
            criterion = -rouge["mean"]
            record.update({f"dev_{k}": v for k, v in rouge.items()})
        if criterion is None:  # nothing to select on: the latest model is the one exported
            if self.dist.is_main:
                save_model_dir(self.out, self.eval_model, self.config_dict(), self.vocab)
            s["best_step"] = s["step"]
            return
        improved = criterion < s["best_loss"]
        if improved:
            s["best_loss"], s["best_step"], s["evals_since_best"] = criterion, s["step"], 0
            if self.dist.is_main:
                save_model_dir(self.out, self.eval_model, self.config_dict(), self.vocab)
        else:
            s["evals_since_best"] += 1
        self.logger.log(**record, best=improved)

    def _finish(self) -> dict[str, Any]:
        s = self.state
        if s.get("evaluated_step") != s["step"]:
            self._evaluate_and_keep_best()  # a time limit may stop between evaluations
        dev = self.cfg.train.select_on == "dev-rouge"
        summary = {
            "steps": s["step"],
            "epochs": s["pairs"] / len(self.train_pairs),
            "best_step": s["best_step"],
            "select_on": self.cfg.train.select_on,
            "best_val_loss": s["best_loss"] if math.isfinite(s["best_loss"]) and not dev else None,
            "best_dev_rouge": -s["best_loss"] if math.isfinite(s["best_loss"]) and dev else None,
            "stopped_early": bool(self.cfg.train.patience)
            and s["evals_since_best"] >= self.cfg.train.patience,
            "train_pairs": len(self.train_pairs),
            "heldout_pairs": len(self.held_pairs),
            "train_seconds": s["train_seconds"],
            "pairs_per_second": s["pairs"] / max(s["train_seconds"], 1e-9),
            "vocab_size": len(self.vocab),
            "device": str(self.device),
            "threads": torch.get_num_threads(),
            "processes": self.dist.world_size,
        }
        if self.dist.is_main:
            write_json(self.out / "results.json", summary)
        return summary
