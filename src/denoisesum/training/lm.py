"""Training the bidirectional cloze LM (`denoisesum train-lm`).

Crash safety: checkpoints every `save_every` steps and on Ctrl-C; `resume=True` restarts from the
latest checkpoint with the same model, optimizer, schedule, RNG and position in the epoch, so a
resumed run computes exactly what an uninterrupted run would have.

Under torchrun (distributed.py) each process computes on its share of the segments of every
batch and of the held-out evaluation; rank 0 alone writes the output directory.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm import tqdm

from denoisesum.config import Range, at_least
from denoisesum.data.encoded import EncodedCorpus
from denoisesum.data.vocab import SPECIALS, Vocab
from denoisesum.errors import DenoiseSumError
from denoisesum.io import write_json
from denoisesum.models.bilm import BiLM, BiLMConfig
from denoisesum.models.store import read_model_dir, save_model_dir
from denoisesum.training import distributed, lm_data
from denoisesum.training.checkpoint import latest_checkpoint, load_state
from denoisesum.training.distributed import SINGLE, Distributed
from denoisesum.training.loop import LOOP_BOUNDS, ResumableTrainer, StepLogger


@dataclass
class VocabConfig:
    max_size: int = 30000  # including the 4 special tokens
    min_count: int = 3
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "max_size": at_least(5, "the 4 special tokens and a word"),
        "min_count": at_least(1),
    }


@dataclass
class LMTrainConfig:
    batch_tokens: int = 4096  # padded tokens per batch
    max_len: int = 80  # reviews are cut into segments of at most this many words
    lr: float = 2e-3
    warmup_steps: int = 200
    max_steps: int = 10000
    max_minutes: float = 0.0  # stop (and save) after this much training time; 0 = no limit
    grad_clip: float = 1.0
    eval_every: int = 500
    save_every: int = 500
    eval_reviews: int = 2000  # held-out reviews scored at each evaluation (all at the end)
    heldout_percent: float = 1.0  # entities held out for perplexity
    seed: int = 1
    threads: int = 0  # torch CPU threads; 0 = all cores
    keep_checkpoints: int = 2
    BOUNDS: ClassVar[dict[str, Range]] = {
        **LOOP_BOUNDS,
        **dict.fromkeys(("batch_tokens", "max_len"), at_least(1)),
        **dict.fromkeys(("warmup_steps", "eval_reviews"), at_least(0)),
        "heldout_percent": Range(0, 100, high_open=True),
    }


@dataclass
class LMRunConfig:
    model: BiLMConfig = field(default_factory=BiLMConfig)
    vocab: VocabConfig = field(default_factory=VocabConfig)
    train: LMTrainConfig = field(default_factory=LMTrainConfig)


def lr_factor(step: int, cfg: LMTrainConfig) -> float:
    """Linear warm-up, then cosine decay to 10% of the peak at max_steps."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps))
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def evaluate(
    model: BiLM,
    corpus: EncodedCorpus,
    table: np.ndarray,
    segments: lm_data.Segments,
    batch_tokens: int,
    dist: Distributed = SINGLE,
) -> dict[str, float]:
    """Held-out cross-entropy (nats/token), perplexity and the share of <unk> targets (with
    several processes, each scores a share of the batches; all get the totals)."""
    was_training = model.training
    model.eval()
    total, tokens, unk = 0.0, 0, 0
    batches = lm_data.fixed_batches(segments.length, batch_tokens)
    for batch in batches[dist.rank :: dist.world_size]:
        ids, lengths = lm_data.collate(corpus, table, segments, batch)
        loss, n = model(ids, lengths)
        total += float(loss) * n
        tokens += n
        unk += int((ids == 1).sum())
    model.train(was_training)
    total, tokens, unk = dist.sum(total, tokens, unk)
    tokens, unk = int(tokens), int(unk)
    nll = total / max(tokens, 1)
    return {"nll": nll, "ppl": math.exp(nll), "tokens": tokens, "unk_rate": unk / max(tokens, 1)}


