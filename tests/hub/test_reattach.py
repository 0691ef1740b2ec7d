"""Issue 6 over /ws: reattach, observers, executor-only client calls, ownership."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    snapshot_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.flagship import FLAGSHIP
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

# A question the scripted model answers at length: a reply long enough to join midway.
LONG = "자기소개를 길게 해 주세요"


@pytest.fixture(scope="module")
def gateway(gateway_on_each_store: RunningGateway) -> RunningGateway:
    """Reattach holds on either store: SQLite in memory, and a PostgreSQL database."""
    return gateway_on_each_store


async def into_a_long_reply(owner: AgUiSocket, thread: str) -> None:
    """Asks for a long reply and reads the owner's stream to its middle."""
    await owner.send(user_input(thread, LONG))
    for _ in range(6):
        await owner.next()


async def test_reattach_to_an_idle_thread_repeats_the_live_ids(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        first = await ws.run(user_input(thread, FLAGSHIP, message_id="user-msg-1"))
        [navigate] = tool_calls(first, "navigateToScreen")
        second = await ws.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
    async with gateway.socket() as again:
        events = await again.run({"type": "reattach", "threadId": thread})
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    messages = snapshot_of(events)
    assert messages[0] == {"id": "user-msg-1", "role": "user", "content": FLAGSHIP}
    live_calls = {c["id"] for c in tool_calls(first)}
    snapshot_calls = {c["id"] for m in messages for c in m.get("toolCalls", [])}
    assert live_calls == snapshot_calls
    [reply_id] = {e["messageId"] for e in second if e["type"] == "TEXT_MESSAGE_START"}
    reply = next(m for m in messages if m["id"] == reply_id)
    assert reply["content"] == "업무 요청 목록 화면으로 이동했습니다."
    tool_message_ids = {m["id"] for m in messages if m["role"] == "tool"}
    sent = {m["id"] for m in tool_answer(thread, [])["messages"]}
    assert tool_message_ids and not (tool_message_ids & sent)
    assert outcome(events) == {"type": "success"}


async def test_reattach_mid_reply_reopens_the_text_and_follows_live() -> None:
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with gateway.socket() as owner, gateway.socket() as late:
            await into_a_long_reply(owner, thread)
            events = await late.run({"type": "reattach", "threadId": thread})
            owner_events = await owner.until_end()
        full = text_of(owner.received)
        assert events[0]["type"] == "RUN_STARTED"
        assert events[0]["runId"] == owner.received[0]["runId"]
        assert [e["type"] for e in events[1:4]] == [
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "TEXT_MESSAGE_START",
        ]
        assert text_of(events) == full, "re-opened text plus the live rest is the whole reply"
        assert outcome(events) == outcome(owner_events) == {"type": "success"}


async def test_pending_client_calls_are_reported_never_resent(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        first = await ws.run(user_input(thread, FLAGSHIP))
    [navigate] = tool_calls(first, "navigateToScreen")
    async with gateway.socket(query=f"&threadId={thread}") as reloaded:
        events = await reloaded.until_end()
        assert not [e for e in events if e["type"].startswith("TOOL_CALL")]
        assert outcome(events) == {"type": "success", "pendingToolCallIds": [navigate["id"]]}
        calls = [c["id"] for m in snapshot_of(events) for c in m.get("toolCalls", [])]
        assert navigate["id"] in calls
        # The reloaded tab may answer: any connection of the user on the thread can.
        done = await reloaded.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
        assert "이동했습니다" in text_of(done)


async def test_observers_never_receive_live_client_calls(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as executor, gateway.socket() as observer:
        await observer.run({"type": "reattach", "threadId": thread})
        mine = await executor.run(user_input(thread, FLAGSHIP))
        seen = await observer.until_end()
        [navigate] = tool_calls(mine, "navigateToScreen")
        assert tool_calls(seen, "find_screen"), "server tool calls are streamed to everyone"
        assert not tool_calls(seen, "navigateToScreen")
        assert outcome(seen)["pendingToolCallIds"] == [navigate["id"]]
        answer = tool_answer(thread, [(navigate["id"], {"status": "navigated"})])
        await executor.run(answer)
        continued = await observer.until_end()
        [result] = [e for e in continued if e["type"] == "TOOL_CALL_RESULT"]
        assert result["toolCallId"] == navigate["id"]
        assert result["messageId"] == answer["messages"][-1]["id"]
        assert "navigated" in result["content"]
        assert "이동했습니다" in text_of(continued)


async def test_two_tabs_both_see_a_run_started_in_either(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as left, gateway.socket() as right:
        await left.run({"type": "reattach", "threadId": thread})
        await right.run({"type": "reattach", "threadId": thread})
        typed_left = await left.run(user_input(thread, "안녕"))
        seen_right = await right.until_end()
        assert text_of(seen_right) == text_of(typed_left)
        typed_right = await right.run(user_input(thread, "고마워"))
        seen_left = await left.until_end()
        assert text_of(seen_left) == text_of(typed_right)


async def test_another_users_thread_is_access_denied(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket(user="demo") as ws:
        await ws.run(user_input(thread, "안녕"))
    async with gateway.socket(user="guest") as intruder:
        denied = await intruder.refused({"type": "reattach", "threadId": thread})
        assert denied["code"] == "ACCESS_DENIED"
        denied = await intruder.refused(user_input(thread, "안녕"))
        assert denied["code"] == "ACCESS_DENIED"
        # Nor may they cancel its runs (README): refused, not "nothing to cancel".
        denied = await intruder.refused({"type": "cancel", "threadId": thread})
        assert denied["code"] == "ACCESS_DENIED"


async def test_reattach_to_an_unknown_thread_is_an_empty_snapshot(
    gateway: RunningGateway,
) -> None:
    async with gateway.socket() as ws:
        events = await ws.run({"type": "reattach", "threadId": new_id("fresh")})
        assert snapshot_of(events) == []
        assert next(e for e in events if e["type"] == "STATE_SNAPSHOT")["snapshot"] == {}


async def test_following_a_new_thread_stops_the_old_one(gateway: RunningGateway) -> None:
    old, new = new_id("t"), new_id("t")
    async with gateway.socket() as follower, gateway.socket() as other:
        await follower.run({"type": "reattach", "threadId": old})
        await follower.run({"type": "reattach", "threadId": new})
        await other.run(user_input(old, "안녕"))
        mine = await follower.run(user_input(new, "고마워"))
        assert {e.get("threadId") for e in mine if "threadId" in e} == {new}


async def test_a_reattach_while_a_run_is_planned_gets_one_valid_stream() -> None:
    async with running_gateway() as gateway:
        engine = gateway.app.hub.engine  # type: ignore[union-attr]
        load = engine.session

        async def slow_load(user_id: str, thread_id: str) -> Any:
            await asyncio.sleep(0.2)  # planning reads the thread slowly
            return await load(user_id, thread_id)

        engine.session = slow_load
        thread = new_id("t")
        async with gateway.socket() as typist, gateway.socket() as other:
            await typist.send(user_input(thread, "안녕"))
            await asyncio.sleep(0.05)
            # The reattach lands while the run is claimed but has not started streaming.
            seen = await other.run({"type": "reattach", "threadId": thread})
            reply = text_of(await typist.until_end())
        # The checker saw one RUN_STARTED for the run; the reply came live.
        assert seen[0]["runId"] == typist.received[0]["runId"]
        assert text_of(seen) == reply


async def test_a_watcher_reattaching_mid_run_gets_the_snapshot_after_the_run() -> None:
    """It follows the run live already: a second RUN_STARTED inside it would be invalid."""
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with gateway.socket() as owner, gateway.socket() as watcher:
            await watcher.run({"type": "reattach", "threadId": thread})
            await owner.send(user_input(thread, LONG))
            first = await watcher.next()
            assert first["type"] == "RUN_STARTED"
            await watcher.send({"type": "reattach", "threadId": thread})
            live = [first, *await watcher.until_end()]  # the checker sees one valid stream
            snapshot = await watcher.until_end()
        assert live[-1]["runId"] == first["runId"]
        assert snapshot[0]["runId"] != first["runId"]
        [reply] = [m for m in snapshot_of(snapshot) if m["role"] == "assistant"]
        assert reply["content"] == text_of(live)


class HeldBranches:
    """Holds the next read of a thread's branches until the test lets it go: a reattach
    stopped between its read of the thread and its look at the run, for the run to end
    or begin meanwhile. Reads after that one go through."""

    def __init__(self, gateway: RunningGateway) -> None:
        self.engine = gateway.app.hub.engine  # type: ignore[union-attr]
        self.read = self.engine.branches
        self.reading, self.go_on = asyncio.Event(), asyncio.Event()
        self.engine.branches = self.held

    async def held(self, user_id: str, thread_id: str) -> Any:
        if not self.reading.is_set():
            self.reading.set()
            await self.go_on.wait()
        return await self.read(user_id, thread_id)


async def test_a_run_that_ends_while_a_reattach_reads_the_thread_ends_for_it_too() -> None:
    """scripts/load.py --kill: a story cut mid-reply reattached, and waited for ever."""
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with gateway.socket() as owner, gateway.socket() as late:
            await into_a_long_reply(owner, thread)
            run = gateway.app.hub.threads[thread].run  # type: ignore[union-attr]
            assert run is not None
            held = HeldBranches(gateway)
            await late.send({"type": "reattach", "threadId": thread})
            await held.reading.wait()
            await owner.until_end()
            await run.done.wait()
            held.go_on.set()
            seen = await late.until_end()
        assert [e["type"] for e in seen] == [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED",
        ]
        assert snapshot_of(seen)[-1]["content"] == text_of(owner.received)
        assert outcome(seen) == {"type": "success"}


async def test_a_run_that_begins_while_a_reattach_reads_the_thread_is_followed_whole() -> None:
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with gateway.socket() as owner, gateway.socket() as late:
            await owner.run(user_input(thread, "안녕"))
            held = HeldBranches(gateway)
            await late.send({"type": "reattach", "threadId": thread})
            await held.reading.wait()
            await owner.send(user_input(thread, LONG))
            started = await owner.next()
            assert started["type"] == "RUN_STARTED"
            held.go_on.set()
            seen = await late.until_end()  # the checker sees one valid stream
            reply = text_of(await owner.until_end())
        # Joined mid-run, the reply comes live; after the run, in the snapshot.
        joined = seen[0]["runId"] == started["runId"]
        assert (text_of(seen) if joined else snapshot_of(seen)[-1]["content"]) == reply
        assert outcome(seen) == {"type": "success"}


async def test_a_thread_let_go_while_a_reattach_reads_it_is_still_watched() -> None:
    """Its only connection went, its run ended meanwhile, and the hub forgot the thread:
    the reattach still follows the thread's next run, started by a third connection."""
    async with running_gateway(scripted_pace_ms=20) as gateway:
        hub = gateway.app.hub  # type: ignore[union-attr]
        thread = new_id("t")
        async with gateway.socket() as owner:
            await into_a_long_reply(owner, thread)
            run = hub.threads[thread].run
            assert run is not None
        async with gateway.socket() as late, gateway.socket() as typist:
            held = HeldBranches(gateway)
            await late.send({"type": "reattach", "threadId": thread})
            await held.reading.wait()
            await run.done.wait()
            assert thread not in hub.threads  # nothing held it: forgotten
            held.go_on.set()
            await late.until_end()
            typed = await typist.run(user_input(thread, "안녕"))
            seen = await late.until_end()
        assert seen[0]["runId"] == typed[0]["runId"]
        assert text_of(seen) == text_of(typed)
