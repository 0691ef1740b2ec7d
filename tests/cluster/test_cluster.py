"""Three gateway processes on one PostgreSQL database act as one gateway.

Real ``agent-gateway`` processes (``tests/support/processes.py``) on a fresh database and loopback
ports, the demo agent and its scripted model: the flagship story with the browser's answer
sent to another process than the one that paused; a reattach on B in the middle of A's run
that follows it live to its end, by cursor or as a new tab; a tab that ran a thread on A
following its next run, sent through B; a cancel sent to B that stops
A's run; and A killed mid-run, after which nothing its client was told is lost or told
twice, no screen opens twice, and the thread runs at once through B. An approval answered
through another process runs its tool once.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from gateway.store.cut_off import FINISHING
from tests.support.agui import (
    AgUiSocket,
    StreamChecker,
    new_id,
    outcome,
    resume,
    seq_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.backends import logged
from tests.support.budgets import scaled
from tests.support.flagship import FLAGSHIP
from tests.support.postgres import Postgres
from tests.support.processes import gateway_process

pytestmark = pytest.mark.process

LONG = "자기소개를 길게 해 주세요"
STARTS_ENDS = ("RUN_STARTED", "RUN_FINISHED")
# Slow enough to act in the middle of a reply, fast enough for the suite.
PACE_MS = 40
# A chunk of the reply the test kills its process in the middle of.
VICTIM_PACE_SECONDS = 0.25


@pytest.fixture(scope="module")
async def database(postgres: Postgres) -> str:
    return postgres.fresh_database()


@pytest.fixture(scope="module")
async def cluster(
    database: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[list[int]]:
    """The ports of three gateway processes on one database; all stopped at the end."""
    logs = tmp_path_factory.mktemp("cluster")
    async with contextlib.AsyncExitStack() as stack:
        ports = []
        for name in "abc":
            _, port = await stack.enter_async_context(
                gateway_process(database, logs / f"{name}.log", pace_ms=PACE_MS)
            )
            ports.append(port)
        yield ports


@contextlib.asynccontextmanager
async def tab(
    port: int, client: str | None = None, user: str = "demo"
) -> AsyncIterator[AgUiSocket]:
    """A /ws connection of the user (the demo's), as one browser tab (``client``) if named."""
    query = f"&clientId={client}" if client else ""
    async with connect(f"ws://127.0.0.1:{port}/ws?user={user}{query}", max_size=None) as ws:
        yield AgUiSocket(ws)


async def until_text(ws: AgUiSocket, events: list[dict[str, Any]], chunks: int = 3) -> None:
    """Reads events until the reply has streamed ``chunks`` pieces of text."""
    while sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events) < chunks:
        events.append(await ws.next())


async def replying(ws: AgUiSocket, thread: str) -> list[dict[str, Any]]:
    """Asks for a long reply on ``ws``; its events once some of its text has streamed."""
    await ws.send(user_input(thread, LONG))
    seen: list[dict[str, Any]] = []
    await until_text(ws, seen)
    return seen


