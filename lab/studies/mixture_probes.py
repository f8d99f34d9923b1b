"""How the model mixes its word distributions, probed on the DEV set (issue 14), each probe paired
against the model's own decoding:

    python -m lab.studies.mixture_probes denoisesum-yelp ../shared/data/yelp/meansum_dev.jsonl \
        --probes "gate-3:gate=-3;copy+0.5:copy=0.5;ens:ensemble='runs/a|runs/b'" \
        [--json runs/probes/dev.json] [--markdown FILE] [--run runs/ema-lr1e3]

A probe is `name:key=value,...` (values TOML) with these keys:
  gate = b      the branch gate λ (the weight of the segment-noise decoder against the
                document-noise one) moved by b in logit space at every step: λ' = σ(logit λ + b)
  copy = b      the copy switch p_gen of the document decoder moved the same way (b < 0: copy more)
  ensemble = "DIR|DIR"  decode with the model and these models of the same vocabulary, their
                word distributions averaged (lab/studies/ensemble.py)
The rest of the decoding is the model's own (its config.json, shortlist included). Every probe
records the mean λ and p_gen it decoded with; `--run` (a `denoisesum train` run directory) adds
their means teacher-forced on that run's held-out synthetic pairs, the training task. Rows, paired
tests, the table and the resuming JSON file are those of lab/studies/_harness.py. Dev only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import emit, parse_variants
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.inference.shortlist import ShortlistModel
from denoisesum.io import read_json, write_json
from denoisesum.models.denoisesum import DenoiseSum
from denoisesum.models.store import CONFIG, load_denoisesum, parse_section
from denoisesum.training import pairs
from lab.studies._harness import (
    ProbeSummarizer,
    Wrap,
    check_keys,
    dev_parser,
    measure_rows,
    paired_tests,
    run_variant,
    table,
    unchanged,
)
from lab.studies.ensemble import EnsembleModel

PROBE_KEYS = ("gate", "copy", "ensemble")


class MixtureMeans:
    """The mean λ and p_gen a model decodes with, over every beam row and step, read from its
    gate and copy switch as they run (forward hooks: the model's code is untouched). λ is the
    gate's own value: with both branches present, as they are in decoding, the one used."""

    def __init__(self, model: DenoiseSum) -> None:
        self.sums: dict[str, tuple[float, int]] = {}
        if model.gate is not None:  # the gate's logits
            model.gate.register_forward_hook(self._hook("lambda", torch.sigmoid))
        if model.doc is not None and model.doc.decoder.copy_gate is not None:
            # the decoder's output (DecoderOut, state): its p_gen, already a probability (the
            # decoder reads copy_gate's weights, it does not call the module)
            model.doc.decoder.register_forward_hook(self._hook("p_gen", lambda out: out[0].p_gen))

    def _hook(self, name: str, value):
        def keep(module, inputs, output) -> None:
            got = value(output)
            total, count = self.sums.get(name, (0.0, 0))
            self.sums[name] = (total + float(got.sum()), count + got.numel())

        return keep

    def means(self) -> dict[str, float]:
        return {k: total / count for k, (total, count) in self.sums.items()}


def shifted(model: DenoiseSum, gate: float, copy: float) -> tuple[DenoiseSum, MixtureMeans]:
    """A copy of `model` whose gate λ and copy switch p_gen are moved by fixed logit offsets,
    λ' = σ(logit λ + gate), p_gen' = σ(logit p_gen + copy): both are σ of a linear layer, so
    the offset is added to that layer's bias (training never sees it). With the means it
    decodes with."""
    out = DenoiseSum(model.config)
    out.load_state_dict(model.state_dict())
    with torch.no_grad():
        if out.gate is not None:
            out.gate.bias += gate
        if out.doc is not None and out.doc.decoder.copy_gate is not None:
            out.doc.decoder.copy_gate.bias += copy
    return out.eval(), MixtureMeans(out)


def ensemble_with(others: list[DenoiseSum]) -> Wrap:
    """wrap: the model (a ShortlistModel or not) with `others` on the same words."""

    def wrap(model):
        if isinstance(model, ShortlistModel):
            return EnsembleModel([model, *(ShortlistModel(o, model.rows) for o in others)])
        return EnsembleModel([model, *others])

    return wrap


def configure(summarizer: ProbeSummarizer, original: DenoiseSum, probe: dict) -> MixtureMeans:
    """Set the summarizer up for one probe (an empty probe: the model's own decoding); the
    means it will decode with."""
    check_keys(probe, PROBE_KEYS)
    gate, copy = float(probe.get("gate", 0)), float(probe.get("copy", 0))
    summarizer.model, means = shifted(original, gate, copy)  # at 0, 0: the model's own decoding
    others = []
    for directory in (d for d in str(probe.get("ensemble", "")).split("|") if d):
        other, vocab, _ = load_denoisesum(directory)
        if vocab.tokens != summarizer.vocab.tokens:  # word ids must mean the same words
            raise SystemExit(f"--probes: {directory} has another vocabulary than the model")
        others.append(other.eval())
    summarizer.wrap = ensemble_with(others) if others else unchanged
    return means


def teacher_forced_mixture(model: DenoiseSum, vocab, run: Path, n: int = 400) -> dict[str, float]:
    """Mean λ and p_gen over the target words of `n` held-out synthetic pairs of a `denoisesum
    train` run (its encoded pairs in data/, its held-out split), teacher-forced: what the model
    mixes with on its training task, to set against what it decodes real reviews with."""
    cfg = parse_section(
        pairs.PairDataConfig, read_json(run / CONFIG).get("data", {}), run / CONFIG, "data"
    )
    corpus = pairs.PairCorpus(run / "data")
    held = pairs.split_pairs(corpus, cfg, np.ones(len(corpus), bool), 1)[1][:n]
    if len(held) == 0:
        raise SystemExit(f"--run: {run} holds out no pairs (data.heldout_percent)")
    table, sums = corpus.vocab_table(vocab), {"lambda": [], "p_gen": []}
    with torch.no_grad():
        for start in range(0, len(held), 8):
            batch = pairs.collate(corpus, table, held[start : start + 8], cfg, None)
            _, _, parts, _, mask = model.teacher_forced(batch)  # mask [B, S]: real targets
            sums["lambda"].append(parts.lam[mask])
            sums["p_gen"].append(parts.doc.p_gen[mask])
    return {"pairs": len(held), **{k: float(torch.cat(v).mean()) for k, v in sums.items()}}


def main() -> None:
    parser = dev_parser(__doc__.splitlines()[0])
    parser.add_argument("--probes", required=True)
    parser.add_argument("--json", type=Path, default=Path("runs/probes/dev.json"))
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument(
        "--run",
        type=Path,
        help="a `denoisesum train` run directory: also the mean λ and p_gen "
        "teacher-forced on its held-out synthetic pairs",
    )
    args = parser.parse_args()
    probes = parse_variants(args.probes)
    for probe in probes.values():  # a bad key is one line, before any work
        check_keys(probe, PROBE_KEYS)
    sets = list(read_review_sets(args.dev))
    summarizer = ProbeSummarizer.from_pretrained(args.model)
    original, base = summarizer.model, summarizer.config
    rows = json.loads(args.json.read_text()) if args.json.exists() else {}
    args.json.parent.mkdir(parents=True, exist_ok=True)

    def measure(probe: dict) -> dict:
        means = configure(summarizer, original, probe)
        # the probe is no decode setting: run_variant gets none, and the row records the probe
        return {**run_variant(summarizer, base, sets, {}), "mixture": means.means()}

    measure_rows(rows, probes, args.json, measure)
    paired_tests(rows)
    write_json(args.json, rows)
    command = (
        f"python -m lab.studies.mixture_probes {args.model} {args.dev} --probes "
        f'"{args.probes}" --json {args.json}' + (f" --run {args.run}" if args.run else "")
    )
    forced = (
        ""
        if args.run is None
        else teacher_forced_line(teacher_forced_mixture(original, summarizer.vocab, args.run))
    )
    emit(
        f"# Mixture probes (dev set)\n\n```bash\n{command}\n```\n\n"
        + table(rows, args.model, args.dev, len(sets))
        + mixture_table(rows)
        + forced,
        args.markdown,
    )


def teacher_forced_line(means: dict) -> str:
    return (
        f"\nTeacher-forced on {means['pairs']} held-out synthetic pairs: mean λ "
        f"{means['lambda']:.3f}, mean p_gen {means['p_gen']:.3f}.\n"
    )


def mixture_table(rows: dict[str, dict]) -> str:
    """The mean gate λ (weight of the segment-noise decoder) and copy switch p_gen (weight of
    generating over copying) each probe decoded with (of the first model, for an ensemble)."""
    lines = ["", "| probe | mean λ | mean p_gen |", "|---|--:|--:|"]
    for name, row in rows.items():
        m = row.get("mixture", {})
        lines.append(
            f"| {name} | {m.get('lambda', float('nan')):.3f} | {m.get('p_gen', float('nan')):.3f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
