"""The cluster's messages between processes on PostgreSQL: notices of committed frames, a
cancel that reaches the run's holder, releases that wake waiters, a dead holder's threads
handed over, and what nobody of ours sent ignored."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from google.adk.errors.session_not_found_error import SessionNotFoundError

from gateway.cluster.messages import ThreadChanged, encoded
from gateway.cluster.postgres import CHANGES_SECONDS, PostgresCluster
from gateway.store.frames import LoggedFrame
from gateway.store.leases import DeadLease, Taken
from gateway.store.postgres import notify
from gateway.store.writes import ReleaseLeases
from tests.support.budgets import scaled
from tests.support.cluster_hub import Heard, joined, until
from tests.support.postgres import Postgres
from tests.support.stores import session_store

pytestmark = pytest.mark.process


@pytest.fixture
async def url(postgres: Postgres) -> str:
    return postgres.fresh_database()


@pytest.fixture
async def pair(url: str) -> AsyncIterator[list[tuple[PostgresCluster, Heard]]]:
    async with joined(url, 2, check_seconds=0.1) as nodes:
        yield nodes


async def test_frames_committed_on_one_process_are_heard_by_the_others(pair, url: str):
    (_, heard_a), (_, heard_b) = pair
    store = session_store(url)
    await store.open()
    try:
        await store.create_session(app_name="app", user_id="u", session_id="t1")
        await store.append_frames("app", "u", "t1", [LoggedFrame(1, b"x", None, None)])
        # Queued together: one write, one statement, one notice of the latest.
        appended = [
            store.append_frames("app", "u", "t1", [LoggedFrame(seq, b"x", None, None)])
            for seq in (2, 3)
        ]
        await asyncio.gather(*appended)
        await until(lambda: heard_b.commits == [("t1", 1), ("t1", 3)])
        # The writer's own process hears them too.
        await until(lambda: heard_a.commits == [("t1", 1), ("t1", 3)])
        # Frames of a thread that is not there add nothing, and tell nobody.
        with pytest.raises(SessionNotFoundError):
            await store.append_frames("app", "u", "gone", [LoggedFrame(1, b"x", None, None)])
        await asyncio.sleep(0.2)
        assert heard_b.commits == [("t1", 1), ("t1", 3)]
    finally:
        await store.close()


async def test_a_notice_is_delivered_at_commit_and_never_for_a_rollback(pair, url: str):
    (_, _), (_, heard_b) = pair
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await notify.notify(conn, ['{"type":"committed","thread":"gone","seq":1}'])
        await conn.rollback()
        await notify.notify(conn, ['{"type":"committed","thread":"kept","seq":2}'])
        await asyncio.sleep(0.2)
        assert heard_b.commits == []  # not yet committed: nobody hears of it
        await conn.commit()
    await until(lambda: heard_b.commits == [("kept", 2)])


async def test_notices_sent_together_arrive_in_order_from_one_prepared_statement(pair, url: str):
    (_, _), (_, heard_b) = pair
    told = [("t1", 1), ("t2", 1), ("t1", 2), *((f"t{n}", 1) for n in range(3, 80))]
    payloads = [notify.committed(thread, seq) or "" for thread, seq in told]
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        # Every number of payloads is the one statement, prepared after a few uses.
        for count in range(1, 6):
            await notify.notify(conn, payloads[:count])
        await notify.notify(conn, payloads)
        cursor = await conn.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%pg_notify%'"
        )
        assert await cursor.fetchone() == (1,)
    await until(lambda: heard_b.commits[-len(told) :] == told)


async def test_a_cancel_sent_to_any_process_reaches_the_holder_only(pair):
    (a, heard_a), (b, heard_b) = pair
    assert who(await a.take("t1", "u1", "r1")) == ("t1", None)
    assert await b.cancel("t1", "u1")
    assert await b.cancel("t1", "u1", "r1")
    await until(lambda: heard_a.cancels == [("t1", "u1", None), ("t1", "u1", "r1")])
    assert heard_b.cancels == []
    # Another user's cancel, one for a thread nobody runs, or one for a run that is not
    # the holder's (it ended, and another began), reaches nobody.
    assert not await b.cancel("t1", "intruder")
    assert not await b.cancel("t-idle", "u1")
    assert not await b.cancel("t1", "u1", "r0")
    await asyncio.sleep(0.2)
    assert len(heard_a.cancels) == 2


@contextlib.asynccontextmanager
async def patient_pair(url: str) -> AsyncIterator[tuple[PostgresCluster, PostgresCluster]]:
    """Two processes whose waits for a release end only when it is heard (not in 30 s)."""
    a = PostgresCluster(url, lease_seconds=30, check_seconds=30)
    b = PostgresCluster(url, lease_seconds=30, check_seconds=30)
    try:
        await a.start(Heard())
        await b.start(Heard())
        yield a, b
    finally:
        await a.close()
        await b.close()


async def test_a_release_wakes_an_input_waiting_on_another_process(url: str):
    async with patient_pair(url) as (a, b):
        await a.take("t1", "u1", "r1")
        assert await b.take("t1", "u1", "r2") is None
        waiting = asyncio.create_task(b.released("t1"))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        started = time.monotonic()
        a.release("t1")
        await asyncio.wait_for(waiting, 5)
        assert time.monotonic() - started < scaled(2)  # woken, not timed out (30 s)
        assert who(await b.take("t1", "u1", "r2")) == ("t1", None)


async def test_a_release_is_told_only_when_another_process_waits_for_it(url: str):
    """Every process hears every notice, at a cost to its event loop: a release nobody
    waits for is told to nobody, one that another process waits for is told once."""
    async with (
        patient_pair(url) as (a, b),
        await psycopg.AsyncConnection.connect(url, autocommit=True) as listener,
    ):
        await notify.listen(listener, "listener")
        await a.take("t1", "u1", "r1")
        await a.release("t1")  # nobody waits
        await a.take("t1", "u1", "r2")
        assert await b.take("t1", "u1", "r3") is None
        waiting = asyncio.create_task(b.released("t1"))
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as look:

            async def wanted() -> bool:
                cursor = await look.execute("SELECT wanted FROM gateway_leases")
                return await cursor.fetchone() == (True,)

            deadline = time.monotonic() + scaled(5)
            while not await wanted():  # b has asked to be told
                assert time.monotonic() < deadline, "b did not ask to be told"
                await asyncio.sleep(0.01)
        await a.release("t1")
        await asyncio.wait_for(waiting, scaled(2))  # woken, not timed out (30 s)
        heard = [n.payload async for n in listener.notifies(timeout=scaled(0.5))]
        assert [released for released in heard if '"released"' in released] == [
            '{"type":"released","thread":"t1"}'
        ]
        # Taken by b, the lease is no longer waited for: its release is told to nobody.
        assert who(await b.take("t1", "u1", "r3")) == ("t1", None)
        await b.release("t1")
        assert [n.payload async for n in listener.notifies(timeout=scaled(0.5))] == []


async def test_a_lease_taken_twice_by_one_process_goes_with_the_last_release(pair):
    (a, _), (b, _) = pair
    await a.take("t1", "u1", "r1")
    await a.take("t1", "u1", "r2")
    a.release("t1")
    await asyncio.sleep(0.2)
    assert await b.take("t1", "u1", "r3") is None
    a.release("t1")
    await asyncio.wait_for(b.released("t1"), 5)
    assert who(await b.take("t1", "u1", "r3")) == ("t1", None)


# The keeper's statements: its sweep for dead leases, and its renewal of this node's.
KEEPERS = (
    "SELECT l.thread_id, l.user_id, l.holder FROM gateway_leases",
    "UPDATE gateway_leases SET expires_at",
)


async def test_releases_and_thread_changes_queued_together_are_one_statement(
    pair, monkeypatch: pytest.MonkeyPatch
):
    """At a run's end its lease goes and its thread changes at once: what a process queued
    meanwhile costs its event loop one statement, where each release and each batch of
    changes took one of its own."""
    (a, heard_a), (b, heard_b) = pair
    await b.watch("u1")  # told of u1's changes: a connection of u1's is there
    for thread in ("t1", "t2"):
        await a.take(thread, "u1", "r1")
    sent: list[str] = []
    working = a._working
    assert working is not None
    execute = working.execute

    async def counted(query: Any, params: Any = None, **options: Any) -> Any:
        if not str(query).startswith(KEEPERS):  # its rounds go on meanwhile, every 0.1 s
            sent.append(str(query).split(None, 1)[0])
        return await execute(query, params, **options)

    monkeypatch.setattr(working, "execute", counted)
    released = [a.release("t1"), a.release("t2")]
    a.thread_changed("u1", "t1", "updated")
    a.thread_changed("u1", "t3", "created")
    await asyncio.wait_for(asyncio.gather(*released), scaled(5))
    await until(lambda: len(heard_b.changes) == 2)
    assert sent == ["WITH"]
    assert heard_b.changes == [("u1", "t1", "updated"), ("u1", "t3", "created")]
    assert heard_a.changes == []  # its own changes are not news to it
    for thread in ("t1", "t2"):
        assert who(await b.take(thread, "u1", "r2")) == (thread, None)


async def test_frames_under_a_lease_are_told_to_the_other_processes_not_its_holder(url: str):
    """A run's process sends its watchers the run's events itself, and hearing a notice
    costs a process's event loop: the frames a run stores are told to the other processes
    only. Those that close a dead holder's run are told to its taker too: its watchers
    follow them from the log."""
    a, b, c = (PostgresCluster(url, lease_seconds=30, check_seconds=30) for _ in "abc")
    heard = [Heard(), Heard(), Heard()]
    store = session_store(url)
    await store.open()
    try:
        for cluster, hub in zip((a, b, c), heard, strict=True):
            await cluster.start(hub)
        heard_a, heard_b, heard_c = heard
        for cluster in (a, b, c):  # each has watchers of u's threads (``test_watchers``)
            await cluster.watch("u")
        await store.create_session(app_name="app", user_id="u", session_id="t1")
        store.fence_of = a.fence
        await a.take("t1", "u", "r1")
        for seq in (1, 2):
            await store.append_frames("app", "u", "t1", [LoggedFrame(seq, b"x", None, None)])
        await until(lambda: heard_b.commits == heard_c.commits == [("t1", 1), ("t1", 2)])
        await asyncio.sleep(0.2)
        assert heard_a.commits == [] and a.notices["Committed"] == 0
        # A dies holding t1; B takes it over and writes the cut-off run's end.
        await _kill_backends(url, a)
        store.fence_of = b.fence
        taken = await b.take("t1", "u", "takeover")
        assert taken is not None and taken.from_dead == a.node_id
        await store.append_frames("app", "u", "t1", [LoggedFrame(3, b"x", None, None)])
        await until(lambda: heard_b.commits[-1] == heard_c.commits[-1] == ("t1", 3))
    finally:
        for cluster in (a, b, c):
            with contextlib.suppress(Exception):
                await cluster.close()
        await store.close()


async def test_thread_changes_made_together_are_one_notice_to_every_process(pair):
    """Hearing a notice costs a process's event loop: the changes one process makes
    within ``CHANGES_SECONDS`` are one notice, where each was one, told to the processes
    that watch a user it names (``test_watchers``), not to its own."""
    (a, heard_a), (b, heard_b) = pair
    await b.watch("u1")
    made = [("u1", f"t{number}", "updated") for number in range(40)]
    for user, thread, change in made:
        a.thread_changed(user, thread, change)
    await until(lambda: len(heard_b.changes) == len(made))
    assert heard_b.changes == made
    await asyncio.sleep(CHANGES_SECONDS * 2)
    assert b.notices["ThreadsChanged"] == 1 and a.notices["ThreadsChanged"] == 0
    assert heard_a.changes == []  # its own changes are not news to it
    # A process of an earlier version tells a change a notice: still heard.
    payload = encoded(ThreadChanged("old-node", "u2", "t9", "created"))
    async with await psycopg.AsyncConnection.connect(a.url, autocommit=True) as conn:
        await notify.notify(conn, [payload or ""])
    await until(lambda: heard_b.changes[-1] == ("u2", "t9", "created"))


async def test_a_release_takes_the_thread_changes_waiting_with_it(url: str):
    """At a run's end its thread changes (a preview, a title) and its lease go in one
    commit of the store's writer, not the release now and the changes a wait later."""
    store = session_store(url)
    await store.open()
    a, b = (PostgresCluster(url, lease_seconds=30, check_seconds=30) for _ in "ab")
    heard_b = Heard()
    await a.start(Heard())
    await b.start(heard_b)
    await b.watch("u1")
    queued: list[ReleaseLeases] = []

    def submit(write: ReleaseLeases) -> asyncio.Future[object]:
        queued.append(write)
        return store.submit_cluster(write)

    try:
        a.commit_with(submit)
        await a.take("t1", "u1", "r1")
        a.thread_changed("u1", "t1", "updated")
        await asyncio.wait_for(a.release("t1"), scaled(5))
        assert [(w.threads[0][0], len(w.told)) for w in queued] == [("t1", 1)]
        await until(lambda: heard_b.changes == [("u1", "t1", "updated")])
        await asyncio.sleep(CHANGES_SECONDS * 2)
        assert len(queued) == 1  # nothing left to tell after the wait
    finally:
        await a.close()
        await b.close()
        await store.close()


