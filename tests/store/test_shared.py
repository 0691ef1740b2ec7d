"""Several gateways on one PostgreSQL database: what one process owning a file gave SQLite.

Each ``SessionService`` here stands for a gateway process (its own connections, its own
writer): the revision check, the creation of a new thread, state merges and the usage
count must hold between them in SQL. Also the database's health as each one sees it: a
connection the server drops is reopened, and an outage shows in ``can_commit`` until the
database is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator

import psycopg
import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.events import Event, EventActions
from google.genai import types

from gateway.audit.log import AuditLog
from gateway.store import SessionService, group_commit
from gateway.store.errors import StoreError
from tests.support.audit import record
from tests.support.backends import rows
from tests.support.budgets import scaled
from tests.support.postgres import Postgres
from tests.support.stores import session_store

pytestmark = pytest.mark.process

APP = "app"


def said(text: str, invocation: str = "inv", **state: object) -> Event:
    return Event(
        invocation_id=invocation,
        author="user",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=dict(state)) if state else EventActions(),
    )


@pytest.fixture
def url(postgres: Postgres) -> str:
    return postgres.fresh_database(empty=True)  # the stores race to create the schema


@contextlib.asynccontextmanager
async def gateways(url: str, count: int = 2) -> AsyncIterator[list[SessionService]]:
    """``count`` stores on one database, as as many gateway processes would open it."""
    stores = [session_store(url) for _ in range(count)]
    try:
        # All at once, as processes started together: one creates the schema, the rest wait.
        await asyncio.gather(*(store.open() for store in stores))
        yield stores
    finally:
        for store in stores:
            await store.close()


async def test_an_append_through_a_copy_another_process_outdated_is_refused(url: str) -> None:
    async with gateways(url) as (a, b):
        await a.create_session(app_name=APP, user_id="u", session_id="t")
        on_a = await a.get_session(app_name=APP, user_id="u", session_id="t")
        on_b = await b.get_session(app_name=APP, user_id="u", session_id="t")
        assert on_a is not None and on_b is not None
        await a.append_event(on_a, said("first, on A"))
        with pytest.raises(StaleSessionError):
            await b.append_event(on_b, said("second, on B's old copy"))
        reloaded = await b.get_session(app_name=APP, user_id="u", session_id="t")
        assert reloaded is not None
        await b.append_event(reloaded, said("on B, reloaded"))
        with pytest.raises(StaleSessionError):
            await a.append_event(on_a, said("A's copy is old now"))
        stored = rows(url, "SELECT data FROM events ORDER BY seq")
        assert len(stored) == 2 and "reloaded" in stored[1][0]


async def test_racing_appends_from_two_processes_store_exactly_one(url: str) -> None:
    async with gateways(url) as (a, b):
        await a.create_session(app_name=APP, user_id="u", session_id="t")
        for turn in range(20):
            copies = [
                await store.get_session(app_name=APP, user_id="u", session_id="t")
                for store in (a, b)
            ]
            outcomes = await asyncio.gather(
                *(
                    store.append_event(copy, said(f"turn {turn}"))
                    for store, copy in zip((a, b), copies, strict=True)
                    if copy is not None
                ),
                return_exceptions=True,
            )
            assert sum(isinstance(o, Event) for o in outcomes) == 1, outcomes
            assert sum(isinstance(o, StaleSessionError) for o in outcomes) == 1, outcomes
        assert rows(url, "SELECT count(*), max(revision) FROM events, sessions") == [(20, 20)]


async def test_one_new_thread_opened_by_two_processes_at_once_is_one_thread(url: str) -> None:
    async with gateways(url, 3) as stores:
        threads = [f"t{n}" for n in range(30)]
        for thread in threads:
            opened = await asyncio.gather(
                *(store.open_thread(APP, f"user-{i}", thread) for i, store in enumerate(stores))
            )
            assert sum(o.created for o in opened) == 1
            owners = {o.owner for o in opened}
            assert len(owners) == 1  # everyone is told the same owner
            (owner,) = owners
            for i, o in enumerate(opened):
                assert (o.session is not None) == (f"user-{i}" == owner)
        assert rows(url, "SELECT count(*) FROM sessions") == [(len(threads),)]


async def test_state_merged_by_several_processes_at_once_loses_nothing(url: str) -> None:
    async with gateways(url, 3) as stores:
        sessions = [
            await store.create_session(app_name=APP, user_id="u", session_id=f"t{i}")
            for i, store in enumerate(stores)
        ]

        async def writes(index: int) -> None:
            store, session = stores[index], sessions[index]
            for n in range(15):
                state = {f"user:k{index}_{n}": n, f"app:k{index}_{n}": n, f"own{n}": index}
                await store.append_event(session, said(f"{index}/{n}", **state))

        await asyncio.gather(*(writes(i) for i in range(len(stores))))
        user_state = await stores[0].get_user_state(app_name=APP, user_id="u")
        assert user_state == {f"k{i}_{n}": n for i in range(3) for n in range(15)}
        loaded = await stores[1].get_session(app_name=APP, user_id="u", session_id="t2")
        assert loaded is not None
        assert {k: v for k, v in loaded.state.items() if k.startswith("app:")} == {
            f"app:k{i}_{n}": n for i in range(3) for n in range(15)
        }
        assert {k: v for k, v in loaded.state.items() if k.startswith("own")} == {
            f"own{n}": 2 for n in range(15)
        }


async def test_usage_counts_what_every_process_stored(url: str) -> None:
    async with gateways(url) as (a, b):
        for store, thread in ((a, "ta"), (b, "tb")):
            opened = await store.open_thread(APP, "u", thread)
            assert opened.session is not None
            for n in range(5):
                await store.append_event(opened.session, said(f"{thread} {n}"))
        usage = (await a.open_thread(APP, "u", "ta")).usage
        ((stored,),) = rows(
            url, "SELECT sum(octet_length(data) + coalesce(octet_length(messages), 0)) FROM events"
        )
        assert (usage.threads, usage.stored_bytes) == (2, stored)


async def test_restarting_on_a_shared_database_leaves_other_processes_runs_open(
    url: str,
) -> None:
    async with gateways(url) as (a, b):
        for thread in ("live", "dead"):
            session = await a.create_session(app_name=APP, user_id="u", session_id=thread)
            await a.append_event(session, said("answer at length"))
            a.save_streamed_text(
                app_name=APP,
                user_id="u",
                session_id=thread,
                invocation_id="inv",
                message_id=f"m-{thread}",
                author="agent",
                text="so far",
            )
        await a.flush()
        assert b.shared
        assert not await b.sole_writer()  # A is alive: its open runs may be live ones
        # B takes over only the thread whose process is gone; A's live run stays as it is.
        assert await b.close_interrupted_thread(APP, "dead", author="agent") is None
        assert await b.close_interrupted_thread(APP, "dead", author="agent") is None
        dead = await b.get_session(app_name=APP, user_id="u", session_id="dead")
        live = await b.get_session(app_name=APP, user_id="u", session_id="live")
        assert dead is not None and live is not None
        assert [e.id for e in dead.events][-1] == "m-dead"
        assert len(live.events) == 1
        assert rows(url, "SELECT message_id FROM streamed_texts") == [("m-live",)]


def _server(url: str) -> tuple[str, str]:
    """The URL of the server's ``postgres`` database, and the name of the one ``url`` names."""
    base, name = url.rsplit("/", 1)
    return f"{base}/postgres", name


