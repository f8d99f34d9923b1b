"""Running the service: `serve(app, host, port, log_level)` (what `denoisesum serve` does) runs
the app under uvicorn, with read timeouts that uvicorn lacks; with `workers` > 1 (`serve
--workers N`), one process serves HTTP and N processes, forked after the model loaded and
sharing its memory, decode: each request goes to the one with the fewest review sets in flight
(execution/pool.py). Worker processes, not threads, because one process's decoding thread and
request threads share one interpreter lock (docs/results/service.md).

uvicorn (h11) times only the gap between two requests on a connection (`timeout_keep_alive`,
5 s, kept): a client that opens a connection and sends nothing, half a request head, or the
rest of a body the app has already answered, holds the connection for ever. `TimedH11Protocol`
closes it:

- the request head must arrive whole within `ServiceLimits.header_timeout_s` of its first byte
  (or of the connection opening); else 408 (when part of it came) and the connection closes;
- a body the app answered early (413, 415, 503) is read and dropped; when none of it comes
  for `body_timeout_s`, the connection closes.

While the app reads a body, the guard (guard.py) times it: 408 when it stalls for
`body_timeout_s`. uvicorn buffers at most 64 KiB of a body per connection (it pauses reading),
and h11 at most 16 KiB of a head (then 400), so neither needs a byte budget of its own.
"""

import asyncio
import copy
import gc
import json
import logging
import socket
import sys

import h11
import uvicorn
from fastapi import FastAPI
from uvicorn.config import LOG_LEVELS, LOGGING_CONFIG
from uvicorn.protocols.http.h11_impl import H11Protocol

from denoisesum.errors import DenoiseSumError

log = logging.getLogger("uvicorn.error")


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, which closes a connection whose client stalls (see above)."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 10.0

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._stall: asyncio.TimerHandle | None = None
        self._stall_kind = ""  # "head": a total deadline; "drain": reset by every byte

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("head", self.header_timeout_s, self._head_stalled)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch(answered=True)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _watch(self, answered: bool = False) -> None:
        """Time the client whenever the server waits for it and no app does."""
        if self.transport.is_closing():
            self._disarm()
        elif self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # the app has the request; the guard times its body
        elif self.conn.their_state is h11.SEND_BODY:  # answered early: drop the rest
            self._arm("drain", self.body_timeout_s, self._body_stalled)
        elif self.conn.their_state is h11.IDLE:
            if answered:  # between requests: uvicorn's keep-alive timer closes an idle one
                self._disarm()
            elif self._stall_kind != "head":  # the first bytes of a head
                self._arm("head", self.header_timeout_s, self._head_stalled)

    def _arm(self, kind: str, seconds: float, callback) -> None:
        self._disarm()
        self._stall_kind = kind
        self._stall = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
        self._stall, self._stall_kind = None, ""

    def _head_stalled(self) -> None:
        self._stall, self._stall_kind = None, ""
        if self.transport.is_closing() or (
            self.cycle is not None and not self.cycle.response_complete
        ):
            return
        partial, _ = self.conn.trailing_data
        if partial and self.conn.our_state is h11.IDLE:
            log.info(
                "%s - the request head did not arrive within %g s: 408, closed",
                _peer(self.client),
                self.header_timeout_s,
            )
            self.transport.write(
                _timeout_response(
                    f"the request head did not arrive within {self.header_timeout_s:g} s"
                )
            )
        self.transport.close()

    def _body_stalled(self) -> None:
        self._stall, self._stall_kind = None, ""
        if not self.transport.is_closing():
            log.info(
                "%s - the rest of an answered body stopped for %g s: closed",
                _peer(self.client),
                self.body_timeout_s,
            )
            self.transport.close()


def _peer(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "client"


def _timeout_response(message: str) -> bytes:
    body = json.dumps({"error": {"status": 408, "message": message, "field": None}}).encode()
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


def server_config(
    app: FastAPI, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info", **settings
) -> uvicorn.Config:
    """uvicorn's settings for the app: its protocol times reads by the app's ServiceLimits, and
    the service's own log lines (denoisesum.serving) go where uvicorn's go."""
    limits = app.state.limits
    protocol = type(
        "TimedH11Protocol",
        (TimedH11Protocol,),
        {"header_timeout_s": limits.header_timeout_s, "body_timeout_s": limits.body_timeout_s},
    )
    log_config = copy.deepcopy(LOGGING_CONFIG)
    log_config["loggers"]["denoisesum.serving"] = {
        "handlers": ["default"],
        "level": LOG_LEVELS.get(log_level, logging.INFO),
        "propagate": False,
    }
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=protocol,
        log_config=log_config,
        **settings,
    )


def serve(
    app: FastAPI,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    workers: int = 1,
    threads: int | None = None,
) -> None:
    """Serve until interrupted (Ctrl-C); with `workers` > 1, decoding in that many processes
    of `threads` torch threads each (None: the cores shared out among them; execution/pool.py)."""
    config = server_config(app, host, port, log_level)
    freeze_loaded()
    if workers == 1:
        uvicorn.Server(config).run()
        return
    sock = _listen(host, port, config.backlog)
    if port == 0:
        print(f"listening on port {sock.getsockname()[1]}", file=sys.stderr, flush=True)
    if threads is None:  # torch's own count (OMP_NUM_THREADS, the CPU set), shared out
        import torch

        threads = max(1, torch.get_num_threads() // workers)
    queue, server = app.state.queue, uvicorn.Server(config)
    queue.spread(workers, threads, on_failure=lambda: setattr(server, "should_exit", True))
    try:
        server.run(sockets=[sock])
    finally:
        queue.close()  # (again, where uvicorn's shutdown did: nothing left to do)
    if queue.failed:  # a worker died: the service was not the one started
        raise SystemExit(1)


def freeze_loaded() -> None:
    """Leave the objects alive now (the loaded model's vocabulary, tokenizer and lexicons,
    about 210,000) out of the garbage collector's passes: they live as long as the service.
    Else each full pass walks them all and holds the decoding thread, and with it every running
    request, long enough to make the slowest answers. Before forking (`--workers`), this also
    keeps the workers from writing to the pages they share with the server (the collector marks
    every object it walks)."""
    gc.collect()
    gc.freeze()


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    """The socket the workers share (IPv4 or IPv6, as the host is); a port in use is one line.

    Made with its protocol named (TCP), as uvicorn's own are: asyncio turns Nagle's algorithm off
    (TCP_NODELAY) only on connections of such a socket, and with it on, each answer's last
    segment could wait for the client's delayed acknowledgement (40 ms on Linux);
    `socket.create_server` leaves the protocol 0."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(backlog)
        except OSError:
            sock.close()
            raise
        return sock
    except OSError as exc:
        raise DenoiseSumError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
