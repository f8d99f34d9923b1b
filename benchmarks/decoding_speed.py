"""Throughput of `denoisesum summarize`: this checkout against a release's code, side by side
(issue 34 item 3), with the floating-point work per business and the share of this machine's
own matrix-multiply throughput that decoding reaches.

    python -m benchmarks.decoding_speed --base-src /work/denoisesum-base/src \
        --review-sets ../shared/data/yelp/meansum_dev.jsonl --entities 100 --rounds 2 \
        --threads 2 --markdown docs/results/decoding-speed.md

Each round runs the real command (`python -m denoisesum.cli summarize SETS -o OUT`, the
shipped model with its own settings) once with the release's sources on PYTHONPATH and once
with this checkout's, in turn (the order alternates between rounds, so that a machine busy with
something else slows both alike), each with OMP_NUM_THREADS=--threads. Reported per code: the
businesses per second of the whole command (start to exit: imports and model load included) and
of its run alone (`bulk.run`: reading, decoding, writing), the best round of each; and whether
both codes wrote the same summaries (each entity's summary text, character for character).

FLOPs per business are counted from the shapes the decoding actually ran (a separate pass of
this checkout over the first batches, with its modules wrapped): multiply-adds x 2 of every
matrix product, the encoder's two LSTMs over the padded reviews, the attention keys, and per
decoding step and beam row the two decoder LSTMs, both attentions (scores and context), the
combine layers, the output layers over the shortlist, the copy gate and the mixing gate.
Element-wise work (softmax, masks, top-k) is not counted. The matmul throughput is a torch
[N, N] x [N, N] float32 product at the same thread count, in the same run (the best N of 512,
1024, 2048), measured before every round; the fraction is FLOPs/business x businesses/s over
it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import cpu_name, system

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DEFAULT_SETS = ROOT.parent / "shared" / "data" / "yelp" / "meansum_dev.jsonl"
MATMUL_SIZES = (512, 1024, 2048)


# ---- the child: one timed command -----------------------------------------------------------


def child(out: Path, command: list[str]) -> None:
    """Run `denoisesum <command>` in this process; write its timings to `out`."""
    start = time.perf_counter()
    from denoisesum import cli
    from denoisesum.execution import bulk

    spans: list[float] = []
    inner = bulk.run

    def timed_run(*args, **kwargs):
        began = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spans.append(time.perf_counter() - began)

    bulk.run = timed_run
    sys.argv = ["denoisesum", *command]
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code or 0
    import torch

    out.write_text(
        json.dumps(
            {
                "total_s": time.perf_counter() - start,
                "run_s": sum(spans),
                "exit": code,
                "torch_threads": torch.get_num_threads(),
            }
        )
    )


def count_flops(review_sets: str, entities: int, batch_size: int, model: str) -> dict:
    """FLOPs per business of this checkout's summarize path over the first `entities` review
    sets, counted from the shapes its modules ran (see the module docstring)."""
    import torch

    from denoisesum.data.reviewsets import read_review_sets
    from denoisesum.models import denoisesum as ds
    from denoisesum.models import denoisesum_parts as parts
    from denoisesum.summarizer import Summarizer

    torch.set_num_threads(1)
    counts = {
        "encoder LSTMs": 0,
        "attention keys": 0,
        "decoder LSTMs": 0,
        "attention": 0,
        "combine + gates": 0,
        "output layers": 0,
    }
    steps = {"beam rows x steps": 0}
    summarizer = Summarizer.from_pretrained(model)
    c = summarizer.model.config
    e, d, h = c.embed_dim, c.hidden_dim, parts.encoder_size(c)

    def wrap(cls, name, add):
        inner = getattr(cls, name)

        def wrapped(self, *args, **kwargs):
            result = inner(self, *args, **kwargs)
            add(self, args, result)
            return result

        setattr(cls, name, wrapped)
        return inner

    def encoder(model, args, result):  # ids [R, T]: two directions of H/2 units
        r, t = args[0].shape
        counts["encoder LSTMs"] += 2 * 2 * r * t * 4 * (h // 2) * (e + h // 2)

    def keys(model, args, result):  # W_a h_k and the values over the branch's tokens [A, M, H]
        a, _, m = result.keys.shape
        counts["attention keys"] += 2 * a * m * h * (d + result.values.shape[-1])

    def decoder(module, args, result):
        emb, st = args[0], args[1]
        rows, s, _ = emb.shape
        m, values = st.keys.shape[2], st.values.shape[-1]
        v = result[0].logits.shape[-1]  # the shortlist's words (or the vocabulary)
        n = rows * s
        counts["decoder LSTMs"] += 2 * n * 4 * d * (e + d)
        counts["attention"] += 2 * n * m * (d + values)  # scores, then the values' mix
        counts["combine + gates"] += 2 * n * d * values  # s_t's columns of combine and copy_gate
        counts["combine + gates"] += 2 * n * e if module.copy_gate is not None else 0
        counts["output layers"] += 2 * n * d * v
        if module is summarizer.model.doc.decoder:  # the mixing gate, once per row
            counts["combine + gates"] += 2 * n * (e + 2 * d)
            steps["beam rows x steps"] += n

    originals = [
        (ds.DenoiseSum, "encode_reviews", wrap(ds.DenoiseSum, "encode_reviews", encoder)),
        (ds.DenoiseSum, "_memory", wrap(ds.DenoiseSum, "_memory", keys)),
        (parts.Decoder, "forward", wrap(parts.Decoder, "forward", decoder)),
    ]
    try:
        sets = [s.reviews for s in list(read_review_sets(review_sets))[:entities]]
        summarizer.summarize_results(sets, batch_size=batch_size)
    finally:
        for cls, name, inner in originals:
            setattr(cls, name, inner)
    n = len(sets)
    return {
        "entities": n,
        "per_business": {k: v / n for k, v in counts.items()},
        "total_per_business": sum(counts.values()) / n,
        "beam_rows_x_steps_per_business": steps["beam rows x steps"] / n,
    }


def matmul_gflops(threads: int) -> dict[str, float]:
    """GFLOP/s of a float32 [N, N] x [N, N] torch product at `threads` threads, per N."""
    import torch

    torch.set_num_threads(threads)
    out = {}
    for n in MATMUL_SIZES:
        a, b = torch.randn(n, n), torch.randn(n, n)
        for _ in range(2):
            a @ b
        reps = max(3, int(1e10 / (2 * n**3)))
        began = time.perf_counter()
        for _ in range(reps):
            a @ b
        out[str(n)] = 2 * n**3 * reps / (time.perf_counter() - began) / 1e9
    return out


# ---- the parent: rounds, comparison, report --------------------------------------------------


def run_code(
    src: Path,
    model: Path,
    sets: Path,
    output: Path,
    threads: int,
    extra: list[str],
    passive: bool = False,
) -> dict:
    """One timed `summarize` with `src` on PYTHONPATH, in a fresh process."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        timing = Path(handle.name)
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
    }
    if passive:  # waiting OpenMP threads sleep instead of spinning (see main's --passive)
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    command = [
        sys.executable,
        "-m",
        "benchmarks.decoding_speed",
        "--child",
        str(timing),
        "--",
        "summarize",
        str(sets),
        "--model",
        str(model),
        "-o",
        str(output),
        "--overwrite",
        *extra,
    ]
    load = os.getloadavg()[0]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - began
    result = json.loads(timing.read_text()) if timing.stat().st_size else {"exit": -1}
    timing.unlink()
    if done.returncode or result.get("exit"):
        raise SystemExit(f"{src}: summarize failed:\n{done.stderr[-2000:]}")
    # the 1-minute load average before and after: other jobs on the machine slow a run
    return {**result, "wall_s": wall, "load_before": load, "load_after": os.getloadavg()[0]}


