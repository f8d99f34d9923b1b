"""`denoisesum summarize --dask`: a summarize run's batches decoded on a Dask cluster, an
executor as the others are (executors.py).

The command itself still reads the input, chooses the batches (the same ones, resume skipping
the entities already written), writes the output and shows progress; only the decoding moves.
Each batch is one task (`workers.summarize_one`, by Dask's futures); the command keeps two per
worker in flight and writes each batch's records in input order, so the output is the
single-process run's, byte for byte, and resumes the same way. Each worker loads the model once
and checks that it is the command's (workers.py).

    cluster = Cluster.start("4", summarizer)                    # 4 local worker processes
    cluster = Cluster.start("tcp://10.0.0.5:8786", summarizer)  # a running scheduler
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any

from denoisesum.errors import DenoiseSumError
from denoisesum.execution.workers import ModelSpec, model_spec, summarize_one

WORKER_WAIT_S = 60.0  # how long a scheduler's first worker may take to join
_ADDRESS = re.compile(r"^(tcp|tls|ucx|inproc)://\S+$|^[\w.\-]+:\d+$")


def parse_target(target: str) -> int | str:
    """--dask's value: a number of local worker processes, or a scheduler's address; without
    Dask installed, the line that says which extra to install."""
    from denoisesum.extras import require

    require("dask", "--dask")
    require("distributed", "--dask")
    text = target.strip()
    if text.isdigit():
        n = int(text)
        if not 1 <= n <= 1024:
            raise DenoiseSumError(f"--dask {target}: a local cluster has 1 to 1024 workers")
        return n
    if _ADDRESS.match(text):
        return text
    raise DenoiseSumError(
        f"--dask {target!r}: must be a number of local workers (e.g. 4) or a "
        "scheduler's address (e.g. tcp://10.0.0.5:8786)"
    )


class Cluster:
    """A Dask client (and, for a local cluster, the cluster) that decodes a run's batches:
    submit(batch, options) -> a future of (records, texts, warning lines)."""

    def __init__(self, client, spec: ModelSpec, cluster=None) -> None:
        self.client, self.spec, self.cluster = client, spec, cluster

    @classmethod
    def start(cls, target: str, summarizer) -> Cluster:
        """A local cluster of N worker processes (one thread each, torch threads sharing this
        machine's cores), or a client of the scheduler at an address, with a worker; its
        workers decode with `summarizer`'s model and settings."""
        import logging

        where = parse_target(target)
        from distributed import Client, LocalCluster

        if isinstance(where, int):
            cluster = LocalCluster(
                n_workers=where,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            threads = max(1, (os.cpu_count() or 1) // where)
            return cls(Client(cluster), model_spec(summarizer, threads), cluster)
        try:
            client = Client(where, timeout=WORKER_WAIT_S)
        except OSError as exc:
            raise DenoiseSumError(f"--dask {where}: cannot reach the scheduler ({exc})") from None
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            client.close()
            raise DenoiseSumError(
                f"--dask {where}: no worker joined the scheduler within {WORKER_WAIT_S:.0f} s"
            ) from None
        return cls(client, model_spec(summarizer, None))

    @property
    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def submit(self, batch: list[Any], options: Any, weight: int = 1):
        return self.client.submit(summarize_one, batch, self.spec, options, pure=False)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
