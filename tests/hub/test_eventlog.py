"""Issue 16: every event a thread's watchers are sent is numbered in the thread's log, and a
client that comes back with the last number it saw gets exactly what came after."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import wire as p
from gateway.examples.navigator.agent import APP_NAME
from gateway.hub.eventlog import cut_off, replay
from gateway.hub.outbox import UNSTORED_NUMBERS
from gateway.hub.takeover import closing_frames
from gateway.store import SessionService
from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.sqlite import writes as sqlite_writes
from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    seq_of,
    sse_frames,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.counting import counting
from tests.support.flagship import FLAGSHIP, flagship_navigated_then_honest_reply
from tests.support.servers import RunningGateway, running_gateway
from tests.support.stores import session_store

pytestmark = pytest.mark.server

LONG = "자기소개를 길게 해 주세요"
SNAPSHOT_RUN = ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]


def numbers(events: list[dict[str, Any]]) -> list[int | None]:
    return [seq_of(event) for event in events]


def rising(seqs: list[int | None]) -> bool:
    """Numbers that only go up. On the wire they may skip: a connection joins a message's
    text chunks into one frame, which carries the last chunk's number."""
    return all(a is not None and b is not None and a < b for a, b in itertools.pairwise(seqs))


def same_stream(got: list[dict[str, Any]], sent: list[dict[str, Any]]) -> None:
    """The same events, whichever text chunks the connections joined into one frame."""

    def apart(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in events if e["type"] != "TEXT_MESSAGE_CONTENT"]

    assert apart(got) == apart(sent)
    assert text_of(got) == text_of(sent)
    assert numbers(got)[-1:] == numbers(sent)[-1:]


async def stored_numbers(db: str, thread: str) -> list[int]:
    store = session_store(db, read_only=True)
    await store.open()
    try:
        log = await store.frames_after(APP_NAME, "demo", thread, 0)
    finally:
        await store.close()
    return [frame.seq for frame in log.frames]


def continuing(socket: AgUiSocket, seen: AgUiSocket, count: int) -> AgUiSocket:
    """``socket`` checked as the rest of the stream ``seen`` was sent up to its
    ``count``-th event: a reattach by cursor continues a stream, it does not start one."""
    checker = type(seen.checker)()
    for event in seen.received[:count]:
        checker.feed(event)
    socket.checker = copy.deepcopy(checker)
    return socket


async def nothing_more(socket: AgUiSocket, seconds: float = 0.3) -> None:
    with pytest.raises(TimeoutError):
        await socket.next(timeout=seconds)


# --- the store's log -------------------------------------------------------------------


async def test_the_log_keeps_frames_in_order_across_a_restart(db: str) -> None:
    path = db
    store = session_store(path)
    await store.open()
    try:
        await store.create_session(app_name="app", user_id="u", session_id="t")
        first = store.append_frames("app", "u", "t", [LoggedFrame(1, b"a"), LoggedFrame(2, b"b")])
        second = store.append_frames("app", "u", "t", [LoggedFrame(3, b"c", only_for="tab")])
        assert await first == await second == 3, "frames queued together are one write"
        again = store.append_frames("app", "u", "t", [LoggedFrame(3, b"twice")])
        with pytest.raises(Exception, match=r"(?i)unique"):  # SQLite or PostgreSQL says so
            await again  # a second writer of one thread's log is refused, never merged
    finally:
        await store.close()
    reopened = session_store(path)
    await reopened.open()
    try:
        assert await reopened.log_head("app", "u", "t") == 3
        log = await reopened.frames_after("app", "u", "t", 1)
        assert [(f.seq, f.data, f.only_for) for f in log.frames] == [
            (2, b"b", None),
            (3, b"c", "tab"),
        ]
        assert (log.oldest, log.head) == (1, 3)
        first_only = await reopened.frames_after("app", "u", "t", 0, limit=1)
        assert [f.seq for f in first_only.frames] == [1] and first_only.head == 3
        opened = await reopened.open_thread("app", "u", "t")
        assert opened.log_head == 3
        await reopened.delete_session(app_name="app", user_id="u", session_id="t")
        assert await reopened.log_head("app", "u", "t") == 0
    finally:
        await reopened.close()


