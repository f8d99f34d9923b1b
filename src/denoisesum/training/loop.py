"""What every trainer here shares: the resumable training loop.

A subclass sets `out`, `cfg` (with a `train` section holding seed, max_steps, max_minutes,
eval_every, save_every, keep_checkpoints), `dist` (distributed.setup()), `model` (the bare
module), `vocab`, `state` (a dict with at least step, epoch, batch_in_epoch, train_seconds),
`on_step`, `progress`, and implements `_epoch_order`, `_train_step`, `_evaluate_and_keep_best`,
`_checkpoint_state`, `config_dict` and `_finish`.

With several processes (distributed.py) every rank runs this loop in step: the stop decision is
taken together, checkpoints hold every rank's random state and are written by rank 0 alone.

Crash safety: the batches of an epoch depend only on (seed, epoch), the position in the epoch is
part of `state`, and checkpoints (written atomically) hold the model, optimizer, RNG and `state`,
so a resumed run computes exactly what an uninterrupted run would have. The first Ctrl-C
finishes the current step, saves a checkpoint and stops; a second one stops at once.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from denoisesum.config import Range, above, at_least
from denoisesum.io import atomic_write, write_json
from denoisesum.progress import progress_bar
from denoisesum.training.checkpoint import save_checkpoint
from denoisesum.training.distributed import SINGLE, Distributed

# the valid values of the settings every trainer's loop has (each trainer's BOUNDS adds its own)
LOOP_BOUNDS: dict[str, Range] = {
    "lr": above(0),
    "grad_clip": above(0),
    "max_minutes": at_least(0, "0: no limit"),
    "seed": at_least(0),
    "threads": at_least(0, "0: all cores"),
    **dict.fromkeys(("max_steps", "eval_every", "save_every", "keep_checkpoints"), at_least(1)),
}


class StepLogger:
    """Appends one JSON line per logged event to metrics.jsonl (a no-op when not `enabled`:
    the processes of a distributed run other than rank 0)."""

    def __init__(self, path: Path, resume_step: int, enabled: bool = True) -> None:
        self.path, self.enabled = path, enabled
        if enabled and path.exists():  # drop lines from after the checkpoint we resume from
            kept = [
                ln
                for ln in path.read_text().splitlines()
                if ln and json.loads(ln)["step"] <= resume_step
            ]
            with atomic_write(path) as handle:
                handle.writelines(ln + "\n" for ln in kept)

    def log(self, **record: Any) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


class ResumableTrainer:
    desc = "train"  # progress-bar label
    dist: Distributed = SINGLE  # single process unless a subclass sets it from distributed.setup()
    _in_step = False
    _stop_requested = False
    _stop_agreed = False  # all ranks stop together after an interrupt (they can all save)
    _last_loss = math.nan

    def _epoch_order(self, epoch: int) -> list:
        """The training batches of `epoch`, in order; a function of (seed, epoch) alone."""
        raise NotImplementedError

    def _batches(self) -> Iterator:
        """Yield batches forever from the saved (epoch, batch) position on."""
        while True:
            order = self._epoch_order(self.state["epoch"])
            for i in range(self.state["batch_in_epoch"], len(order)):
                self.state["batch_in_epoch"] = i + 1
                yield order[i]
            self.state["epoch"] += 1
            self.state["batch_in_epoch"] = 0

    def _should_stop(self) -> bool:
        t = self.cfg.train
        out_of_time = bool(t.max_minutes) and self.state["train_seconds"] >= t.max_minutes * 60
        return self.state["step"] >= t.max_steps or out_of_time

    def checkpoint(self) -> None:
        """Save a checkpoint (rank 0; with every rank's random state when distributed)."""
        rngs = self.dist.gather(self._rng_state()) if self.dist.enabled else None
        if self.dist.is_main:
            state = self._checkpoint_state()
            if rngs is not None:
                state["rank_rng"] = rngs
            save_checkpoint(
                self.out,
                self.state["step"],
                self.model,
                self.config_dict(),
                self.vocab,
                state,
                keep=self.cfg.train.keep_checkpoints,
            )
        self.dist.barrier()

    def _rng_state(self) -> dict[str, Any]:
        device = getattr(self, "device", None)
        on_cuda = device is not None and device.type == "cuda"
        return {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state(device) if on_cuda else None,
        }

    def _restore_rank_rng(self, saved: dict[str, Any]) -> None:
        """Distributed: this rank's random state from the checkpoint (call after `_restore`)."""
        if not self.dist.enabled:
            return
        states = saved.get("rank_rng")
        if states is not None and len(states) == self.dist.world_size:
            mine = states[self.dist.rank]
            torch.set_rng_state(mine["torch"])
            if (
                mine["cuda"] is not None
                and getattr(self, "device", None) is not None
                and self.device.type == "cuda"
            ):
                torch.cuda.set_rng_state(mine["cuda"], self.device)
        else:  # saved by another number of processes: a fresh stream per rank
            torch.manual_seed(self.dist.rank_seed(self.cfg.train.seed, self.state["step"]))

    def fit(self) -> dict[str, Any]:
        """Train until a stop condition; returns the result of `_finish`."""
        t = self.cfg.train
        main = self.dist.is_main
        if main:
            self.out.mkdir(parents=True, exist_ok=True)
            write_json(self.out / "run-config.json", self.config_dict())
        # a bar on a terminal, plain lines in a log; its ETA honours max_minutes
        bar = progress_bar(
            total=t.max_steps,
            initial=self.state["step"],
            unit="step",
            desc=self.desc,
            enabled=self.progress and main,
            time_left=self._time_left(),
        )
        self.model.train()
        batches = self._batches()
        try:
            with self._graceful_interrupt():
                while True:
                    # distributed: every rank stops at the same step, or none does
                    stop, interrupted = self.dist.any(self._should_stop(), self._stop_requested)
                    if interrupted:
                        self._stop_agreed = True
                        raise KeyboardInterrupt
                    if stop:
                        break
                    self._in_step = True
                    self._train_step(next(batches), bar)
                    self._in_step = False
                    step = self.state["step"]
                    if step % t.eval_every == 0 or step == t.max_steps:
                        self._evaluate_and_keep_best()
                    if step % t.save_every == 0:
                        self.checkpoint()
                    if self.on_step is not None:  # after evaluating: an interrupt misses nothing
                        self.on_step(step, self._last_loss)
        except KeyboardInterrupt:
            # never save a half-done step; with several processes, only when all stop here
            # (the others may be anywhere after a second Ctrl-C: the last checkpoint stands)
            if not self._in_step and (self._stop_agreed or not self.dist.enabled):
                self.checkpoint()
            bar.close()
            raise
        bar.close()
        self.checkpoint()
        return self._finish()

    def _time_left(self) -> Callable[[], float] | None:
        """Wall seconds until train.max_minutes stops training (None: no time limit): the
        step time left, times this session's wall seconds per step second (evaluations and
        checkpoints take wall time the budget does not count)."""
        t = self.cfg.train
        if not t.max_minutes:
            return None
        wall_start, step_start = time.monotonic(), self.state["train_seconds"]

        def left() -> float:
            spent = self.state["train_seconds"] - step_start
            scale = (time.monotonic() - wall_start) / spent if spent > 0 else 1.0
            return max(0.0, t.max_minutes * 60 - self.state["train_seconds"]) * scale

        return left

    @contextlib.contextmanager
    def _graceful_interrupt(self):
        """First Ctrl-C: finish the step, then save and stop. Second: stop at once.

        Distributed, every Ctrl-C only asks to stop: torchrun forwards the terminal's SIGINT to
        its workers (which then see it twice) and kills them itself if they take too long.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum, frame):
            if self._stop_requested and not self.dist.enabled:
                raise KeyboardInterrupt
            self._stop_requested = True

        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