async def test_a_killed_holders_threads_are_handed_to_another_process(url: str):
    a = PostgresCluster(url, lease_seconds=600, check_seconds=0.1)
    heard_a, heard_b = Heard(), Heard()
    b = PostgresCluster(url, lease_seconds=600, check_seconds=0.1)
    await a.start(heard_a)

    async def take_and_close(lease: DeadLease) -> None:
        taken = await b.take(lease.thread_id, lease.user_id, "takeover")
        assert who(taken) == (lease.thread_id, a.node_id)
        b.release(lease.thread_id)

    heard_b.on_dead = take_and_close
    await b.start(heard_b)
    try:
        await a.take("t1", "u1", "r1")
        await asyncio.sleep(0.3)
        assert heard_b.dead == []  # alive: nothing to take over
        started = time.monotonic()
        await _kill_backends(url, a)  # as if a's process were killed
        await until(lambda: len(heard_b.dead) == 1)
        assert time.monotonic() - started < scaled(2)  # not the lease's 600 s
        assert heard_b.dead == [DeadLease("t1", "u1", a.node_id)]
        await asyncio.sleep(0.3)
        assert len(heard_b.dead) == 1  # taken over once
        await until(lambda: heard_a.losses == 1)  # a, if alive after all, stops its runs
    finally:
        await a.close()
        await b.close()


