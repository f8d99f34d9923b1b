"""Load test of the HTTP service: `denoisesum serve` under N concurrent clients.

    nice -n 15 python -m benchmarks.service_load [--model DIR] [--sets FILE] [--clients 8]
        [--duration 60] [--output runs/service-load.json] [--write-doc]

Starts `denoisesum serve` as a subprocess on a free loopback port (with `--model`, default the
packaged model), waits for /healthz, sends one warm-up request, then runs `--clients` threads
for `--duration` seconds. Each client keeps one HTTP connection and posts review sets to
/v1/summarize one after another (or `--batch N` sets at a time to /v1/summarize/batch), picking
sets at random (seeded) from a review-set JSONL file (default: examples/review_sets.jsonl).
A request still running at the deadline is awaited and counted.

Reports requests/s (answered 200s per second of the run), latency percentiles of the 200s,
answers by status (4xx and 5xx counted separately, connection failures apart), the review sets
the server decoded per summarize_batch call (its batching of concurrent requests), and the
server's resident memory (VmRSS from /proc/PID/status, sampled every second): at the start of
the load, at its end and the largest. `--clock MODULE` runs the server under a clock, a module
run as `python -m MODULE LOG denoisesum.cli serve ...` whose `read(LOG, since, until)` summarizes
the load's window under the key its `KEY` names: the lab's `lab.benchmarks.gc_clock` (the garbage
collector's passes in the server and its workers, by generation) and `lab.benchmarks.round_clock`
(each worker's decoding rounds: rows, wall and thread-CPU time a round, waits, pre-emptions).
Run from the repository root.
Prints JSON and writes it to `--output`; `--write-doc` also writes a Markdown table to
docs/results/service.md (`--doc` to change).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import IO

import httpx

from benchmarks.common import percentile, system

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SETS = ROOT / "examples" / "review_sets.jsonl"
DEFAULT_DOC = ROOT / "docs" / "results" / "service.md"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mib(pid: int) -> float | None:
    """VmRSS of the process and its children (`serve --workers`: each worker's, the pages they
    share with the parent counted in each)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    found = [own_rss_mib(p) for p in [pid, *map(int, children)]]
    return sum(v for v in found if v is not None) if found[0] is not None else None


def own_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError):
        return None
    return None


class Sampler(threading.Thread):
    """VmRSS of a process every `every` seconds until stopped."""

    def __init__(self, pid: int, every: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.stop.is_set():
            value = rss_mib(self.pid)
            if value is not None:
                self.samples.append((time.monotonic() - start, value))
            self.stop.wait(self.every)


def start_server(
    args, port: int, log: IO[str], clock: ModuleType | None, clock_log: str
) -> subprocess.Popen:
    python = [sys.executable, "-m"]
    if clock is not None:  # the server runs under the clock, logging to clock_log
        python = [sys.executable, "-m", clock.__name__, clock_log]
    command = [
        *python,
        "denoisesum.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--max-batch",
        str(args.max_batch),
        "--timeout",
        str(args.timeout),
        "--max-pending",
        str(max(64, args.clients * max(args.batch, 1))),
    ]
    if args.model is not None:
        command += ["--model", str(args.model)]
    if args.threads is not None:
        command += ["--threads", str(args.threads)]
    if args.workers > 1:
        command += ["--workers", str(args.workers)]
    if args.batch > 16:
        command += ["--max-sets", str(args.batch)]
    # its messages go to a file: a pipe nobody reads during the run could fill and block it
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)


def server_log(log: IO[str]) -> str:
    log.seek(0)
    return log.read().strip()


def wait_healthy(server: subprocess.Popen, log: IO[str], base: str, seconds: float) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with code {server.returncode}:\n{server_log(log)}")
        try:
            response = httpx.get(base + "/healthz", timeout=2)
            if response.status_code == 200:
                return response.json()
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise SystemExit(f"the server did not answer /healthz within {seconds:.0f} s")


def client(
    base: str,
    sets: list[list[str]],
    batch: int,
    deadline: float,
    seed: int,
    timeout: float,
    results: list,
) -> None:
    rng = random.Random(seed)
    path = "/v1/summarize/batch" if batch else "/v1/summarize"
    with httpx.Client(base_url=base, timeout=timeout) as http:
        while time.monotonic() < deadline:
            if batch:
                body = {"sets": [{"reviews": rng.choice(sets)} for _ in range(batch)]}
            else:
                body = {"reviews": rng.choice(sets)}
            start = time.monotonic()
            try:
                status = str(http.post(path, json=body).status_code)
            except httpx.HTTPError as exc:
                status = f"transport: {type(exc).__name__}"
            results.append((status, time.monotonic() - start))


def run(args) -> dict:
    from denoisesum.data.reviewsets import read_review_sets

    sets = [s.reviews for s in read_review_sets(args.sets)]
    if not sets:
        raise SystemExit(f"{args.sets}: no review sets")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile("w+") as log, tempfile.TemporaryDirectory() as tmp:
        clock = importlib.import_module(args.clock) if args.clock else None
        clock_log = os.path.join(tmp, "clock.log")
        result = measure(args, sets, base, start_server(args, port, log, clock, clock_log), log)
        since, until = result.pop("load_window")
        if clock is not None:
            found = os.path.exists(clock_log)
            result[clock.KEY] = clock.read(clock_log, since, until) if found else {}
        return result


