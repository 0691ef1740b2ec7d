"""A real gateway on a loopback port, started in-process on the test loop."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from websockets.asyncio.client import connect

from gateway.api import create_app, server_config
from gateway.config import Settings
from gateway.doors.app import Gateway
from gateway.store import SessionService
from tests.support.agui import AgUiSocket
from tests.support.backends import BACKENDS
from tests.support.postgres import Postgres, running_postgres
from tests.support.providers import ChatCompletions, GeminiApi, Provider
from tests.support.stores import session_store


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclasses.dataclass
class RunningGateway:
    app: Gateway
    port: int

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, user: str = "demo", query: str = "") -> str:
        return f"ws://127.0.0.1:{self.port}/ws?user={user}{query}"

    @contextlib.asynccontextmanager
    async def socket(self, user: str = "demo", query: str = "") -> AsyncIterator[AgUiSocket]:
        async with connect(self.ws_url(user, query), max_size=None) as ws:
            yield AgUiSocket(ws)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL server for the run (``tests.support.postgres``), started on first use."""
    with running_postgres() as server:
        yield server


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a contract test's store lives: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "threads.db")
    server: Postgres = request.getfixturevalue("postgres")
    return server.fresh_database()


@pytest.fixture
async def store(db: str) -> AsyncIterator[SessionService]:
    """A session store of the test's own, open for the test: on each backend in turn."""
    service = session_store(db)
    await service.open()
    yield service
    await service.close()


def record_reads(monkeypatch: pytest.MonkeyPatch, store: SessionService) -> list[object]:
    """The store's reads from now on (each a function run in its database thread)."""
    reads: list[object] = []
    real_read = store._read

    async def counted(fn: Any) -> Any:
        reads.append(fn)
        return await real_read(fn)

    monkeypatch.setattr(store, "_read", counted)
    return reads


@contextlib.asynccontextmanager
async def running_gateway(
    *, await_ready: bool = True, **overrides: Any
) -> AsyncIterator[RunningGateway]:
    """A gateway on a free loopback port; by default once /ping would say Healthy.

    ``agent`` is what ``create_app`` takes (default: the demo); ``model`` a model object or
    name for every LlmAgent; any other keyword is a setting.
    """
    model = overrides.pop("model", None)
    agent = overrides.pop("agent", None)
    # Tests send far faster than a person: the per-user rate limit has tests of its own.
    fields: dict[str, Any] = {
        "db": ":memory:",
        "scripted_pace_ms": 5.0,
        "log_level": "warning",
        "user_rate": 0.0,
    }
    fields.update(overrides)
    port = free_port()
    settings = Settings(host="127.0.0.1", port=port, **fields)
    app = create_app(agent, settings, model=model)
    # The same uvicorn settings as `agent-gateway`, served on the test's own loop.
    server = uvicorn.Server(server_config(settings, app))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    if await_ready:  # as a load balancer would: no test meets the warm-up's runs
        await asyncio.wait_for(app.ready.wait(), 30)
    try:
        yield RunningGateway(app, port)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


@pytest.fixture(params=[ChatCompletions, GeminiApi], ids=["chat-completions", "gemini"])
async def provider(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Provider]:
    """A local model provider of each kind, running, with the provider's SDK pointed at it."""
    made: Provider = request.param()
    for name, value in made.env().items():
        monkeypatch.setenv(name, value)
    async with made.running():
        yield made


@pytest.fixture(scope="module", params=["in-memory", "postgres"])
async def gateway_on_each_store(request: pytest.FixtureRequest) -> AsyncIterator[RunningGateway]:
    """A server for a module's tests, once on SQLite in memory and once on PostgreSQL.

    A module whose tests must hold on either store names it as its ``gateway``.
    """
    db = ":memory:"
    if request.param == "postgres":
        server: Postgres = request.getfixturevalue("postgres")
        db = server.fresh_database()
    async with running_gateway(db=db) as running:
        yield running


@pytest.fixture(scope="session")
async def gateway() -> AsyncIterator[RunningGateway]:
    """One server for the session: in-memory store, scripted model at 5 ms a chunk."""
    async with running_gateway() as running:
        yield running