async def _terminate(url: str, application: str) -> int:
    """Ends the server side of the store's connections named ``application``."""
    admin_url, name = _server(url)
    with psycopg.connect(admin_url, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = %s AND application_name = %s",
            (name, application),
        ).fetchone()
    return int(ended[0]) if ended else 0


async def test_a_connection_the_server_dropped_is_reopened_and_nothing_fails(url: str) -> None:
    async with gateways(url, 1) as (store,):
        session = await store.create_session(app_name=APP, user_id="u", session_id="t")
        assert await _terminate(url, "agent-gateway store-writer") == 1
        assert await _terminate(url, "agent-gateway store-reader") == 1
        await store.append_event(session, said("after the drop"))
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert loaded is not None and len(loaded.events) == 1
        assert store.can_commit


async def test_an_outage_shows_until_the_database_is_back(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_commit, "PROBE_SECONDS", 0.05)
    admin_url, name = _server(url)
    async with gateways(url, 1) as (store,):
        health: list[bool] = []
        store.health_listeners.append(health.append)
        session = await store.create_session(app_name=APP, user_id="u", session_id="t")
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'.encode())
            try:
                await _terminate(url, "agent-gateway store-writer")
                await _terminate(url, "agent-gateway store-reader")
                with pytest.raises(StoreError):
                    await store.append_event(session, said("while it is down"))
                assert not store.can_commit
                with pytest.raises(StoreError, match="cannot be read"):
                    await store.get_session(app_name=APP, user_id="u", session_id="t")
            finally:
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'.encode())
        deadline = time.monotonic() + scaled(10)
        while not store.can_commit and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert store.can_commit and health == [False, True]  # the probe learned of it
        await store.append_event(session, said("back"))
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert loaded is not None and len(loaded.events) == 1


async def test_a_gateway_alone_on_the_database_knows_it(url: str) -> None:
    async with gateways(url, 1) as (alone,):
        assert await alone.sole_writer()
        async with gateways(url, 2) as others:
            for store in (alone, *others):
                assert not await store.sole_writer()
        # The others are gone with their connections, once the server has ended their sessions.
        deadline = time.monotonic() + scaled(10)
        while not await alone.sole_writer():
            assert time.monotonic() < deadline, "the closed stores still count as writers"
            await asyncio.sleep(0.05)
        reader = session_store(url, read_only=True)  # an operator command is no writer
        await reader.open()
        try:
            assert await alone.sole_writer()
        finally:
            await reader.close()


async def test_a_nul_a_client_or_model_sends_is_stored_not_refused(url: str) -> None:
    """PostgreSQL's text holds no NUL; one must not fail a write, or an audit batch."""
    async with gateways(url, 1) as (store,):
        session = await store.create_session(app_name=APP, user_id="u", session_id="t")
        await store.append_event(session, said("a\x00b", **{"user:k": "v\x00"}))
        await store.save_streamed_text(
            app_name=APP,
            user_id="u",
            session_id="t",
            invocation_id="inv",
            message_id="m",
            author="agent",
            text="so\x00far",
        )
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert loaded is not None and loaded.state["user:k"] == "v\x00"  # JSON keeps it
        assert rows(url, "SELECT text FROM streamed_texts") == [("so\ufffdfar",)]
        audit = AuditLog(url)
        await audit.open()
        try:
            audit.record(dataclasses.replace(record("t", "u"), outcome="denied", detail="x\x00"))
            assert [r.detail for r in await audit.query()] == ["x\ufffd"]
        finally:
            await audit.close()