def shape(events: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    """A stream without its text chunks, which each connection groups into frames its way."""
    return [(e["type"], seq_of(e)) for e in events if e["type"] != "TEXT_MESSAGE_CONTENT"]


def continued(seen: list[dict[str, Any]], ws: AgUiSocket) -> AgUiSocket:
    """``ws`` checked as the continuation of a stream whose events so far were ``seen``."""
    checker = StreamChecker()
    for event in seen:
        checker.feed(event)
    ws.checker = checker
    return ws


async def test_a_browser_answer_sent_to_another_process_resumes_the_paused_run(cluster):
    a, b, _ = cluster
    thread = new_id("t")
    async with tab(a, "tab-1") as on_a:
        first = await on_a.run(user_input(thread, FLAGSHIP))
    [navigate] = tool_calls(first, "navigateToScreen")
    assert navigate["args"]["screenId"] == "MNU-3120"
    assert outcome(first) == {"type": "success", "pendingToolCallIds": [navigate["id"]]}
    # The tab comes back through another process of the cluster with what it did.
    async with tab(b, "tab-1") as on_b:
        answer = tool_answer(thread, [(navigate["id"], {"status": "navigated", "message": "ok"})])
        second = await on_b.run(answer)
    assert text_of(second) == "업무 요청 목록 화면으로 이동했습니다."
    assert outcome(second) == {"type": "success"}
    assert not tool_calls(second)  # the paused invocation resumed: nothing asked again


async def test_an_approval_sent_to_another_process_resumes_the_paused_run_once(cluster):
    a, _, c = cluster
    thread = new_id("t")
    async with tab(a) as on_a:
        asked = await on_a.run(user_input(thread, "R-1042 승인해줘"))
    [interrupt] = outcome(asked)["interrupts"]
    assert interrupt["reason"] == "approval"
    async with tab(c) as on_c:
        approved = await on_c.run(resume(thread, interrupt["id"], payload={"approved": True}))
        again = await on_c.run(resume(thread, interrupt["id"], payload={"approved": True}))
    results = [e for e in approved if e["type"] == "TOOL_CALL_RESULT"]
    assert [r["toolCallId"] for r in results] == [interrupt["toolCallId"]]
    assert '"status":"approved"' in results[0]["content"]
    assert text_of(approved) == "R-1042 요청을 승인했습니다."
    # Answered once: the same answer again finds nothing open and runs nothing.
    assert not [e for e in again if e["type"].startswith("TOOL_CALL")]
    assert outcome(again) == {"type": "success"}


async def test_a_reattach_on_another_process_follows_the_run_live_to_its_end(cluster):
    a, b, _ = cluster
    thread = new_id("t")
    async with tab(a) as on_a, tab(b) as on_b:
        seen = await replying(on_a, thread)
        cursor = seq_of(seen[-1])
        assert cursor is not None
        await continued(seen, on_b).send({"type": "reattach", "threadId": thread, "after": cursor})
        followed = await on_b.until_end(timeout=30)
        rest = await on_a.until_end(timeout=30)
    # B's connection got what A's did after the cursor, in order: the same events, the
    # same text (each connection shares frames among text chunks in its own way).
    assert shape(followed) == shape(rest)
    assert text_of(followed) == text_of(rest)
    numbers = [seq_of(e) for e in followed]
    assert numbers == sorted(set(numbers)) and numbers[0] > cursor
    assert outcome(followed)["type"] == "success"
    assert len(text_of(followed)) > 20  # most of the reply came live through B


async def test_a_tab_that_ran_a_thread_follows_its_next_run_sent_through_another_process(
    cluster,
):
    """A tab stays on its thread after its run: the next run, sent by another tab of the
    user's through another process, reaches it live. Its process is told of the thread's
    frames because its run named the user as watched there (a user of its own: no other
    test's tab names it anywhere)."""
    a, b, _ = cluster
    thread, user = new_id("t"), new_id("user")
    async with tab(a, user=user) as on_a:
        await on_a.run(user_input(thread, LONG))
        async with tab(b, user=user) as on_b:
            sent = await on_b.run(user_input(thread, LONG))
        followed = await on_a.until_end(timeout=30)
    assert (followed[0]["type"], followed[-1]["type"]) == STARTS_ENDS
    assert text_of(followed) == text_of(sent)
    assert outcome(followed)["type"] == "success"


def messages_held(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The text messages a client holds after ``events`` (id, role, text): the last
    snapshot's, then those streamed; one streamed while the client holds it fails."""
    held: dict[str, tuple[str, str]] = {}
    for event in events:
        kind = event["type"]
        if kind == "MESSAGES_SNAPSHOT":
            held = {
                m["id"]: (m["role"], m.get("content") or "")
                for m in event["messages"]
                if m["role"] in ("user", "assistant")
            }
        elif kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in held, f"{event['messageId']} shown twice"
            held[event["messageId"]] = (event["role"], "")
        elif kind == "TEXT_MESSAGE_CONTENT":
            role, text = held[event["messageId"]]
            held[event["messageId"]] = (role, text + event["delta"])
    return [(message_id, role, text) for message_id, (role, text) in held.items() if text]


async def test_a_reattach_without_a_cursor_on_another_process_joins_the_run_live(cluster):
    a, b, c = cluster
    thread = new_id("t")
    async with tab(a, "tab-1") as on_a, tab(b, "tab-1") as on_b:
        before = await on_a.run(user_input(thread, "안녕하세요"))
        seen = await replying(on_a, thread)
        # The tab reloads onto B: no cursor, so it is shown the thread as it was before A's
        # run, then that run from its start (its own message too), then live.
        await on_b.send({"type": "reattach", "threadId": thread})
        joined = [await on_b.next()]
        while joined[-1]["type"] != "TEXT_MESSAGE_CONTENT":
            joined.append(await on_b.next())
        rest = await on_a.until_end(timeout=30)
        joined += await on_b.until_end(timeout=30)
    started, snapshot = joined[0], joined[1]
    assert started["type"] == "RUN_STARTED" and started["runId"] == seen[0]["runId"]
    assert snapshot["type"] == "MESSAGES_SNAPSHOT"
    assert [m["content"] for m in snapshot["messages"]] == ["안녕하세요", text_of(before)]
    # B joined while the reply was still streaming, and followed it to its end.
    assert sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in rest) > 3
    assert text_of(joined) == text_of(seen + rest)
    assert outcome(joined)["type"] == "success"
    # What the tab holds is what a snapshot shows afterwards: every message once.
    async with tab(c) as on_c:
        after = await on_c.run({"type": "reattach", "threadId": thread})
    assert messages_held(joined) == messages_held(after)
    assert [role for _, role, _ in messages_held(after)] == ["user", "assistant"] * 2


async def test_a_cancel_sent_to_another_process_stops_the_run(cluster):
    a, b, c = cluster
    thread = new_id("t")
    async with tab(a) as on_a, tab(c) as on_c:
        await replying(on_a, thread)
        await on_c.send({"type": "cancel", "threadId": thread})
        rest = await on_a.until_end(timeout=10)
    assert outcome(rest)["type"] == "cancelled"
    # The thread is free at once, on any process.
    async with tab(b) as on_b:
        assert outcome(await on_b.run(user_input(thread, "안녕하세요")))["type"] == "success"


async def test_a_process_killed_mid_run_loses_nothing_and_its_thread_goes_on(
    cluster, database: str, tmp_path: Path
):
    _, b, c = cluster
    thread = new_id("t")
    # The victim replies slowly: between the reply's second chunk and the kill, another
    # process joins the run and the tab's text is committed, which on a busy machine took
    # longer than the rest of a reply at PACE_MS (the run finished before it was killed).
    victim_pace_ms = scaled(VICTIM_PACE_SECONDS) * 1000
    victim_process = gateway_process(database, tmp_path / "victim.log", pace_ms=victim_pace_ms)
    async with (
        victim_process as (victim, port),
        tab(port, "tab-1") as on_a,
        tab(c) as watching,
    ):
        first = await on_a.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(first, "navigateToScreen")
        answer = tool_answer(thread, [(navigate["id"], {"status": "navigated", "message": "ok"})])
        await on_a.send(answer)
        seen = list(first)
        # The reply resumes on the victim, which dies in the middle of it, followed by a
        # new tab on C that joined it there.
        await until_text(on_a, seen, chunks=2)
        await watching.send({"type": "reattach", "threadId": thread})
        await until_text(watching, [], chunks=1)
        # Text goes out ahead of its commit (docs/durability.md): what the tab saw is stored.
        await logged(database, thread, seq_of(seen[-1]) or 0)
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        killed_at = time.monotonic()
        # The joined tab sees the run end as the log tells it, its stream whole.
        watched = await watching.until_end(timeout=15)
        assert watched[-1]["type"] == "RUN_ERROR"
        assert watched[-1]["code"] == "RUN_INTERRUPTED"  # a process lost, not the unexpected
        assert "stopped before it finished" in watched[-1]["message"]
    cursor = seq_of(seen[-1])
    assert cursor is not None
    async with tab(b, "tab-1") as on_b:
        await continued(seen, on_b).send({"type": "reattach", "threadId": thread, "after": cursor})
        tail = await on_b.until_end(timeout=15)
        everything = seen + tail
        # What the client saw, then the reattach by cursor: the log, in order, once each.
        numbers = [seq_of(e) for e in everything if seq_of(e) is not None]
        assert numbers == sorted(set(numbers))
        # The run's end, written into the log by the process that took the dead lease.
        assert tail[-1]["type"] == "RUN_ERROR"
        assert "stopped before it finished" in tail[-1]["message"]
        assert "TEXT_MESSAGE_END" in [e["type"] for e in tail]
        # No screen opened twice: the one navigation, never asked again.
        assert len(tool_calls(everything, "navigateToScreen")) == 1
        # The thread takes its next message at once, through B. The taker may be asking the
        # model again for the reply the crash cut off: B's tab follows that run, and the
        # message either waits for it (B runs it) or interrupts it (another process does).
        message = user_input(thread, "안녕하세요")
        asked = time.monotonic()
        await on_b.send(message)
        before: list[dict[str, Any]] = []
        while (event := await on_b.next())["type"] != "RUN_STARTED" or (
            event["runId"] != message["runId"]
        ):
            before.append(event)
        assert time.monotonic() - asked < scaled(2)
        assert all(e["runId"].startswith(FINISHING) for e in before if e["type"] in STARTS_ENDS)
        again = [event, *await on_b.until_end()]
        assert outcome(again)["type"] == "success"
        assert time.monotonic() - killed_at < scaled(15)
        assert not tool_calls(again, "navigateToScreen")