async def test_a_trim_keeps_the_newest_frames_that_fit_and_always_the_head(
    store: SessionService,
) -> None:
    await store.create_session(app_name="app", user_id="u", session_id="t")
    frames = [LoggedFrame(seq, b"x" * 100) for seq in range(1, 11)]
    await store.append_frames("app", "u", "t", frames)
    await store.trim_frames("app", "u", "t", 350)
    log = await store.frames_after("app", "u", "t", 0)
    assert [f.seq for f in log.frames] == [8, 9, 10]
    await store.trim_frames("app", "u", "t", 10)
    log = await store.frames_after("app", "u", "t", 0)
    assert [f.seq for f in log.frames] == [10] and log.head == 10


# --- numbers on the wire -------------------------------------------------------------------


async def test_numbers_go_up_by_one_per_thread_and_survive_a_restart(db: str) -> None:
    thread, other = new_id("t"), new_id("t")
    async with running_gateway(db=db) as gateway, gateway.socket() as ws:
        first = await ws.run(user_input(thread, "안녕"))
        elsewhere = await ws.run(user_input(other, "안녕"))
        second = await ws.run(user_input(thread, "안녕"))
    # Each RUN_STARTED went out before it had its number (docs/first-event.md).
    assert {numbers(run)[0] for run in (first, elsewhere, second)} == {None}
    assert rising(numbers(first[1:]) + numbers(second[1:]))
    assert (await stored_numbers(db, other))[0] == 1, "numbered per thread"
    head = await stored_numbers(db, thread)
    assert head == list(range(1, len(head) + 1)) and head[-1] == seq_of(second[-1])
    async with running_gateway(db=db) as gateway, gateway.socket() as ws:
        third = await ws.run(user_input(thread, "안녕"))
    stored = await stored_numbers(db, thread)
    assert stored[len(head)] == head[-1] + 1, "a restart continues from the stored head"
    assert stored == list(range(1, len(stored) + 1)) and stored[-1] == seq_of(third[-1])


# --- reattach by cursor on /ws -------------------------------------------------------------


async def test_a_reattach_mid_run_gets_exactly_the_events_after_its_cursor() -> None:
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with gateway.socket() as owner:
            await owner.send(user_input(thread, LONG))
            for _ in range(8):
                await owner.next()
            seen = 5  # the reloaded tab saw the first five events, then lost its connection
            cursor = seq_of(owner.received[seen - 1])
            assert cursor is not None
            async with gateway.socket() as back:
                continuing(back, owner, seen)
                await back.send({"type": "reattach", "threadId": thread, "after": cursor})
                replayed = await back.until_end()
            await owner.until_end()
    missed = [e for e in owner.received if (seq_of(e) or 0) > cursor]
    same_stream(replayed, missed)  # none twice, none lost, in order
    assert rising(numbers(replayed)) and (numbers(replayed)[0] or 0) > cursor
    assert text_of(owner.received[:seen] + replayed) == text_of(owner.received)


async def test_a_reattach_after_the_run_gets_the_rest_and_then_nothing(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        events = await ws.run(user_input(thread, "안녕"))
    cursor = seq_of(events[2])
    assert cursor is not None
    async with gateway.socket(query=f"&threadId={thread}&after={cursor}") as back:
        continuing(back, ws, 3)
        rest = await back.until_end()
        await nothing_more(back)
    same_stream(rest, events[3:])
    head = seq_of(events[-1])
    async with gateway.socket() as caught_up:
        await caught_up.send({"type": "reattach", "threadId": thread, "after": head})
        # Up to date, and told so in a run of its own that keeps its cursor.
        told = await caught_up.until_end()
        assert up_to_date(told) and set(numbers(told)) == {head}
        await nothing_more(caught_up)
        # The connection is a watcher: the thread's next run reaches it live.
        async with gateway.socket() as other_tab:
            await other_tab.run(user_input(thread, "안녕"))
        live = await caught_up.until_end()
    assert numbers(live)[0] == (head or 0) + 1


def up_to_date(events: list[dict[str, Any]]) -> bool:
    """Whether ``events`` are the notice run a reattach that missed nothing gets."""
    kinds = [e["type"] for e in events]
    return kinds == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"] and events[1]["value"]["code"] == (
        "UP_TO_DATE"
    )


