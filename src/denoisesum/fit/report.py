"""MODEL_DIR/fit-report.json: what one `denoisesum fit` run did, stage by stage, rewritten
atomically after every stage (so a crash leaves the report of what was done), and the table
printed at the end.

    {"model": "runs/mine", "preset": "cpu", "dev": null, "budget_hours": null,
     "finished": true, "interrupted_in": null, "seconds": 4211.5,
     "stages": [{"stage": "lm", "status": "skipped", "output": "work/lm", "seconds": 0.0,
                 "seconds_when_done": 2891.4, "summary": "4,500 steps, ..."}, ...],
     "warnings": ["..."],
     "quality": {"scores": {"opinion_agrees": 0.9, "supported": 0.52, ...}, "usable": true,
                 "held_out": ["business id", ...], "warning": null}}

quality: the evaluate stage's scores of the exported model on businesses held out of training
(evaluation/heldout.py); usable false comes with a warning saying what to change. With --from,
quality.base holds the model it started from on the same businesses: its summaries' scores and
both models' loss of the held-out reviews (fit/compare.py); quality.few says what a held-out
evaluation on fewer than 10 businesses can show.

status: "ran", "resumed" (cut off in an earlier run and finished now), "continued" (a trainer
finished earlier, given new limits: more steps or minutes), "skipped" (done in an
earlier run; seconds_when_done is how long that took), "given" (--lm), "not needed" (topics
without a discriminator), "failed" or "interrupted".
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from denoisesum.io import write_json

REPORT = "fit-report.json"


def seconds_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes = seconds / 60
    return f"{minutes:.1f} min" if minutes < 60 else f"{minutes / 60:.2f} h"


class FitReport:
    def __init__(self, root: Path, **about: Any) -> None:
        self.path = root / REPORT
        self.started = time.perf_counter()
        self.data: dict[str, Any] = {
            "model": str(root),
            **about,
            "finished": False,
            "interrupted_in": None,
            "seconds": 0.0,
            "stages": [],
            "warnings": [],
        }

    def add(
        self,
        stage: str,
        status: str,
        output: str,
        seconds: float = 0.0,
        summary: str = "",
        seconds_when_done: float | None = None,
        warning: str | None = None,
    ) -> None:
        entry = {
            "stage": stage,
            "status": status,
            "output": output,
            "seconds": round(seconds, 1),
            "summary": summary,
        }
        if seconds_when_done is not None:
            entry["seconds_when_done"] = round(seconds_when_done, 1)
        self.data["stages"].append(entry)
        if warning:
            self.data["warnings"].append(f"{stage}: {warning}")

    def write(self, finished: bool = False, interrupted_in: str | None = None) -> None:
        self.data.update(
            finished=finished,
            interrupted_in=interrupted_in,
            seconds=round(time.perf_counter() - self.started, 1),
        )
        if self.path.parent.is_dir():
            write_json(self.path, self.data)

    def table(self) -> str:
        """The end-of-run summary: a line per stage, then the totals."""
        stages = self.data["stages"]
        width = max((len(s["stage"]) for s in stages), default=5)
        lines = []
        for s in stages:
            took = seconds_text(s["seconds"])
            if s["status"] == "skipped" and "seconds_when_done" in s:
                took = f"({seconds_text(s['seconds_when_done'])} earlier)"
            lines.append(f"  {s['stage']:<{width}}  {s['status']:<10} {took:>16}  {s['summary']}")
        counts: dict[str, int] = {}
        for s in stages:
            counts[s["status"]] = counts.get(s["status"], 0) + 1
        done = ", ".join(f"{n} {status}" for status, n in counts.items())
        head = (
            f"fit: {done} in {seconds_text(self.data['seconds'])}; model in "
            f"{self.data['model']} (report: {self.path})"
        )
        tail = [f"warning: {w}" for w in self.data["warnings"]]
        return "\n".join([head, *lines, *self._quality(), *tail])

    def _quality(self) -> list[str]:
        """The held-out scores (the evaluate stage), when there are any."""
        quality = self.data.get("quality") or {}
        if not quality.get("scores"):
            return []
        from denoisesum.evaluation.heldout import scores_line
        from denoisesum.fit.compare import loss_line

        verdict = "usable" if quality.get("usable") else "NOT USABLE YET (see the warning)"
        lines = [
            f"held out of training ({len(quality['held_out'])} businesses of this corpus): "
            f"{scores_line(quality['scores'])}; {verdict}"
        ]
        base = quality.get("base")
        if base:
            lines.append(
                f"  {base['model']}, the model it started from, on the same businesses: "
                f"{scores_line(base['scores'])}"
            )
            if base.get("review_loss"):
                lines.append(f"  {loss_line(base['review_loss'], base['model'])}")
        if quality.get("few"):
            lines.append(f"  {quality['few']}")
        return lines