def same_summaries(a: Path, b: Path) -> tuple[int, int]:
    """(records with the same summary, records) of two outputs, entity by entity (the other
    fields, as JSON values, are compared by the caller's tests: their order may change)."""
    left = [json.loads(line) for line in a.read_text(encoding="utf-8").splitlines()]
    right = [json.loads(line) for line in b.read_text(encoding="utf-8").splitlines()]
    same = sum(
        x["entity_id"] == y["entity_id"] and x["summary"] == y["summary"]
        for x, y in zip(left, right, strict=False)
    )
    return same, max(len(left), len(right))


def first_sets(source: Path, n: int, into: Path) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()[:n]
    into.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return into


def measure(args) -> dict:
    codes = {"release": Path(args.base_src).resolve(), "this checkout": SRC}
    # one model directory, settings included, for both codes: the release's shipped one unless
    # --model names another (the checkout's shipped settings may have moved on since)
    model = Path(args.model or codes["release"] / "denoisesum" / "pretrained" / "denoisesum-yelp")
    extra = {name: [] for name in codes}
    for item in args.also or []:
        name, _, flags = item.partition(":")
        codes[name] = SRC
        extra[name] = flags.split()
    runs: dict[str, list[dict]] = {name: [] for name in codes}
    matmul: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        sets = first_sets(Path(args.review_sets), args.entities, Path(tmp) / "sets.jsonl")
        for r in range(args.rounds):
            matmul.append(matmul_gflops(args.threads))
            order = list(codes) if r % 2 == 0 else list(reversed(codes))
            for name in order:
                out = Path(tmp) / f"{name.replace(' ', '-')}-{r}.jsonl"
                runs[name].append(
                    run_code(codes[name], model, sets, out, args.threads, extra[name], args.passive)
                )
                print(f"round {r}: {name}: {runs[name][-1]}", file=sys.stderr)
        reference = Path(tmp) / "release-0.jsonl"
        identical = {
            name: same_summaries(reference, Path(tmp) / f"{name.replace(' ', '-')}-0.jsonl")
            for name in codes
        }
    flops = flops_in_child(args.review_sets, min(args.entities, args.flop_entities), model)
    best_matmul = max(max(m.values()) for m in matmul)
    loads = [x[k] for done in runs.values() for x in done for k in ("load_before", "load_after")]
    n = args.entities
    out = {
        "entities": n,
        "threads": args.threads,
        "rounds": args.rounds,
        "codes": {},
        "model": str(model),
        "omp_wait_policy": "PASSIVE" if args.passive else os.environ.get("OMP_WAIT_POLICY"),
        "matmul_gflops": matmul,
        "matmul_gflops_best": best_matmul,
        "flops": flops,
        "load": statistics.mean(loads),
        "machine": machine(),
    }
    for name, done in runs.items():
        total = min(x["total_s"] for x in done)
        run = min(x["run_s"] for x in done)
        out["codes"][name] = {
            "src": str(codes[name]),
            "extra_args": extra[name],
            "rounds": done,
            "businesses_per_s": n / total,
            "run_businesses_per_s": n / run,
            "identical_lines": identical[name][0],
            "lines": identical[name][1],
        }
    base = out["codes"]["release"]
    for v in out["codes"].values():
        v["ratio"] = v["businesses_per_s"] / base["businesses_per_s"]
        v["run_ratio"] = v["run_businesses_per_s"] / base["run_businesses_per_s"]
        v["gflops"] = flops["total_per_business"] * v["run_businesses_per_s"] / 1e9
        v["fraction_of_matmul"] = v["gflops"] / best_matmul
    return out