async def test_every_reattach_by_cursor_is_answered(gateway: RunningGateway) -> None:
    """A reattach that missed nothing on an idle thread, a thread never used among them,
    with its cursor in a frame or in the URL, is told it is up to date: a client can tell
    "up to date" from "lost"."""
    used, never = new_id("t"), new_id("t")
    async with gateway.socket() as ws:
        head = seq_of((await ws.run(user_input(used, "안녕")))[-1])
    for thread, after in ((used, head), (never, 0)):
        async with gateway.socket(query=f"&threadId={thread}&after={after}") as by_url:
            told = await by_url.until_end()
            assert up_to_date(told) and set(numbers(told)) == {after}
            assert thread in told[1]["value"]["message"]
            await nothing_more(by_url)
        async with gateway.socket() as by_frame:
            told = await by_frame.run({"type": "reattach", "threadId": thread, "after": after})
            assert up_to_date(told) and set(numbers(told)) == {after}
    # A thread never used, with no cursor: its (empty) snapshot, as before.
    async with gateway.socket(query=f"&threadId={never}") as fresh:
        snapshot = await fresh.until_end()
    assert [e["type"] for e in snapshot] == SNAPSHOT_RUN
    assert snapshot[1]["messages"] == []
    # A resumed SSE stream says it by ending at once: EventSource, which comes back whenever
    # a stream ends, is not told again each time.
    response = await resume(gateway, used, {"Last-Event-ID": str(head)})
    assert (response.status_code, sse_frames(response.content)) == (200, [])


