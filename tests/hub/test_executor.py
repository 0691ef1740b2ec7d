"""Issue 14 over /ws: a run's client calls belong to the client instance that asked.

A tab names itself with ``?clientId=`` (the reference client keeps it in sessionStorage, so
it survives a reload but not a new tab). When it comes back on a new connection, after a
reload, a dropped connection or a gateway restart, it is the executor again and is told
which calls are its own; any other connection learns of them from snapshots only.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from gateway.store import rows
from gateway.store.writes import AppendEvent
from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    seq_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.backends import logged
from tests.support.budgets import eventually
from tests.support.counting import counting
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.held_store import before_each_commit
from tests.support.processes import gateway_process
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server


def told_own(events: list[dict[str, Any]]) -> list[str] | None:
    """The calls a ``gateway.executor`` event names as this connection's; None: no event."""
    told = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "gateway.executor"]
    assert len(told) <= 1, told
    return told[0]["value"]["toolCallIds"] if told else None


async def test_the_asking_tab_reattaching_to_an_idle_thread_is_told_its_open_call(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket(query="&clientId=tab-1") as ws:
        asked = await ws.run(user_input(thread, FLAGSHIP))
    [navigate] = tool_calls(asked, "navigateToScreen")
    assert outcome(asked)["pendingToolCallIds"] == [navigate["id"]]

    async with gateway.socket(query="&clientId=tab-1") as again:
        events = await again.run({"type": "reattach", "threadId": thread})
        assert told_own(events) == [navigate["id"]]
        assert outcome(events)["pendingToolCallIds"] == [navigate["id"]]
        # The tab executes it and answers: the paused run goes on.
        answered = await again.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
    assert MOVED in text_of(answered)


async def test_other_tabs_are_shown_the_calls_without_the_thread_being_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At a run's pause on the browser, the snapshot that shows other tabs its calls reads
    the thread's state alone: no stored event is decoded for it (the thread is new, so
    nothing else of the run reads one back). The other tab is shown the call all the same."""
    decoded = counting(monkeypatch, rows, "decoded_event")
    async with running_gateway() as gateway:  # its own: no other test's run reads meanwhile
        thread = new_id("t")
        async with gateway.socket(query="&clientId=tab-1") as ws:
            asked = await ws.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(asked, "navigateToScreen")
        assert decoded == []
        # Another tab replaying the run from the log is sent that snapshot, state and all.
        async with gateway.socket(query="&clientId=tab-2") as other:
            events = await other.run({"type": "reattach", "threadId": thread, "after": 0})
    assert not tool_calls(events, "navigateToScreen")
    [messages] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    assert navigate["id"] in json.dumps(messages["messages"])
    assert [e for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert outcome(events)["pendingToolCallIds"] == [navigate["id"]]


@pytest.mark.parametrize("query", ["&clientId=tab-2", ""], ids=["another tab", "a stock client"])
async def test_no_other_connection_is_told_a_call_is_its_own(
    gateway: RunningGateway, query: str
) -> None:
    thread = new_id("t")
    async with gateway.socket(query="&clientId=tab-1") as ws:
        asked = await ws.run(user_input(thread, FLAGSHIP))
    [navigate] = tool_calls(asked, "navigateToScreen")
    async with gateway.socket(query=query) as other:
        events = await other.run({"type": "reattach", "threadId": thread})
    assert told_own(events) is None
    assert outcome(events)["pendingToolCallIds"] == [navigate["id"]]


async def test_a_stock_client_without_an_id_is_never_told_even_its_own_calls(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        asked = await ws.run(user_input(thread, FLAGSHIP))
    assert tool_calls(asked, "navigateToScreen")
    async with gateway.socket() as again:
        events = await again.run({"type": "reattach", "threadId": thread})
    assert told_own(events) is None


async def test_the_asking_tab_back_mid_run_executes_the_call_the_run_makes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The run may not end before both tabs are back, however slow the machine: the commit of
    # its call of find_screen (which it waits for before going on) waits until both have
    # joined it. A pace alone once let a loaded machine finish the run first.
    both_back = asyncio.Event()

    async def held(writes: Sequence[Any]) -> None:
        if any(isinstance(w, AppendEvent) and '"find_screen"' in w.data for w in writes):
            await both_back.wait()

    before_each_commit(monkeypatch, held)
    async with running_gateway(scripted_pace_ms=30) as gateway:
        thread = new_id("t")
        async with gateway.socket(query="&clientId=tab-1") as gone:
            await gone.send(user_input(thread, FLAGSHIP))
            await gone.next()  # RUN_STARTED: the run is under way, and the tab reloads
        async with (
            gateway.socket(query="&clientId=tab-1") as back,
            gateway.socket(query="&clientId=tab-2") as other,
        ):
            await other.send({"type": "reattach", "threadId": thread})
            await back.send({"type": "reattach", "threadId": thread})
            await eventually(
                lambda: joined(gateway, thread) == 2, 10, what="both tabs joined the run"
            )
            both_back.set()
            events = await back.until_end()
            seen = await other.until_end()
        assert seen[0]["runId"] == events[0]["runId"], "both joined the run in progress"
        assert events[0]["runId"] == gone.received[0]["runId"], "it followed the run live"
        # The call came after the tab was back: it is sent live, to the tab alone.
        [navigate] = tool_calls(events, "navigateToScreen")
        assert told_own(events) is not None, "the tab is told it executes the run"
        assert outcome(events)["pendingToolCallIds"] == [navigate["id"]]
        assert told_own(seen) is None and not tool_calls(seen, "navigateToScreen")


def joined(gateway: RunningGateway, thread_id: str) -> int:
    """How many connections follow the thread's run in progress (joining or watching)."""
    assert gateway.app.hub is not None
    held = gateway.app.hub.threads.get(thread_id)
    if held is None or held.run is None:
        return 0
    return len(held.run.joining) + len(held.watchers)


