"""Fenced writes on PostgreSQL: a holder whose thread was taken over can store nothing more.

Each ``SessionService`` stands for a gateway process, holding a thread under a lease of the
cluster's table (``gateway.store.postgres.leases``) as its hub would (``fence_of``). The
database checks each fenced write's epoch in the write's own transaction: the old holder's
write is refused and undone alone, its later ones are refused without a round trip, and a
takeover waits for a write already checked under the old lease to commit or roll back.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
from google.adk.events import Event
from google.genai import types
from psycopg.rows import TupleRow

from gateway.store import SessionService
from gateway.store.errors import FencedError
from gateway.store.frames import LoggedFrame
from gateway.store.leases import Fence
from gateway.store.postgres import leases
from gateway.store.postgres.fences import lease_epochs
from gateway.store.postgres.writes import append_frames
from gateway.store.writes import AppendFrames
from tests.support.backends import rows
from tests.support.budgets import scaled
from tests.support.postgres import Postgres
from tests.support.stores import session_store

pytestmark = pytest.mark.process

APP = "app"
Conn = psycopg.AsyncConnection[TupleRow]


def said(text: str) -> Event:
    return Event(
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
    )


@pytest.fixture
async def url(postgres: Postgres) -> str:
    return await postgres.fresh_cluster_database()


@contextlib.asynccontextmanager
async def process(url: str) -> AsyncIterator[tuple[str, Conn, SessionService]]:
    """A gateway process as the lease table and the store see it: its node id, its working
    connection for leases, and its store, whose writes are fenced by ``fences``."""
    node_id = uuid.uuid4().hex
    async with (
        await psycopg.AsyncConnection.connect(url, autocommit=True) as listening,
        await psycopg.AsyncConnection.connect(url, autocommit=True) as work,
    ):
        await leases.register_node(listening, node_id)
        store = session_store(url)
        await store.open()
        try:
            yield node_id, work, store
        finally:
            await store.close()


async def take(work: Conn, node_id: str, thread: str, ttl: float = 60) -> Fence:
    taken = await leases.take(
        work, thread_id=thread, node_id=node_id, user_id="u", run_id="r", ttl=ttl
    )
    assert taken is not None and taken.epoch is not None
    return Fence(thread, taken.epoch)


def frame(seq: int) -> list[LoggedFrame]:
    return [LoggedFrame(seq, b'{"type":"RUN_STARTED"}')]


async def test_a_holder_taken_over_stores_nothing_more(url: str) -> None:
    async with process(url) as (a, a_work, on_a), process(url) as (b, b_work, on_b):
        held = {"t": await take(a_work, a, "t", ttl=0.3), "t2": await take(a_work, a, "t2")}
        on_a.fence_of = held.get
        told: list[Fence] = []
        on_a.fenced_listeners.append(told.append)
        session = await on_a.create_session(app_name=APP, user_id="u", session_id="t")
        await on_a.create_session(app_name=APP, user_id="u", session_id="t2")
        await on_a.append_event(session, said("A, holding the lease"))
        await on_a.append_frames(APP, "u", "t", frame(1))
        # A stalls past its lease; B takes the thread over and goes on with it.
        await asyncio.sleep(0.5)
        on_b.fence_of = {"t": await take(b_work, b, "t")}.get
        await on_b.append_frames(APP, "u", "t", frame(2))
        # A wakes up: what it writes of t is refused and undone alone, in the same batch
        # as a write of t2, which it still holds.
        refused = on_a.append_frames(APP, "u", "t", frame(2))
        kept = on_a.append_frames(APP, "u", "t2", frame(1))
        with pytest.raises(FencedError):
            await refused
        assert await kept == 1
        assert told == [held["t"]]
        # Every later write under that lease is refused at once, and told once.
        with pytest.raises(FencedError):
            await on_a.append_event(session, said("A, after the takeover"))
        with pytest.raises(FencedError):
            await on_a.save_streamed_text(
                app_name=APP,
                user_id="u",
                session_id="t",
                invocation_id="inv",
                message_id="m",
                author="model",
                text="late",
            )
        assert told == [held["t"]]
        stored = rows(url, "SELECT data FROM events ORDER BY seq")
        assert len(stored) == 1 and "holding the lease" in stored[0][0]
        assert rows(url, "SELECT count(*) FROM streamed_texts") == [(0,)]
        # The frame numbered 2 is B's: A's never collided with it.
        assert await on_b.log_head(APP, "u", "t") == 2
        log = await on_b.frames_after(APP, "u", "t", 1)
        assert [f.seq for f in log.frames] == [2]


async def test_the_holders_own_writes_go_on_while_it_holds_the_lease(url: str) -> None:
    async with process(url) as (a, a_work, on_a):
        fence = await take(a_work, a, "t")
        on_a.fence_of = {"t": fence}.get
        # Its own again (a second take of the same process) keeps the epoch: nothing refused.
        assert await take(a_work, a, "t") == fence
        await on_a.create_session(app_name=APP, user_id="u", session_id="t")
        for seq in range(1, 4):
            await on_a.append_frames(APP, "u", "t", frame(seq))
        assert await on_a.log_head(APP, "u", "t") == 3


async def taken_once_committed(writer: psycopg.Connection, b_work: Conn, b: str) -> Fence:
    """B's take of thread t, which waits while A's transaction (``writer``) holds t's lease
    checked, and goes on once it commits."""
    taking = asyncio.create_task(take(b_work, b, "t"))
    await asyncio.sleep(scaled(0.3))
    assert not taking.done()  # B waits for A's transaction
    writer.commit()
    return await asyncio.wait_for(taking, scaled(5))


async def test_a_takeover_waits_for_a_write_checked_under_the_old_lease(url: str) -> None:
    async with process(url) as (a, a_work, _), process(url) as (b, b_work, _):
        fence = await take(a_work, a, "t", ttl=0.1)
        await asyncio.sleep(0.3)  # A's lease ran out: B may take it
        with psycopg.connect(url) as writer:
            # A's batch: its lease read and locked, its writes not committed yet.
            assert lease_epochs(writer, ["t"]) == {"t": fence.epoch}
            taken = await taken_once_committed(writer, b_work, b)
        assert taken.epoch > fence.epoch
        with psycopg.connect(url) as writer:
            assert lease_epochs(writer, ["t", "none"]) == {"t": taken.epoch}


async def test_a_renewal_passes_a_write_checked_in_its_statement_and_a_takeover_waits(
    url: str,
) -> None:
    """A write that checks its fence in its own statement locks the lease ``FOR KEY SHARE``:
    the holder's heartbeat, which changes no key, renews the lease meanwhile (it waited
    for every batch, and a batch that locked leases out of order could deadlock it); a
    takeover, which sets a new epoch (a key), waits for the write's transaction."""
    async with process(url) as (a, a_work, on_a), process(url) as (b, b_work, _):
        fence = await take(a_work, a, "t", ttl=0.3)
        await on_a.create_session(app_name=APP, user_id="u", session_id="t")
        with psycopg.connect(url) as writer:
            # A's batch: its frames written under the lease, not committed yet.
            assert append_frames(writer, AppendFrames(APP, "u", "t", tuple(frame(1))), fence) == 1
            renewing = leases.renew(a_work, node_id=a, threads=["t"], ttl=0.3)
            assert await asyncio.wait_for(renewing, scaled(5)) == 1
            await asyncio.sleep(0.5)  # A's lease ran out: B may take it
            taken = await taken_once_committed(writer, b_work, b)
        assert taken.epoch > fence.epoch
        # A's next write under the old lease is refused by its statement, and changes nothing.
        with psycopg.connect(url) as writer, pytest.raises(FencedError):
            append_frames(writer, AppendFrames(APP, "u", "t", tuple(frame(2))), fence)
        assert await on_a.log_head(APP, "u", "t") == 1
