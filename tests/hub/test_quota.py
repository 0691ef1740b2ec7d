"""What one user may keep: threads, and bytes of stored events; past either, a coded refusal.

A quota never strands a thread: answers to calls already asked still go through.
"""

from __future__ import annotations

import sqlite3

import pytest

from gateway import wire as p
from gateway.hub.limits import Quota
from gateway.store import SCHEMA_VERSION, Usage
from tests.support.adk_events import agent_says, user_says
from tests.support.agui import new_id, outcome, text_of, tool_answer, tool_calls, user_input
from tests.support.backends import APP, reopened
from tests.support.flagship import FLAGSHIP
from tests.support.schema_v1 import drop_user_usage
from tests.support.servers import running_gateway
from tests.support.stores import session_store

pytestmark = pytest.mark.unit


def test_the_quota_refuses_a_new_thread_or_turn_past_it_and_nothing_else() -> None:
    quota = Quota(threads=2, stored_bytes=1000)
    quota.check(Usage(2, 999), new_thread=True, new_turn=True)
    with pytest.raises(p.GatewayError) as refused:
        quota.check(Usage(3, 0), new_thread=True, new_turn=True)
    assert refused.value.code is p.ErrorCode.SERVICE_QUOTA_EXCEEDED
    quota.check(Usage(3, 0), new_thread=False, new_turn=True)  # a thread it already has
    with pytest.raises(p.GatewayError) as full:
        quota.check(Usage(1, 1000), new_thread=False, new_turn=True)
    assert "GATEWAY_USER_STORED_BYTES" in full.value.message
    quota.check(Usage(1, 5000), new_thread=False, new_turn=False)  # an answer goes through
    Quota().check(Usage(10**6, 10**12), new_thread=True, new_turn=True)  # 0: unlimited


@pytest.mark.server
async def test_a_user_past_their_threads_is_refused_a_new_one_and_keeps_the_old() -> None:
    async with running_gateway(user_threads=2) as gateway:
        async with gateway.socket("demo") as ws, gateway.socket("guest") as other:
            first, second = new_id("t"), new_id("t")
            for thread in (first, second):
                assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}
            refused = new_id("t")
            error = await ws.refused(user_input(refused, "안녕"))
            assert error["code"] == "SERVICE_QUOTA_EXCEEDED"
            assert "2 threads" in error["message"]
            assert outcome(await ws.run(user_input(first, "안녕"))) == {"type": "success"}
            assert outcome(await other.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}
        assert gateway.app.hub is not None
        assert await gateway.app.hub.engine.thread_owner(refused) is None  # nothing was kept


@pytest.mark.server
async def test_a_user_past_their_stored_bytes_is_refused_new_turns_but_answers_go_through() -> None:
    async with running_gateway(user_stored_bytes=40_000) as gateway, gateway.socket() as ws:
        paused = new_id("t")
        [call] = tool_calls(await ws.run(user_input(paused, FLAGSHIP)), "navigateToScreen")
        chatty = new_id("t")
        for _ in range(20):
            events = await ws.run(user_input(chatty, "안녕 " + "가" * 3000))
            if events[-1]["type"] == "RUN_ERROR":
                break
        assert events[-1]["code"] == "SERVICE_QUOTA_EXCEEDED", events[-1]
        assert "GATEWAY_USER_STORED_BYTES" in events[-1]["message"]
        # The thread that waits on the browser is not stranded.
        answered = await ws.run(tool_answer(paused, [(call["id"], {"status": "navigated"})]))
        assert text_of(answered) == "업무 요청 목록 화면으로 이동했습니다."


async def test_an_older_file_counts_what_its_threads_hold(tmp_path: object) -> None:
    path = f"{tmp_path}/threads.db"
    store = session_store(path)
    await store.open()
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    for event in (user_says("hello " * 100), agent_says("hi")):
        await store.append_event(session, event)
    usage = (await store.open_thread(APP, "u", "t")).usage
    await store.close()
    assert usage.threads == 1 and usage.stored_bytes > 600
    with sqlite3.connect(path) as db:  # as schema 5 left it
        drop_user_usage(db)  # schema 12's totals
        db.execute("DROP TABLE thread_words")  # schema 10's thread index
        db.execute("DROP INDEX sessions_by_activity")
        for column in ("title", "title_source", "preview", "pinned", "archived", "metadata"):
            db.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
        db.execute("ALTER TABLE sessions DROP COLUMN stored_bytes")
        db.execute("DROP TABLE frames")
        db.execute("ALTER TABLE sessions DROP COLUMN branch")
        db.execute("DROP TABLE branches")
        db.execute("DROP TABLE branch_events")
        db.execute("UPDATE schema_version SET version = 5")
    store = await reopened(path)
    try:
        assert (await store.open_thread(APP, "u", "t")).usage == usage
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        await store.close()


async def test_a_users_usage_follows_their_threads_without_summing_them_each_turn() -> None:
    """What a turn is checked against is each user's totals, kept as threads are made,
    grow and go: it stays what a sum over the threads says, and costs one row to read."""
    store = await reopened(":memory:")
    try:
        for user, threads in (("ann", ("a1", "a2", "a3")), ("bob", ("b1",))):
            for thread in threads:
                opened = await store.open_thread(APP, user, thread)
                assert opened.session is not None
                await store.append_event(opened.session, user_says("hello " * 50))
                await store.append_event(opened.session, agent_says("hi"))
        await store.delete_session(app_name=APP, user_id="ann", session_id="a2")
        ann = (await store.open_thread(APP, "ann", "a1")).usage
        (summed,) = await store._read(
            lambda db: db.execute(
                "SELECT COUNT(*), SUM(stored_bytes) FROM sessions WHERE user_id = 'ann'"
            ).fetchall()
        )
        assert (ann.threads, ann.stored_bytes) == summed
        assert ann.threads == 2 and ann.stored_bytes > 600
        assert (await store.open_thread(APP, "bob", "b2")).usage.threads == 2  # b2 counted in
        plan = await store._read(
            lambda db: db.execute(
                "EXPLAIN QUERY PLAN SELECT threads, stored_bytes FROM user_usage"
                " WHERE app_name = ? AND user_id = ?",
                (APP, "ann"),
            ).fetchall()
        )
        assert "PRIMARY KEY" in str(plan)
    finally:
        await store.close()