def flops_in_child(review_sets: str, entities: int, model: Path) -> dict:
    """count_flops in a fresh process with this checkout's src/ first on PYTHONPATH (whatever
    denoisesum is installed)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.decoding_speed",
            "--count-flops",
            str(out),
            review_sets,
            str(entities),
            str(model),
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode:
        raise SystemExit(f"counting FLOPs failed:\n{done.stderr[-2000:]}")
    result = json.loads(out.read_text())
    out.unlink()
    return result


def machine() -> str:
    return f"{cpu_name()} ({os.cpu_count()} cores), {system()}"


def markdown(result: dict, command: str) -> str:
    f = result["flops"]
    lines = [
        "# Decoding speed: this checkout against the release, side by side",
        "",
        f"```bash\n{command}\n```",
        "",
        f"`denoisesum summarize` of the first {result['entities']} MeanSum Yelp dev businesses "
        f"with the model `{result['model']}` and its own settings (both codes the same), "
        "batches of 8; OMP_NUM_THREADS="
        f"{result['threads']}"
        + (f", OMP_WAIT_POLICY={result['omp_wait_policy']}" if result["omp_wait_policy"] else "")
        + f"; {result['machine']}. Both codes ran in the same run, in turn, "
        f"{result['rounds']} rounds (best round reported): a machine shared with other jobs "
        "slows both alike. *Whole command*: start to exit, imports and model load included; "
        "*run*: reading, decoding and writing (`bulk.run`). The machine's 1-minute load "
        f"average during the runs: {result['load']:.1f} (other jobs shared its "
        f"{os.cpu_count()} cores).",
        "",
        "| code | businesses/s, whole command | ratio | businesses/s, run | ratio | "
        "summaries identical to the release's | GFLOP/s reached | share of matmul |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, v in result["codes"].items():
        label = name + (f" (`{' '.join(v['extra_args'])}`)" if v["extra_args"] else "")
        lines.append(
            f"| {label} | {v['businesses_per_s']:.2f} | {v['ratio']:.2f}x | "
            f"{v['run_businesses_per_s']:.2f} | {v['run_ratio']:.2f}x | "
            f"{v['identical_lines']} of {v['lines']} | {v['gflops']:.1f} | "
            f"{100 * v['fraction_of_matmul']:.0f}% |"
        )
    mm = ", ".join(
        f"{n}: {statistics.median(m[n] for m in result['matmul_gflops']):.0f}"
        for n in result["matmul_gflops"][0]
    )
    lines += [
        "",
        "## Floating-point work per business",
        "",
        f"Counted from the shapes this checkout's decoding ran over the first {f['entities']} "
        "businesses (multiply-adds x 2 of the matrix products; element-wise work not "
        f"counted); {f['beam_rows_x_steps_per_business']:.0f} beam rows x steps per business "
        "(5 beams, about 100 words).",
        "",
        "| part | GFLOP per business |",
        "|---|--:|",
    ]
    for part, value in f["per_business"].items():
        lines.append(f"| {part} | {value / 1e9:.2f} |")
    lines += [
        f"| **total** | **{f['total_per_business'] / 1e9:.2f}** |",
        "",
        f"This machine's float32 matmul at {result['threads']} threads, median of the "
        f"rounds, GFLOP/s by size N: {mm}; the share uses the best, "
        f"{result['matmul_gflops_best']:.0f} GFLOP/s: decoding's matrix products are "
        "small (40 beam rows at a time), so their own throughput is far below it.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    if "--count-flops" in sys.argv:
        at = sys.argv.index("--count-flops")
        out, review_sets, entities, model = sys.argv[at + 1 : at + 5]
        Path(out).write_text(json.dumps(count_flops(review_sets, int(entities), 8, model)))
        return
    if "--child" in sys.argv:
        at = sys.argv.index("--child")
        child(Path(sys.argv[at + 1]), sys.argv[sys.argv.index("--") + 1 :])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-src", required=True, help="the release's src/ directory")
    parser.add_argument("--review-sets", default=str(DEFAULT_SETS))
    parser.add_argument(
        "--model",
        help="model directory both codes decode with (default: the "
        "release's shipped model, with its settings)",
    )
    parser.add_argument("--entities", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--flop-entities",
        type=int,
        default=16,
        help="businesses the FLOP count decodes (whole batches of 8)",
    )
    parser.add_argument(
        "--also",
        action="append",
        help="another run of this checkout, 'name:extra summarize args' "
        "(e.g. 'two workers:--dask 2')",
    )
    parser.add_argument(
        "--passive",
        action="store_true",
        help="OMP_WAIT_POLICY=PASSIVE for both codes: on a machine other jobs "
        "keep busy, spinning OpenMP threads slow a 2-thread run many times",
    )
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--markdown", help="write the report here")
    args = parser.parse_args()
    result = measure(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    if args.markdown:
        command = "python -m benchmarks.decoding_speed " + " ".join(sys.argv[1:])
        Path(args.markdown).write_text(markdown(result, command))


if __name__ == "__main__":
    main()