def measure(args, sets: list[list[str]], base: str, server: subprocess.Popen, log: IO[str]) -> dict:
    try:
        wait_healthy(server, log, base, args.startup_timeout)
        loaded_rss = rss_mib(server.pid)
        warm = httpx.post(
            base + "/v1/summarize", json={"reviews": sets[0]}, timeout=args.timeout + 30
        )
        if warm.status_code != 200:
            raise SystemExit(f"warm-up request failed: {warm.status_code} {warm.text}")
        model = httpx.get(base + "/v1/models").json()["models"][0]
        before = httpx.get(base + "/healthz").json()
        sampler = Sampler(server.pid)
        sampler.start()
        results: list[tuple[str, float]] = []
        started = time.monotonic()
        deadline = started + args.duration
        threads = [
            threading.Thread(
                target=client,
                args=(base, sets, args.batch, deadline, args.seed + i, args.timeout + 30, results),
            )
            for i in range(args.clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        sampler.stop.set()
        sampler.join()
        after = httpx.get(base + "/healthz").json()
        end_rss = rss_mib(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

    statuses = Counter(status for status, _ in results)
    ok = [seconds for status, seconds in results if status == "200"]
    per_request = max(args.batch, 1)
    # /healthz counts one worker's batches: with several, which one answers is the kernel's
    batches = after["batches"] - before["batches"] if args.workers == 1 else None
    rss = [value for _, value in sampler.samples]

    def ms(seconds: float) -> float:
        return round(1000 * seconds, 1)

    return {
        "settings": {
            "clients": args.clients,
            "duration_s": args.duration,
            "endpoint": "/v1/summarize/batch" if args.batch else "/v1/summarize",
            "sets_per_request": per_request,
            "max_batch": args.max_batch,
            "server_threads": args.threads,
            "server_workers": args.workers,
            "timeout_s": args.timeout,
            "review_sets": shown_path(args.sets),
            "distinct_sets": len(sets),
            "mean_reviews_per_set": round(statistics.mean(map(len, sets)), 1),
        },
        "model": {
            "id": model["id"],
            "name": model["name"],  # the server shows no path
            "path": shown_path(args.model) if args.model is not None else None,
            "parameters": model["parameters"],
            "vocab_size": model["vocab_size"],
            "beam_size": model["settings"]["search"]["beam"],
        },
        "requests": len(results),
        "ok": len(ok),
        "elapsed_s": round(elapsed, 2),
        "requests_per_s": round(len(ok) / elapsed, 3),
        "review_sets_per_s": round(len(ok) * per_request / elapsed, 3),
        "latency_ms": (
            {
                "p50": ms(percentile(ok, 0.5)),
                "p90": ms(percentile(ok, 0.9)),
                "p99": ms(percentile(ok, 0.99)),
                "mean": ms(statistics.mean(ok)),
                "max": ms(max(ok)),
            }
            if ok
            else None
        ),
        "status_counts": dict(sorted(statuses.items())),
        "client_errors_4xx": sum(n for s, n in statuses.items() if s.startswith("4")),
        "server_errors_5xx": sum(n for s, n in statuses.items() if s.startswith("5")),
        "transport_errors": sum(n for s, n in statuses.items() if s.startswith("transport")),
        "server_batches": batches,
        "sets_per_batch": round(len(ok) * per_request / batches, 2) if batches else None,
        "rss_mib": {
            "loaded": round(loaded_rss, 1) if loaded_rss else None,
            "start": round(rss[0], 1) if rss else None,
            "end": round(end_rss or rss[-1], 1) if rss else None,
            "max": round(max(rss), 1) if rss else None,
            "samples": len(rss),
            "max_by_quarter": quarter_peaks(sampler.samples),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "system": system(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        },
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_window": (started, started + elapsed),  # (run() drops it)
    }


def quarter_peaks(samples: list[tuple[float, float]]) -> list[float]:
    """The largest RSS in each quarter of the sampled time: flat memory shows as equal peaks."""
    if not samples:
        return []
    span = samples[-1][0] or 1.0
    peaks = [0.0] * 4
    for t, value in samples:
        quarter = min(3, int(4 * t / span))
        peaks[quarter] = max(peaks[quarter], value)
    return [round(v, 1) for v in peaks]


def shown_path(path: Path) -> str:
    """The path as a reader can reproduce it: relative to the repository root."""
    return os.path.relpath(path.resolve(), ROOT)


def verdict(result: dict) -> str:
    """The two things the run is for: no server errors, and memory that does not grow."""
    peaks = result["rss_mib"]["max_by_quarter"]
    errors = result["server_errors_5xx"] + result["transport_errors"]
    lines = [
        f"- Server errors (5xx or dropped connections): **{errors}** of "
        f"{result['requests']:,} requests."
    ]
    if len(peaks) == 4:
        growth = peaks[3] - peaks[0]
        shape = "flat: no growth" if growth <= 0.1 * peaks[0] else "GROWING"
        lines.append(
            f"- Memory, last quarter's peak minus the first quarter's: {growth:+.1f} MiB "
            f"({shape}). The rise from the idle server to the first peak is the "
            f"working set of decoding batches, reached in the first quarter."
        )
    return "\n".join(lines) + "\n"


def markdown(result: dict, command: str) -> str:
    s, m, lat, rss = result["settings"], result["model"], result["latency_ms"], result["rss_mib"]
    lat = lat or {k: float("nan") for k in ("p50", "p90", "p99", "mean", "max")}
    rows = [
        (
            "model",
            f"`{m['id']}` ({m['parameters']:,} parameters, vocabulary "
            f"{m['vocab_size']:,}, beam {m['beam_size']})",
        ),
        (
            "load",
            f"{s['clients']} concurrent clients for {s['duration_s']:g} s, "
            f"{s['sets_per_request']} review set(s) per request to `{s['endpoint']}`",
        ),
        (
            "review sets",
            f"{s['distinct_sets']} from `{s['review_sets']}` "
            f"({s['mean_reviews_per_set']} reviews each on average)",
        ),
        (
            "server",
            f"max batch {s['max_batch']} sets, torch threads "
            f"{s['server_threads'] or 'default'}, {s.get('server_workers', 1)} worker "
            f"process(es), timeout {s['timeout_s']:g} s",
        ),
        ("requests answered 200", f"{result['ok']:,} of {result['requests']:,}"),
        (
            "throughput",
            f"{result['requests_per_s']:.2f} requests/s "
            f"({result['review_sets_per_s']:.2f} review sets/s)",
        ),
        (
            "latency p50 / p90 / p99 / max",
            f"{lat['p50']:.0f} / {lat['p90']:.0f} / {lat['p99']:.0f} / {lat['max']:.0f} ms",
        ),
        (
            "errors",
            f"4xx: {result['client_errors_4xx']}, 5xx: {result['server_errors_5xx']}, "
            f"connection: {result['transport_errors']} "
            f"(by status: {result['status_counts']})",
        ),
        (
            "batching",
            f"{result['server_batches']} summarize_batch calls, "
            f"{result['sets_per_batch']} review sets each on average"
            if result["server_batches"] is not None
            else "not counted (each worker process counts its own)",
        ),
        (
            "server memory (VmRSS)",
            f"{rss['loaded']} MiB loaded; {rss['start']} at the start "
            f"of the load, {rss['end']} at its end, {rss['max']} at most "
            f"({rss['samples']} samples); largest in each quarter of "
            f"the run: {' / '.join(map(str, rss['max_by_quarter']))}",
        ),
        (
            "machine",
            f"{result['machine']['cpus']} CPUs ({result['machine']['system']}), "
            f"load average {result['machine']['load_average_1m_at_end']} at the end",
        ),
    ]
    table = "\n".join(f"| {k} | {v} |" for k, v in rows)
    return (
        f"# HTTP service under load\n\n`denoisesum serve` with concurrent clients posting "
        f"review sets (benchmarks/service_load.py), {result['date']}.\n\n"
        f"```bash\n{command}\n```\n\n{verdict(result)}\n| | |\n|---|---|\n{table}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", type=Path, default=None, help="model directory (default: the packaged model)"
    )
    parser.add_argument(
        "--sets",
        type=Path,
        default=DEFAULT_SETS,
        help="review-set JSONL file the requests are drawn from",
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument(
        "--batch",
        type=int,
        default=0,
        help="review sets per request to /v1/summarize/batch (0: single sets to /v1/summarize)",
    )
    parser.add_argument(
        "--max-batch", type=int, default=8, help="the server's --max-batch (sets decoded together)"
    )
    parser.add_argument("--threads", type=int, default=None, help="the server's torch threads")
    parser.add_argument(
        "--workers", type=int, default=1, help="the server's --workers (worker processes)"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="the server's --timeout")
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=300.0,
        help="seconds to wait for the server to load the model",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--clock",
        metavar="MODULE",
        help="run the server under this clock: lab.benchmarks.gc_clock, lab.benchmarks.round_clock",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=ROOT / "runs" / "service-load.json",
        help="JSON result to write",
    )
    parser.add_argument(
        "--write-doc", action="store_true", help="also write the Markdown table to --doc"
    )
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC)
    args = parser.parse_args()
    if args.clients < 1 or args.duration <= 0 or args.batch < 0:
        parser.error("--clients must be at least 1, --duration positive, --batch at least 0")
    if not args.sets.is_file():
        parser.error(f"--sets: no such file: {args.sets}")

    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n", encoding="utf-8")
    if args.write_doc:
        command = shlex.join(["python", "benchmarks/service_load.py", *sys.argv[1:]])
        args.doc.parent.mkdir(parents=True, exist_ok=True)
        args.doc.write_text(markdown(result, command), encoding="utf-8")
        print(f"-> {args.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
