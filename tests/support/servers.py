"""A real gateway on a loopback port, started in-process on the test's loop.

``running_gateway`` serves ``create_app``'s app with the same uvicorn settings as
``agent-gateway``; a ``RunningGateway`` knows its port and opens checked /ws sockets,
and ``post_run`` sends one run to its SSE door and checks the stream that comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn
from websockets.asyncio.client import connect

from gateway.api import create_app, server
from gateway.config import AUTO_WORKERS, Settings
from gateway.doors.app import Gateway
from tests.support import tiers
from tests.support.agui import AgUiSocket, StreamChecker, sse_events
from tests.support.budgets import scaled
from tests.support.ports import free_port


@dataclasses.dataclass
class RunningGateway:
    app: Gateway
    port: int
    server: uvicorn.Server

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, user: str = "demo", query: str = "") -> str:
        return f"ws://127.0.0.1:{self.port}/ws?user={user}{query}"

    @contextlib.asynccontextmanager
    async def socket(self, user: str = "demo", query: str = "") -> AsyncIterator[AgUiSocket]:
        async with connect(self.ws_url(user, query), max_size=None) as ws:
            yield AgUiSocket(ws)


@contextlib.asynccontextmanager
async def running_gateway(
    *, await_ready: bool = True, **overrides: Any
) -> AsyncIterator[RunningGateway]:
    """A gateway on a free loopback port; by default once /ping would say Healthy.

    ``agent`` is what ``create_app`` takes (default: the demo); ``model`` a model object or
    name for every LlmAgent; ``predict_state`` a list as ``create_app`` takes it, or the
    setting's JSON text; any other keyword is a setting. There is no warm-up unless a
    test asks for one (``warm_up_runs=3``, the default of ``agent-gateway``).
    ``GATEWAY_WORKERS`` in the environment is the default of ``workers``.
    """
    tiers.require("server", "a gateway on loopback")
    model = overrides.pop("model", None)
    agent = overrides.pop("agent", None)
    predictions = None
    if not isinstance(overrides.get("predict_state", ""), str):
        predictions = overrides.pop("predict_state")
    # Tests send far faster than a person: the per-user rate limit (and the budget of what
    # reattaches send, ``SendBudget``) has tests of its own.
    # The warm-up's runs make a first run as fast as the tenth, which no test measures here.
    fields: dict[str, Any] = {
        "db": ":memory:",
        "scripted_pace_ms": 5.0,
        "log_level": "warning",
        "user_rate": 0.0,
        "user_reattach_bytes": 0,
        "warm_up_runs": 0,
        # A test that ends mid-run is not kept waiting a deploy's grace for its run.
        "drain_seconds": 2.0,
    }
    fields.update(overrides)
    # The one variable of the shell a test takes: GATEWAY_WORKERS=N runs the server tier's
    # gateways with N worker processes (docs/multicore.md), unless a test says otherwise.
    if "workers" not in overrides and (workers := os.environ.get("GATEWAY_WORKERS")):
        fields["workers"] = AUTO_WORKERS if workers == "auto" else int(workers)
    port = free_port()
    settings = Settings(host="127.0.0.1", port=port, **fields)
    # A test's settings are all it says: no GATEWAY_* variable of the shell leaks in.
    app = create_app(agent, settings, model=model, predict_state=predictions, environ=False)
    # The same uvicorn server as `agent-gateway`, served on the test's own loop.
    served = server(settings, app)
    task = asyncio.create_task(served.serve())
    while not served.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    if await_ready:  # as a load balancer would: no test meets the warm-up's runs
        await asyncio.wait_for(app.ready.wait(), scaled(30))
    try:
        yield RunningGateway(app, port, served)
    finally:
        served.should_exit = True
        await asyncio.wait_for(task, scaled(15))


async def post_run(
    gateway: RunningGateway, body: dict[str, Any] | bytes, user: str = "demo"
) -> tuple[int, str, list[dict[str, Any]], bytes]:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx.AsyncClient(timeout=scaled(20)) as client:
        response = await client.post(
            gateway.http + "/invocations",
            content=content,
            headers={"X-Gateway-User": user, "Content-Type": "application/json"},
        )
    raw = response.content
    checker = StreamChecker()
    events = sse_events(raw)
    for event in events:
        checker.feed(event)
    assert raw.endswith(b"\n\n")
    return response.status_code, response.headers["content-type"], events, raw