async def test_the_run_ends_of_a_story_write_no_trim_of_a_log_that_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A story's log is a few KB, far below ``cursor_bytes``: the store knows the size of
    each log it alone writes, and a run's end trims only a log that may be past it
    (``gateway.store.log_sizes``); ``test_a_cursor_the_log_cannot_answer_gets_the_snapshot``
    shows a log past it trimmed."""
    trims = counting(monkeypatch, sqlite_writes, "trim_frames")
    async with running_gateway(db=str(tmp_path / "threads.db")) as gateway:
        await flagship_navigated_then_honest_reply(gateway)
        assert gateway.app.hub is not None
        sessions = gateway.app.hub.engine.sessions
    assert trims == []
    assert (
        sessions.log_sizes is not None and sessions.log_sizes.spared >= 2
    )  # the story's two runs (and a warm-up's)


@pytest.mark.parametrize("cursor", ["beyond", "trimmed"])
async def test_a_cursor_the_log_cannot_answer_gets_the_snapshot(cursor: str) -> None:
    async with running_gateway(cursor_bytes=1500) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            first = await ws.run(user_input(thread, "안녕"))
            last = await ws.run(user_input(thread, "안녕"))
        after = (seq_of(last[-1]) or 0) + 5 if cursor == "beyond" else seq_of(first[1])
        async with gateway.socket() as back:
            events = await back.run({"type": "reattach", "threadId": thread, "after": after})
    assert [e["type"] for e in events] == SNAPSHOT_RUN
    # A snapshot carries the head it shows: the client's cursor from then on.
    assert set(numbers(events)) == {seq_of(last[-1])}


async def test_live_client_calls_are_replayed_only_to_the_instance_that_owns_them(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket(query="&clientId=tab-1") as tab:
        first = await tab.run(user_input(thread, FLAGSHIP, message_id="said-1"))
    [navigate] = tool_calls(first, "navigateToScreen")
    async with gateway.socket(query="&clientId=tab-1") as owner:
        owned = await owner.run({"type": "reattach", "threadId": thread, "after": 0})
    async with gateway.socket(query="&clientId=tab-2") as other:
        observed = await other.run({"type": "reattach", "threadId": thread, "after": 0})
    # The owner gets its own stream back, calls included, and the run's RUN_STARTED it
    # was sent before its number (docs/first-event.md) with that number.
    assert owned[0]["runId"] == first[0]["runId"] and seq_of(owned[0]) == 1
    same_stream(owned[1:], first[1:])
    assert navigate["id"] in {c["id"] for c in tool_calls(owned)}
    assert not [e for e in observed if e.get("toolCallId") == navigate["id"]]
    assert tool_calls(observed, "find_screen"), "a server tool's calls are everyone's"
    said = [e for e in observed if e.get("messageId") == "said-1"]
    assert [e["type"] for e in said] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ], "another tab is shown the user's message, which its owner sent itself"
    async with gateway.socket(query="&clientId=tab-1") as owner:
        await owner.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))


@pytest.mark.parametrize(
    "after",
    [-1, "5", 1.5, 2**53, 10**30, None, [], {"n": 1}],
    ids=["negative", "string", "float", "huge", "beyond-int64", "null", "list", "object"],
)
async def test_a_hostile_cursor_in_a_frame_is_a_validation_error(
    gateway: RunningGateway, after: Any
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        frame = json.dumps({"type": "reattach", "threadId": thread, "after": after})
        if after is None:
            events = await ws.run(frame)  # null is no cursor: the snapshot
            assert [e["type"] for e in events] == SNAPSHOT_RUN
            return
        error = await ws.refused(frame)
        assert error["code"] == "VALIDATION_ERROR"
        assert "after" in error["message"]
        assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}


@pytest.mark.parametrize(
    "after", ["-1", "abc", "1.5", "99999999999999999999", "0x10", "1_0", "%2B1"]
)
async def test_a_hostile_cursor_on_the_url_is_a_validation_error(
    gateway: RunningGateway, after: str
) -> None:
    thread = new_id("t")
    async with gateway.socket(query=f"&threadId={thread}&after={after}") as ws:
        [error] = await ws.until_end()
        assert error["code"] == "VALIDATION_ERROR"
        assert "?after=" in error["message"] and "whole number" in error["message"]
        assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}


# --- SSE: id lines and Last-Event-ID -------------------------------------------------------


async def post(gateway: RunningGateway, body: dict[str, Any]) -> list[tuple[int | None, Any]]:
    async with httpx.AsyncClient(timeout=20) as client:
        response = await client.post(
            gateway.http + "/invocations", json=body, headers={"X-Gateway-User": "demo"}
        )
    assert response.status_code == 200
    return sse_frames(response.content)


async def resume(
    gateway: RunningGateway, thread: str, headers: dict[str, str] | None = None, query: str = ""
) -> httpx.Response:
    async with httpx.AsyncClient(timeout=20) as client:
        return await client.get(
            f"{gateway.http}/invocations?threadId={thread}{query}",
            headers={"X-Gateway-User": "demo", "Accept": "text/event-stream", **(headers or {})},
        )


async def test_every_sse_frame_of_a_run_carries_its_number_as_its_id(
    gateway: RunningGateway,
) -> None:
    frames = await post(gateway, user_input(new_id("t"), "안녕"))
    ids = [seq for seq, _ in frames]
    assert ids == [seq_of(event) for _, event in frames]
    assert ids[0] == 1 and rising(ids)


async def test_a_0_0_x_client_is_sent_the_numbers_too(gateway: RunningGateway) -> None:
    legacy = {**user_input(new_id("t"), "안녕"), "protocolVersion": None}
    frames = await post(gateway, legacy)
    assert frames[0][1]["type"] == "RUN_STARTED" and "protocolVersion" not in frames[0][1]
    ids = [seq for seq, _ in frames]
    assert ids[0] == 1 and rising(ids) and ids == [seq_of(event) for _, event in frames]


async def test_last_event_id_resumes_a_finished_stream_and_ends(gateway: RunningGateway) -> None:
    thread = new_id("t")
    frames = await post(gateway, user_input(thread, "안녕"))
    response = await resume(gateway, thread, {"Last-Event-ID": str(frames[3][0])})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    resumed = sse_frames(response.content)
    same_stream([event for _, event in resumed], [event for _, event in frames[4:]])
    assert [seq for seq, _ in resumed] == numbers([event for _, event in resumed])
    by_query = await resume(gateway, thread, query=f"&after={frames[3][0]}")
    assert sse_frames(by_query.content) == resumed


async def test_last_event_id_mid_run_replays_then_follows_live_to_the_end() -> None:
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with gateway.socket() as owner:
            await owner.send(user_input(thread, LONG))
            for _ in range(6):
                await owner.next()
            cursor = seq_of(owner.received[2])
            response = await resume(gateway, thread, {"Last-Event-ID": str(cursor)})
            await owner.until_end()
    frames = sse_frames(response.content)
    same_stream([event for _, event in frames], owner.received[3:])
    assert frames[-1][1]["type"] == "RUN_FINISHED"


async def test_a_resumed_stream_without_a_cursor_is_the_snapshot(gateway: RunningGateway) -> None:
    thread = new_id("t")
    frames = await post(gateway, user_input(thread, "안녕"))
    response = await resume(gateway, thread)
    resumed = sse_frames(response.content)
    assert [event["type"] for _, event in resumed] == SNAPSHOT_RUN
    assert {seq for seq, _ in resumed} == {frames[-1][0]}


@pytest.mark.parametrize("cursor", ["-1", "abc", "1e3", "99999999999999999999"])
async def test_a_hostile_last_event_id_is_a_400(gateway: RunningGateway, cursor: str) -> None:
    response = await resume(gateway, new_id("t"), {"Last-Event-ID": cursor})
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "VALIDATION_ERROR" and "Last-Event-ID" in error["message"]


async def test_a_resumed_stream_of_another_users_thread_is_refused(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    await post(gateway, user_input(thread, "안녕"))
    response = await resume(gateway, thread, {"X-Gateway-User": "mallory", "Last-Event-ID": "1"})
    assert response.status_code == 403
    assert response.json()["code"] == "ACCESS_DENIED"


# --- history paging -------------------------------------------------------------------------


async def test_history_pages_by_limit_back_to_the_start(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        for turn in range(3):
            await ws.run(user_input(thread, "안녕", message_id=f"said-{turn}"))
    seen: list[str] = []
    before = ""
    async with httpx.AsyncClient(timeout=20) as client:
        while True:
            response = await client.get(
                f"{gateway.http}/history?threadId={thread}&limit=2{before}",
                headers={"X-Gateway-User": "demo"},
            )
            page = response.json()
            assert len(page["messages"]) <= 2
            seen = [m["id"] for m in page["messages"]] + seen
            if page["earlier"] is None:
                break
            before = f"&before={page['earlier']}"
        whole = (
            await client.get(
                f"{gateway.http}/history?threadId={thread}", headers={"X-Gateway-User": "demo"}
            )
        ).json()
    assert seen == [m["id"] for m in whole["messages"]]
    assert [i for i in seen if i.startswith("said-")] == ["said-0", "said-1", "said-2"]


async def test_snapshots_and_history_say_when_each_message_was_said(
    gateway: RunningGateway,
) -> None:
    """AG-UI messages carry no time: a reloaded page reads each one's from the snapshot."""
    thread = new_id("t")
    started = time.time() * 1000
    async with gateway.socket() as ws:
        await ws.run(user_input(thread, "안녕", message_id="said"))
        await ws.run(user_input(thread, "업무 요청 목록 화면 열어줘", message_id="asked"))
        shown = await ws.run({"type": "reattach", "threadId": thread})
    ended = time.time() * 1000
    [snapshot] = [e for e in shown if e["type"] == "MESSAGES_SNAPSHOT"]
    times = snapshot["metadata"]["gateway.times"]
    said = [m["id"] for m in snapshot["messages"] if m["role"] in ("user", "assistant")]
    # Every message a person reads has its time, in the order said; tool results none.
    assert list(times) == said and "said" in times and "asked" in times
    assert started - 1000 <= times["said"] <= times["asked"] <= ended + 1000
    async with httpx.AsyncClient(timeout=20) as client:
        page = (
            await client.get(
                f"{gateway.http}/history?threadId={thread}", headers={"X-Gateway-User": "demo"}
            )
        ).json()
    assert page["times"] == times


