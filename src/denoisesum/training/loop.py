"""What every trainer here shares: the resumable training loop.

A subclass sets `out`, `cfg` (with a `train` section holding max_steps, max_minutes, eval_every,
save_every, keep_checkpoints), `model`, `vocab`, `state` (a dict with at least step, epoch,
batch_in_epoch, train_seconds), `on_step`, `progress`, and implements `_epoch_order`,
`_train_step`, `_evaluate_and_keep_best`, `_checkpoint_state`, `config_dict` and `_finish`.

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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from denoisesum.io import atomic_write, write_json
from denoisesum.training.checkpoint import save_checkpoint


class StepLogger:
    """Appends one JSON line per logged event to metrics.jsonl."""

    def __init__(self, path: Path, resume_step: int) -> None:
        self.path = path
        if path.exists():  # drop lines from after the checkpoint we resume from
            kept = [ln for ln in path.read_text().splitlines()
                    if ln and json.loads(ln)["step"] <= resume_step]
            with atomic_write(path) as handle:
                handle.writelines(ln + "\n" for ln in kept)

    def log(self, **record: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


class ResumableTrainer:
    desc = "train"  # progress-bar label
    _in_step = False
    _stop_requested = False
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
        save_checkpoint(self.out, self.state["step"], self.model, self.config_dict(), self.vocab,
                        self._checkpoint_state(), keep=self.cfg.train.keep_checkpoints)

    def fit(self) -> dict[str, Any]:
        """Train until a stop condition; returns the result of `_finish`."""
        t = self.cfg.train
        self.out.mkdir(parents=True, exist_ok=True)
        write_json(self.out / "run-config.json", self.config_dict())
        bar = tqdm(total=t.max_steps, initial=self.state["step"], unit="step", desc=self.desc,
                   disable=not self.progress, dynamic_ncols=True)
        self.model.train()
        batches = self._batches()
        try:
            with self._graceful_interrupt():
                while not self._should_stop():
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
                    if self._stop_requested:
                        raise KeyboardInterrupt
        except KeyboardInterrupt:
            if not self._in_step:  # never save a half-done step
                self.checkpoint()
            bar.close()
            raise
        bar.close()
        self.checkpoint()
        return self._finish()

    @contextlib.contextmanager
    def _graceful_interrupt(self):
        """First Ctrl-C: finish the step, then save and stop. Second: stop at once."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum, frame):
            if self._stop_requested:
                raise KeyboardInterrupt
            self._stop_requested = True

        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