@pytest.mark.process
async def test_the_call_stays_the_tabs_across_a_gateway_restart(tmp_path: Path) -> None:
    db, log = tmp_path / "threads.db", tmp_path / "gateway.log"
    thread = new_id("t")
    async with gateway_process(db, log, pace_ms=0) as (process, port):
        url = f"ws://127.0.0.1:{port}/ws?user=demo&clientId=tab-1"
        async with connect(url) as raw:
            asked = await AgUiSocket(raw).run(user_input(thread, FLAGSHIP))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    [navigate] = tool_calls(asked, "navigateToScreen")
    async with gateway_process(db, log, pace_ms=0) as (_, port):
        url = f"ws://127.0.0.1:{port}/ws?user=demo&clientId=tab-1"
        async with connect(url) as raw:
            ws = AgUiSocket(raw)
            events = await ws.run({"type": "reattach", "threadId": thread})
            assert told_own(events) == [navigate["id"]]
            answer = tool_answer(thread, [(navigate["id"], {"status": "navigated"})])
            answered = await ws.run(answer)
    assert MOVED in text_of(answered)


async def test_other_tabs_are_sent_the_users_message_and_the_sender_is_not(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket(query="&clientId=tab-1") as sender, gateway.socket() as observer:
        await observer.run({"type": "reattach", "threadId": thread})
        mine = await sender.run(user_input(thread, "안녕", message_id="said-1"))
        seen = await observer.until_end()
    said = [e for e in seen if e.get("messageId") == "said-1"]
    assert [e["type"] for e in said] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    assert said[0]["role"] == "user" and said[1]["delta"] == "안녕"
    assert not [e for e in mine if e.get("messageId") == "said-1"]
    assert text_of(seen) == text_of(mine)


@pytest.mark.parametrize("client_id", ["%20tab", "x" * 300, "tab%0A1"])
async def test_a_malformed_client_id_is_refused_with_a_sentence(
    gateway: RunningGateway, client_id: str
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(gateway.ws_url("demo", f"&clientId={client_id}")):
            pass
    response = refused.value.response
    assert response.status_code == 400
    body = json.loads(response.body or b"{}")
    assert body["type"] == "RUN_ERROR" and body["code"] == "VALIDATION_ERROR"
    assert "clientId" in body["message"]


@pytest.mark.process
async def test_a_reply_a_crash_cuts_off_after_the_browsers_result_is_given_again(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "threads.db", tmp_path / "gateway.log"
    thread = new_id("t")
    async with (
        gateway_process(db, log, pace_ms=60) as (process, port),
        connect(f"ws://127.0.0.1:{port}/ws?user=demo&clientId=tab-1") as raw,
    ):
        ws = AgUiSocket(raw)
        asked = await ws.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(asked, "navigateToScreen")
        await ws.send(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
        while (chunk := await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
            pass
        await logged(str(db), thread, seq_of(chunk) or 0)  # sent ahead of its commit
        process.send_signal(signal.SIGKILL)  # the model was answering the result
        process.wait(timeout=10)
    async with (
        gateway_process(db, log, pace_ms=0) as (_, port),
        connect(f"ws://127.0.0.1:{port}/ws?user=demo&clientId=tab-1") as raw,
    ):
        ws = AgUiSocket(raw)
        for _ in range(50):
            events = await ws.run({"type": "reattach", "threadId": thread})
            if events[0]["runId"].startswith("notice-"):
                break  # the thread is idle: the model has answered again
    [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    messages = snapshot["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == [FLAGSHIP]
    cut, again = [m for m in messages if m["role"] == "assistant" and m.get("content")][-2:]
    assert cut["metadata"] == {"ended": "interrupted"}
    assert again["content"] == MOVED and "metadata" not in again
    assert sum(m["role"] == "tool" and m["toolCallId"] == navigate["id"] for m in messages) == 1
    assert outcome(events) == {"type": "success"}