@pytest.mark.parametrize("limit", ["0", "-1", "abc", "1001", "99999999999"])
async def test_a_bad_history_limit_is_a_400(gateway: RunningGateway, limit: str) -> None:
    async with httpx.AsyncClient(timeout=20) as client:
        response = await client.get(
            f"{gateway.http}/history?threadId={new_id('t')}&limit={limit}",
            headers={"X-Gateway-User": "demo"},
        )
    assert response.status_code == 400
    assert "?limit=" in response.json()["message"]


async def test_runs_on_one_thread_keep_numbering_while_watchers_come_and_go() -> None:
    """Numbers stay unique and gapless under concurrent reattaches (the outbox order)."""
    async with running_gateway(scripted_pace_ms=2) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            for _ in range(3):

                async def watch() -> None:
                    async with gateway.socket() as late:
                        await late.send({"type": "reattach", "threadId": thread, "after": 0})
                        await asyncio.sleep(0.05)

                watcher = asyncio.create_task(watch())
                await ws.run(user_input(thread, "안녕"))
                await watcher
    # Its RUN_STARTEDs went out before they had their numbers (docs/first-event.md).
    seqs = numbers([e for e in ws.received if e["type"] != "RUN_STARTED"])
    assert seqs[0] == 5 and rising(seqs)  # after 1, and the user's message (2-4) it sent