class LMTrainer(ResumableTrainer):
    desc = "train-lm"

    def __init__(
        self,
        corpus: EncodedCorpus,
        out_dir: str | Path,
        cfg: LMRunConfig,
        vocab: Vocab | None = None,
        resume: bool = False,
        on_step: Callable[[int, float], None] | None = None,
        progress: bool = True,
    ) -> None:
        self.corpus, self.out, self.cfg, self.on_step = corpus, Path(out_dir), cfg, on_step
        self.progress = progress
        self.dist = distributed.setup()
        t = cfg.train
        if t.threads:
            torch.set_num_threads(t.threads)
        checkpoint = latest_checkpoint(self.out) if resume else None
        if resume and checkpoint is None:
            raise DenoiseSumError(f"--resume: no checkpoint found in {self.out}/checkpoints")
        if checkpoint is not None:
            weights, saved_cfg, self.vocab = read_model_dir(checkpoint)
            cfg.model = BiLMConfig(**saved_cfg["model"])
        else:
            self.vocab = vocab or corpus.build_vocab(cfg.vocab.max_size, cfg.vocab.min_count)
            if len(self.vocab) <= len(SPECIALS):  # a model of <unk> alone: nothing to learn
                raise DenoiseSumError(
                    f"the vocabulary has no word: none of the corpus' {len(corpus.types):,} "
                    f"token types occurs vocab.min_count={cfg.vocab.min_count} times; lower "
                    "vocab.min_count or give a larger corpus"
                )
            cfg.model.vocab_size = len(self.vocab)
        self.table = corpus.vocab_table(self.vocab)
        train_reviews, held_reviews = lm_data.split_reviews(corpus, t.heldout_percent)
        if len(train_reviews) == 0:
            raise DenoiseSumError("no training reviews (corpus empty, or all entities held out)")
        self.train_segments = lm_data.make_segments(corpus, train_reviews, t.max_len)
        self.held_segments = lm_data.make_segments(corpus, held_reviews, t.max_len)
        self.eval_segments = lm_data.make_segments(
            corpus, held_reviews[: t.eval_reviews], t.max_len
        )
        torch.manual_seed(t.seed)
        self.model = BiLM(cfg.model)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=t.lr)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: lr_factor(step, t)
        )
        self.state = {
            "step": 0,
            "epoch": 0,
            "batch_in_epoch": 0,
            "tokens": 0,
            "train_seconds": 0.0,
            "best_nll": math.inf,
        }
        if self.dist.enabled:  # every rank its own dropout masks
            torch.manual_seed(self.dist.rank_seed(t.seed))
        if checkpoint is not None:
            self.model.load_state_dict(weights)
            saved = load_state(checkpoint)
            self._restore(saved)
            self._restore_rank_rng(saved)
        # DistributedDataParallel under torchrun; an adaptive-softmax tail cluster no target of
        # a rank's share falls in is left out of its graph, hence find_unused_parameters
        self.train_model = self.dist.wrap(self.model, find_unused_parameters=True)
        self.logger = StepLogger(
            self.out / "metrics.jsonl", self.state["step"], enabled=self.dist.is_main
        )

    def _restore(self, saved: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])
        self.state = saved["progress"]

    def config_dict(self) -> dict[str, Any]:
        return {"kind": "bilm", **dataclasses.asdict(self.cfg)}

    def _checkpoint_state(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "progress": dict(self.state),
        }

    def _epoch_order(self, epoch: int) -> list:
        t = self.cfg.train
        return lm_data.epoch_batches(self.train_segments.length, t.batch_tokens, t.seed, epoch)

    def _train_step(self, batch: np.ndarray, bar: tqdm) -> None:
        """One step on the global batch (this rank's share of its segments when distributed)."""
        start = time.perf_counter()
        mine, counted = self.dist.shard(batch)
        ids, lengths = lm_data.collate(self.corpus, self.table, self.train_segments, mine)
        loss, n = self.train_model(ids, lengths)
        objective, value = loss, None
        if self.dist.enabled:  # the loss is a mean over words: weight by this rank's share
            n = n if counted else 0
            total, loss_sum = self.dist.sum(n, float(loss.detach()) * n)
            objective = self.dist.world_size * (n / total) * loss
            n, value = int(total), loss_sum / total
        self.optimizer.zero_grad(set_to_none=True)
        objective.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.train.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        seconds = time.perf_counter() - start
        self.state["step"] += 1
        self.state["tokens"] += n
        self.state["train_seconds"] += seconds
        value = loss.item() if value is None else value
        if not math.isfinite(value):
            raise DenoiseSumError(
                f"training diverged at step {self.state['step']} (loss {value}); "
                "lower train.lr or train.grad_clip"
            )
        bar.update(1)
        bar.set_postfix(loss=f"{value:.3f}", tok_s=f"{n / seconds:.0f}")
        if self.state["step"] % 50 == 0:
            self.logger.log(
                step=self.state["step"],
                loss=value,
                tokens_per_s=n / seconds,
                lr=self.scheduler.get_last_lr()[0],
                tokens=self.state["tokens"],
            )
        self._last_loss = value

    def _evaluate(self, segments: lm_data.Segments) -> dict[str, float]:
        return evaluate(
            self.model, self.corpus, self.table, segments, self.cfg.train.batch_tokens, self.dist
        )

    def _evaluate_and_keep_best(self) -> None:
        result = self._evaluate(self.eval_segments)
        self.state["evaluated_step"] = self.state["step"]
        self.logger.log(
            step=self.state["step"], heldout_nll=result["nll"], heldout_ppl=result["ppl"]
        )
        # With nothing held out there is nothing to select on: keep the latest model.
        if result["tokens"] == 0 or result["nll"] < self.state["best_nll"]:
            self.state["best_nll"] = result["nll"] if result["tokens"] else math.inf
            if self.dist.is_main:
                save_model_dir(self.out, self.model, self.config_dict(), self.vocab)

    def _finish(self) -> dict[str, Any]:
        if self.state.get("evaluated_step") != self.state["step"]:
            self._evaluate_and_keep_best()  # a time limit may stop between evaluations
        self.dist.barrier()  # rank 0 has written the kept model
        weights, _, _ = read_model_dir(self.out)
        self.model.load_state_dict(weights)  # report the kept (best) model
        result = self._evaluate(self.held_segments)
        summary = {
            "heldout": result,
            "steps": self.state["step"],
            "train_tokens": self.state["tokens"],
            "train_seconds": self.state["train_seconds"],
            "tokens_per_second": self.state["tokens"] / max(self.state["train_seconds"], 1e-9),
            "vocab_size": len(self.vocab),
            "threads": torch.get_num_threads(),
            "uniform_nll": math.log(len(self.vocab)),
            "processes": self.dist.world_size,
        }
        if self.dist.is_main:
            write_json(self.out / "results.json", summary)
        return summary
