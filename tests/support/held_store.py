"""A store whose commits wait, and a hub over it, for tests of what may go on meanwhile.

``file_store``: a store of its own on a SQLite file. ``write_lock_held``: another
connection holds a SQLite file's write lock, so every commit of the store waits for it
(reads do not: they run beside the writer). ``slow_commits``: every group commit takes
longer, as a busy disk or loop would make it. ``gated_commits``: every group commit waits
while the test holds a gate shut, so what goes on meanwhile is decided by what happened,
not by how fast the machine is. ``navigator_hub``: the real hub, ADK runner and store over
a database, with the demo's navigator agent on the model given.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

import pytest
from google.adk.models import BaseLlm

from gateway.adk.engine import Engine
from gateway.adk.hosting import Hosted, prepare
from gateway.examples.navigator.agent import build_agent, load_catalog
from gateway.hub.hub import Hub
from gateway.store import SessionService, group_commit
from gateway.tools.client import ClientToolset
from tests.support.stores import session_store


@contextlib.asynccontextmanager
async def file_store(path: str) -> AsyncIterator[SessionService]:
    """A store opened on the SQLite file ``path``, closed on exit."""
    service = session_store(path)
    await service.open()
    try:
        yield service
    finally:
        await service.close()


@contextlib.contextmanager
def write_lock_held(path: str) -> Iterator[None]:
    """Another connection holds the file's write lock: the store's commits wait for it."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def slow_commits(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Every group commit takes ``seconds`` longer, so writes pile up behind it."""
    # As a slow disk would hold the database's thread.
    before_each_commit(monkeypatch, lambda writes: asyncio.sleep(seconds))


def gated_commits(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Every group commit waits while the returned gate is clear (it starts set: open);
    one already under way when it is cleared goes on."""
    gate = asyncio.Event()
    gate.set()
    before_each_commit(monkeypatch, lambda writes: gate.wait())
    return gate


def before_each_commit(
    monkeypatch: pytest.MonkeyPatch, waited: Callable[[Sequence[Any]], Awaitable[object]]
) -> None:
    """Every group commit of a store made from now on first awaits ``waited(its writes)``."""
    real_init = group_commit.GroupCommit.__init__

    def init(
        writer: group_commit.GroupCommit,
        commit: Callable[[Sequence[Any]], Awaitable[list[object]]],
        on_health: Callable[[bool], None],
        **settings: Any,
    ) -> None:
        async def held(writes: Sequence[Any]) -> list[object]:
            await waited(writes)
            return await commit(writes)

        real_init(writer, held, on_health, **settings)

    monkeypatch.setattr(group_commit.GroupCommit, "__init__", init)


@contextlib.asynccontextmanager
async def navigator_hub(db: str, model: BaseLlm) -> AsyncIterator[Hub]:
    """A hub over a store of its own on ``db``, running the navigator agent on ``model``."""
    service = session_store(db)
    await service.open()
    catalog = load_catalog()
    hosted = Hosted(build_agent(model, catalog), catalog=catalog)
    client_tools = ClientToolset(catalog)
    engine = Engine(hosted, prepare(hosted, client_tools), client_tools, service)
    try:
        yield Hub(engine)
    finally:
        await engine.runner.close()
        await service.close()
