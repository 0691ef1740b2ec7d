"""The probes. GET /livez: the process serves (200 with its version, whatever else is
wrong), for a liveness probe, so a model provider's outage restarts nothing. GET /readyz:
whether this gateway should be sent work, for a readiness probe (Kubernetes; /ready is its
older name): 200 only while it takes new runs. GET /ping: the same question as AgentCore's
health check asks it, in the statuses AgentCore's contract names.

Until the start-up warm-up is over (``gateway.doors.warmup``) it answers 503 Starting, so
nothing that waits for Healthy sends a user the cold run. Then Healthy, or HealthyBusy
while a run is in progress (the hub's ``status_listeners``), and 503 Unhealthy while the
store cannot commit, the cluster's database does not answer this process's keeper (each
``GATEWAY_LEASE_CHECK_SECONDS``, so within seconds even with no commit in flight), or the
hosted agent's model does not answer (``gateway.models.health``). From the start of a drain
(``gateway.doors.drain``) both say 503 Draining, for good. ``Ping`` listens to all of them
and keeps the time the status last changed, which is what ``time_of_last_update`` says.
"""

from __future__ import annotations

import asyncio
import time

import msgspec

from gateway import config
from gateway.doors.asgi import Send, respond
from gateway.doors.drain import Drain
from gateway.hub.hub import Hub
from gateway.models.health import ModelHealth

# /ping during start-up, before the warm-up is over.
STARTING = msgspec.json.encode({"status": "Starting"})

# The readiness doors: each answers what /ping does.
READINESS = ("/ping", "/readyz", "/ready")


async def alive(send: Send) -> None:
    """GET /livez: 200 while the process answers at all; starting, unhealthy or draining
    alike, since restarting it would mend none of them."""
    body = msgspec.json.encode({"status": "Alive", "version": config.version()})
    await respond(send, 200, body, b"application/json")


class Ping:
    """GET /ping: Healthy or HealthyBusy; the timestamp moves only when the status does.

    While the store cannot commit, nothing a run says can be kept, and while the hosted
    agent's model does not answer (``gateway.models.health``), every run would fail: 503
    Unhealthy, until both are back. AgentCore's contract names only Healthy and
    HealthyBusy, so Unhealthy travels with a status code any health checker reads as a
    failure.
    """

    def __init__(self, hub: Hub, models: ModelHealth, ready: asyncio.Event, drain: Drain) -> None:
        self.busy = False
        self.draining = False
        self.can_commit = hub.engine.sessions.can_commit
        self.models_answer = models.answering
        self.database_answers = hub.cluster.reachable
        self.changed_at = int(time.time())
        # Set by the app once the warm-up is over; until then, Starting.
        self.ready = ready
        hub.status_listeners.append(self._on_status)
        hub.engine.sessions.health_listeners.append(self._on_store_health)
        models.listeners.append(self._on_models)
        drain.listeners.append(self._on_drain)
        hub.cluster.health_listeners.append(self._on_database)

    async def answer(self, send: Send) -> None:
        if not self.ready.is_set() and not self.draining:
            await respond(send, 503, STARTING, b"application/json")
        else:
            await respond(send, self.http_status, self.body(), b"application/json")

    def _on_status(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self.changed_at = int(time.time())

    def _on_store_health(self, can_commit: bool) -> None:
        if can_commit != self.can_commit:
            self.can_commit = can_commit
            self.changed_at = int(time.time())

    def _on_drain(self) -> None:
        self.draining = True
        self.changed_at = int(time.time())

    def _on_models(self, answering: bool) -> None:
        if answering != self.models_answer:
            self.models_answer = answering
            self.changed_at = int(time.time())

    def _on_database(self, answers: bool) -> None:
        if answers != self.database_answers:
            self.database_answers = answers
            self.changed_at = int(time.time())

    @property
    def healthy(self) -> bool:
        return self.can_commit and self.database_answers and self.models_answer

    @property
    def http_status(self) -> int:
        return 200 if self.healthy and not self.draining else 503

    def body(self) -> bytes:
        status = "HealthyBusy" if self.busy else "Healthy"
        if not self.healthy:
            status = "Unhealthy"
        if self.draining:
            status = "Draining"
        return msgspec.json.encode({"status": status, "time_of_last_update": self.changed_at})