async def test_a_cursor_into_a_run_a_crash_cut_off_gets_the_snapshot(db: str) -> None:
    thread = new_id("t")
    async with running_gateway(db=db) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(thread, "안녕"))
    head = seq_of(events[-1]) or 0
    # What a process killed mid-run leaves: its run's first frames, and no end.
    store = session_store(db)
    await store.open()
    try:
        started = {
            "type": "RUN_STARTED",
            "threadId": thread,
            "runId": "cut",
            "protocolVersion": "1.0",
        }
        cut = [LoggedFrame(head + 1, json.dumps(started).encode())]
        await store.append_frames(APP_NAME, "demo", thread, cut)
    finally:
        await store.close()
    async with running_gateway(db=db) as gateway, gateway.socket() as back:
        replayed = await back.run({"type": "reattach", "threadId": thread, "after": head})
        assert [e["type"] for e in replayed] == SNAPSHOT_RUN
        run = await back.run(user_input(thread, "안녕"))
        # Through the cut run into the next one: still the snapshot, never a stream with
        # a run that never ended in it.
        through = await back.run({"type": "reattach", "threadId": thread, "after": head})
        assert [e["type"] for e in through] == SNAPSHOT_RUN
        started = numbers(run)[1]  # its RUN_STARTED went out before it had its number
        async with gateway.socket() as later:
            later.checker.feed(run[0])  # it saw the run begin
            later.checker.feed(run[1])
            rest = await later.run({"type": "reattach", "threadId": thread, "after": started})
        said = {e["messageId"] for e in rest if e.get("role") == "user"}  # the executor's own
        same_stream([e for e in rest if e.get("messageId") not in said], run[2:])
    # Numbering goes on after what was stored: its RUN_STARTED is head + 2, then the rest.
    assert (started or 0) > head + 2
    assert await stored_numbers(db, thread) == list(range(1, (seq_of(run[-1]) or 0) + 1))


def test_a_replay_through_a_run_that_never_ended_is_refused() -> None:
    def frames(*kinds: str, start: int = 1) -> FrameLog:
        logged = [
            LoggedFrame(seq, json.dumps({"type": kind}).encode())
            for seq, kind in enumerate(kinds, start)
        ]
        return FrameLog(logged, logged[0].seq, logged[-1].seq)

    whole = frames("RUN_STARTED", "TEXT_MESSAGE_START", "RUN_FINISHED", "RUN_STARTED", "CUSTOM")
    assert not cut_off(whole, 2, running_since=4), "into the run in progress"
    assert cut_off(whole, 2, running_since=None), "the last run never ended, nothing runs"
    cut = frames("RUN_STARTED", "TEXT_MESSAGE_START", "RUN_STARTED", "CUSTOM")
    assert cut_off(cut, 2, running_since=3), "a run began while the one before was open"
    assert not cut_off(cut, 3, running_since=3), "from the later run's start on"
    # Read from the cursor on, the cut run's start is not in the read: the run in
    # progress (its start not committed yet) began after the cursor, so it is not that one.
    tail = frames("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", start=7)
    assert cut_off(tail, 7, running_since=9)
    assert not cut_off(tail, 7, running_since=5), "the run in progress began before it"


def test_a_cursor_sent_ahead_of_a_commit_a_crash_cut_off_gets_the_snapshot() -> None:
    """Streamed text goes out ahead of its commit (docs/durability.md): a crash can leave a
    client a number the log never held. The run's end, written by whoever takes the thread
    over, comes after a gap, so that number never names another frame."""
    events = [
        p.RunStarted(thread_id="t1", run_id="r1", protocol_version="1.0"),
        p.TextMessageStart(message_id="m1", role="assistant"),
        p.TextMessageContent(message_id="m1", delta="안녕"),
    ]
    stored = [LoggedFrame(seq, p.encode(e)) for seq, e in enumerate(events, 1)]
    ends = closing_frames(FrameLog(stored, 1, 3))
    gap = 3 + UNSTORED_NUMBERS
    assert [frame.seq for frame in ends] == [gap + 1, gap + 2]
    whole = [*stored, *ends]

    def read_after(cursor: int) -> FrameLog:  # as a reattach reads: from the cursor on
        return FrameLog([f for f in whole if f.seq >= cursor], 1, gap + 2)

    for unstored in (4, 5, gap):  # sent ahead of the store, cut off by the crash
        assert replay(read_after(unstored), unstored, None, None) is None
    replayed = replay(read_after(3), 3, None, None)  # the last chunk it had was stored
    assert replayed is not None
    assert [type(e) for e in replayed] == [p.TextMessageEnd, p.RunError]