async def test_what_is_not_ours_on_the_channel_is_ignored(pair, url: str):
    (_, _), (_, heard_b) = pair
    junk = ["not json", '{"type":"cancel"}', '{"type":"committed","thread":1,"seq":"x"}', "[]"]
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await notify.notify(conn, junk)
        await notify.notify(conn, ['{"type":"committed","thread":"t1","seq":1}'])
    await until(lambda: heard_b.commits == [("t1", 1)])
    assert heard_b.cancels == []


async def test_a_process_that_leaves_hands_its_threads_to_the_others_at_once(url: str):
    async with patient_pair(url) as (a, b):
        await a.take("t1", "u1", "r1")
        waiting = asyncio.create_task(b.released("t1"))
        await asyncio.sleep(0.1)
        await a.close()
        await asyncio.wait_for(waiting, 5)  # woken, not after 30 s
        # Its run was cut off by the stop: the taker closes it first.
        assert who(await b.take("t1", "u1", "r2")) == ("t1", a.node_id)


async def _kill_backends(url: str, cluster: PostgresCluster) -> None:
    """Ends every backend of ``cluster``'s connections, as the death of its process does,
    and waits until they are gone: signalled only, a backend may still be in
    ``pg_stat_activity`` for the next statement, which takes its process for alive."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
            " WHERE pid IN (SELECT pid FROM gateway_nodes WHERE node_id = %s)",
            (cluster.node_id,),
        )


def who(taken: Taken | None) -> tuple[str, str | None] | None:
    """A lease taken, as the thread and the dead holder it was taken from (its epoch aside)."""
    return None if taken is None else (taken.thread_id, taken.from_dead)


async def test_a_joining_process_forgets_the_killed_processes_that_hold_nothing(url: str):
    a, b, c = (PostgresCluster(url, lease_seconds=600, check_seconds=30) for _ in "abc")
    await a.start(Heard())
    await b.start(Heard())
    try:
        await b.take("t1", "u1", "r1")
        await _kill_backends(url, a)
        await _kill_backends(url, b)  # its thread waits to be taken over: it stays named
        await c.start(Heard())
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            cursor = await conn.execute("SELECT node_id FROM gateway_nodes")
            assert {row[0] for row in await cursor.fetchall()} == {b.node_id, c.node_id}
    finally:
        for cluster in (a, b, c):
            await cluster.close()
