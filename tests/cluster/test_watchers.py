"""The frames a run stores are told only to the processes with watchers of its thread's
user (``Cluster.watch``): hearing a notice costs a process's event loop, and on a cluster
whose users each stay on one process nobody else has a use for them. What a process
reads of a log after naming a user, and every notice after, leaves nothing unheard."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import psycopg
import pytest

from gateway.cluster import postgres as cluster_postgres
from gateway.cluster.postgres import PostgresCluster
from gateway.store.frames import LoggedFrame
from tests.support.cluster_hub import joined, until
from tests.support.postgres import Postgres
from tests.support.stores import session_store

pytestmark = pytest.mark.process


@pytest.fixture
async def url(postgres: Postgres) -> str:
    return postgres.fresh_database()


async def _frames(url: str, holder: PostgresCluster, user: str, thread: str, seqs: range) -> None:
    """``holder`` takes the thread's lease and stores its frames ``seqs`` under it."""
    store = session_store(url)
    await store.open()
    try:
        with contextlib.suppress(Exception):
            await store.create_session(app_name="app", user_id=user, session_id=thread)
        store.fence_of = holder.fence
        await holder.take(thread, user, "r1")
        for seq in seqs:
            await store.append_frames("app", user, thread, [LoggedFrame(seq, b"x", None, None)])
    finally:
        await store.close()


async def test_frames_are_told_only_to_the_processes_that_watch_the_threads_user(url: str):
    async with joined(url, 3, check_seconds=30) as [(a, heard_a), (b, heard_b), (c, heard_c)]:
        await c.watch("u")
        await b.watch("someone else")
        await _frames(url, a, "u", "t1", range(1, 3))
        await until(lambda: heard_c.commits == [("t1", 1), ("t1", 2)])
        await asyncio.sleep(0.2)
        assert heard_b.commits == [] and b.notices["Committed"] == 0
        assert heard_a.commits == [] and a.notices["Committed"] == 0


async def test_a_process_of_an_earlier_version_is_told_of_every_thread(url: str):
    """One that names no users (it does not know how) still follows every thread."""
    async with joined(url, 3, check_seconds=30) as [(a, _), (b, heard_b), (_, heard_c)]:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(
                "UPDATE gateway_nodes SET names_users = false WHERE node_id = %s", (b.node_id,)
            )
        await _frames(url, a, "u", "t1", range(1, 2))
        await until(lambda: heard_b.commits == [("t1", 1)])
        assert heard_c.commits == []


async def test_naming_a_user_waits_for_the_batches_that_did_not_tell_it(url: str):
    """A batch that read who watches the user before the process named it tells it
    nothing: the naming waits for that batch's commit, so the process's read of the log
    after it finds the batch's frames."""
    async with joined(url, 3, check_seconds=30) as [(_, _), (b, _), (_, _)]:
        async with await psycopg.AsyncConnection.connect(url) as batch:
            await batch.execute("SELECT count(*) FROM gateway_node_users")  # still open
            naming = asyncio.create_task(b.watch("u"))
            await asyncio.sleep(0.3)
            assert not naming.done()
            # Meanwhile the process's takes go on, between the naming's tries.
            assert await asyncio.wait_for(b.take("t2", "v", "r1"), 2) is not None
            assert not naming.done()
            await batch.commit()
        await asyncio.wait_for(naming, 5)


async def test_a_user_no_longer_watched_is_let_go_of(url: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cluster_postgres, "UNWATCHED_SECONDS", 0.0)
    async with joined(url, 3, check_seconds=0.05) as [(a, _), (b, heard_b), (c, heard_c)]:
        heard_c.watching.add("u")  # c's hub still has a watcher of u's threads; b's none
        await b.watch("u")
        await c.watch("u")

        async def named() -> set[str]:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                cursor = await conn.execute(
                    "SELECT node_id FROM gateway_node_users WHERE user_id = 'u'"
                )
                return {row[0] for row in await cursor.fetchall()}

        for _ in range(100):
            if await named() == {c.node_id}:
                break
            await asyncio.sleep(0.05)
        assert await named() == {c.node_id}
        await _frames(url, a, "u", "t1", range(1, 2))
        await until(lambda: heard_c.commits == [("t1", 1)])
        await asyncio.sleep(0.2)
        assert heard_b.commits == []
        # Asked for again, it is named again, and kept while its hub watches.
        heard_b.watching.add("u")
        await b.watch("u")
        assert await named() == {b.node_id, c.node_id}
        await asyncio.sleep(0.3)
        assert await named() == {b.node_id, c.node_id}


async def test_thread_changes_are_told_only_to_the_processes_that_watch_a_user_of_theirs(
    url: str,
):
    async with joined(url, 3, check_seconds=30) as [(a, _), (b, heard_b), (c, heard_c)]:
        c.watch_soon("u")  # a connection of u's that hears of their threads' changes
        await until(lambda: "u" in c._watched)
        await b.watch("v")
        a.thread_changed("u", "t1", "updated")
        a.thread_changed("w", "t2", "created")
        await until(lambda: heard_c.changes == [("u", "t1", "updated"), ("w", "t2", "created")])
        await asyncio.sleep(0.3)
        assert heard_b.changes == [] and b.notices["ThreadsChanged"] == 0
        assert a.notices["ThreadsChanged"] == 0  # nor to its teller


async def test_users_asked_for_together_are_named_under_one_lock(
    url: str, monkeypatch: pytest.MonkeyPatch
):
    """Each naming locks the table every process's batches read: a ramp of new users
    costs a lock for those asked for meanwhile, not one a user."""
    async with joined(url, 1, check_seconds=30) as [(a, _)]:
        working = a._working
        assert working is not None
        execute, locks = working.execute, []

        async def counted(query: Any, params: Any = None, **options: Any) -> Any:
            if str(query).startswith("LOCK"):
                locks.append(query)
            return await execute(query, params, **options)

        monkeypatch.setattr(working, "execute", counted)
        await asyncio.gather(*(a.watch(f"u{n}") for n in range(20)))
        assert len(locks) == 1
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            cursor = await conn.execute(
                "SELECT count(*) FROM gateway_node_users WHERE node_id = %s", (a.node_id,)
            )
            assert await cursor.fetchone() == (20,)
