"""Drain: a deploy that cuts nobody off.

Theory of operation. SIGTERM (through ``DrainingServer``, before uvicorn closes anything)
or the shutdown of a host app that mounts the gateway begins the drain, once:

1. the hub takes no new run (``Hub.drain``): an input is refused with RUN_ERROR
   SERVICE_UNAVAILABLE (503 on SSE), which a client sends again elsewhere or later;
2. /ping and /ready answer 503 ``Draining`` (``Drain.listeners``), so a load balancer or
   a readiness probe stops sending work here, and a new /ws upgrade is refused with 503,
   ``Retry-After`` and the same RUN_ERROR;
3. each open /ws connection is closed with ``CLOSE_CODE`` 1012 "service restart", which
   tells a client to reconnect, as soon as neither its own input nor the thread it
   follows has a run in progress: at once for an idle one, right after the run's last
   event for one whose run streams (frames it sends meanwhile are answered first);
4. the runs in progress, on /ws and on SSE alike, stream to their end within
   ``GATEWAY_DRAIN_SECONDS``; whatever still runs then stops where it is and is stored as
   interrupted (``Hub.stop``), as after a crash, its stream ended by a RUN_ERROR that says
   so (``gateway.hub.driving``), so an SSE response ends too and the server can stop. On
   PostgreSQL a thread whose run ended is released at once, as always, and leaving the
   cluster hands the cut-off ones over.

The listening socket stays open throughout, so probes read the drain; uvicorn's own
shutdown (it closes the listener and whatever connection is left) comes after.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from typing import Protocol

import uvicorn

from gateway import tracing
from gateway.hub.hub import Hub

log = logging.getLogger(__name__)

# The close of a /ws connection at a drain: RFC 6455's "service restart", i.e. reconnect.
CLOSE_CODE = 1012
CLOSE_REASON = "service restart: reconnect and reattach"


class Draining(Protocol):
    """An open connection the drain closes once it follows no run in progress."""

    def drain(self) -> None: ...


class Drain:
    """The gateway's drain, begun once; ``run`` returns when it is over."""

    def __init__(self, hub: Hub, seconds: float) -> None:
        self.hub = hub
        self.seconds = seconds
        # The open /ws connections, each told when the drain begins.
        self.connections: set[Draining] = set()
        # Called once, when the drain begins (/ping and /ready turn 503).
        self.listeners: list[Callable[[], None]] = []
        # /ws upgrades refused since, for the log line at its end.
        self.refused_connections = 0
        self._draining: asyncio.Task[None] | None = None

    @property
    def begun(self) -> bool:
        return self._draining is not None

    async def run(self) -> None:
        """Drains, or waits for the drain another caller began."""
        if self._draining is None:
            self._draining = asyncio.ensure_future(self._drain())
        await asyncio.shield(self._draining)

    async def _drain(self) -> None:
        began = time.monotonic()
        in_progress = self.hub.drain()
        log.info(
            "draining: no new runs; %d in progress get up to %g s to finish"
            " (GATEWAY_DRAIN_SECONDS), %d connections close with %d as they go idle",
            in_progress,
            self.seconds,
            len(self.connections),
            CLOSE_CODE,
        )
        for listener in self.listeners:
            listener()
        for connection in list(self.connections):
            connection.drain()
        cut = await self.hub.stop(self.seconds)
        log.info(
            "drained in %.1f s: %d runs finished, %d cut off (stored as interrupted); "
            "%d new runs and %d new connections refused meanwhile",
            time.monotonic() - began,
            in_progress - cut,
            cut,
            self.hub.refused_draining,
            self.refused_connections,
        )


class DrainingServer(uvicorn.Server):
    """uvicorn's server, draining the gateway before its own shutdown closes anything;
    a second Ctrl-C (uvicorn's ``force_exit``) stops waiting."""

    def __init__(self, config: uvicorn.Config, drain: Callable[[], asyncio.Future[None]]):
        super().__init__(config)
        self._drain = drain

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        draining = self._drain()
        while not draining.done() and not self.force_exit:
            await asyncio.wait({draining}, timeout=0.1)
        if draining.done() and not draining.cancelled():
            draining.result()  # a drain that failed says so here
        await super().shutdown(sockets)
        await asyncio.to_thread(tracing.flush)  # uvicorn then re-raises the signal: no atexit
