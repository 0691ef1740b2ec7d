"""A run's events reach a client in order, each once its writes commit, streamed text
excepted: its chunks go out ahead of their commit, a bounded few at a time
(docs/durability.md).

Two levels. The run's outbox, driven by hand with futures standing in for commits: a held
delivery holds back everything after it, streamed text goes ahead of its commit only with
nothing held before it and within ``UNSTORED_NUMBERS``, and the routing rules (client-tool
calls to the executor only, browser results to observers only) are the same held or not.
Then the real hub, ADK runner and store, with commits slowed down: chunks reach a client
before the store has them, everything else only once it is stored, the run's end only once
the whole reply is, chunks that wait together share one write, and a reattach in the
middle of held chunks, or with a cursor sent ahead of the store, gets each chunk once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from google.adk.models import LlmRequest, LlmResponse

from gateway import wire as p
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.hub import outbox
from gateway.hub.eventlog import seq_of
from gateway.hub.hub import Hub
from gateway.hub.text_bursts import TextBurst
from gateway.hub.threads import Run, Thread
from gateway.store import StoreError
from gateway.store.frames import LoggedFrame
from gateway.store.urls import is_postgres
from gateway.translate.translator import RunTranslator
from tests.support.agui import new_id, user_input
from tests.support.backends import rows
from tests.support.held_store import gated_commits, navigator_hub, slow_commits
from tests.support.subscribers import Recorder

pytestmark = pytest.mark.unit

INTRO = "자기소개를 길게 해 주세요"  # the scripted model answers in 94 chunks


# --- the outbox, by hand ------------------------------------------------------------------


def chunk(message_id: str, delta: str) -> list[p.Event]:
    return [
        p.TextMessageStart(message_id=message_id, role="assistant"),
        p.TextMessageContent(message_id=message_id, delta=delta),
    ]


def client_call(call_id: str) -> list[p.Event]:
    return [
        p.ToolCallStart(tool_call_id=call_id, tool_call_name="navigateToScreen"),
        p.ToolCallArgs(tool_call_id=call_id, delta='{"screenId":"MNU-3120"}'),
        p.ToolCallEnd(tool_call_id=call_id),
    ]


def watched_run() -> tuple[Run, Recorder, Recorder]:
    """A run with its executor and one observer watching."""
    executor, observer = Recorder(), Recorder()
    thread = Thread("t1", "demo")
    thread.watch(executor)
    thread.watch(observer)
    return Run(thread, "r1", executor, RunTranslator("t1", "r1")), executor, observer


def commit() -> asyncio.Future[object]:
    return asyncio.get_running_loop().create_future()


async def test_a_chunk_waits_for_its_commit_and_nothing_overtakes_it() -> None:
    run, executor, observer = watched_run()
    written = commit()
    end: list[p.Event] = [p.TextMessageEnd(message_id="m1")]
    run.emit(chunk("m1", "안녕"), after=written)
    run.emit(end)  # needs no write of its own, yet must not pass the chunk
    await asyncio.sleep(0)
    assert executor.events == observer.events == []
    drained = asyncio.ensure_future(run.outbox.drained())
    await asyncio.sleep(0)
    assert not drained.done()

    written.set_result(None)
    await asyncio.sleep(0)
    assert executor.events == observer.events == [*chunk("m1", "안녕"), *end]
    await asyncio.wait_for(drained, 1)


async def test_with_nothing_held_events_go_out_at_once() -> None:
    run, executor, _ = watched_run()
    run.emit(chunk("m1", "안녕"), after=None)
    written = commit()
    written.set_result(None)
    run.emit([p.TextMessageEnd(message_id="m1")], after=written)
    assert len(executor.events) == 3  # no loop turn needed


async def test_streamed_text_goes_out_ahead_of_its_commit_and_the_rest_waits_for_its_own() -> None:
    run, executor, observer = watched_run()
    text, end = commit(), commit()
    run.emit(chunk("m1", "안녕"), after=text, streamed=True)
    assert executor.events == observer.events == chunk("m1", "안녕")
    assert run.outbox.unstored == 2
    run.emit([p.TextMessageEnd(message_id="m1")], after=end)
    await asyncio.sleep(0)
    assert len(executor.events) == 2, "the message's end waits for its own commit"
    stored = asyncio.ensure_future(run.outbox.stored())
    await asyncio.sleep(0)
    assert not stored.done()

    text.set_result(None)
    end.set_result(None)
    await asyncio.sleep(0)
    assert executor.events[-1] == p.TextMessageEnd(message_id="m1")
    assert run.outbox.unstored == 0
    await asyncio.wait_for(stored, 1)


async def test_streamed_text_never_overtakes_a_held_delivery() -> None:
    run, executor, _ = watched_run()
    call = commit()
    run.emit(client_call("c-browser"), after=call)
    run.emit(chunk("m1", "화면을 엽니다"), after=commit(), streamed=True)
    await asyncio.sleep(0)
    assert executor.events == [] and len(run.outbox) == 2
    call.set_result(None)
    await asyncio.sleep(0)
    assert executor.events == client_call("c-browser"), "the chunk now waits for its commit"


async def test_at_most_unstored_numbers_go_out_ahead_of_the_store(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "gateway.hub.outbox")
    run, executor, _ = watched_run()
    run.thread.head = 0
    logged: list[asyncio.Future[object]] = []

    def log(frames: list[LoggedFrame], *, rides: bool = False) -> asyncio.Future[object]:
        logged.append(commit())
        return logged[-1]

    run.log = log
    run.emit(chunk("m1", "가"), streamed=True)
    for _ in range(outbox.UNSTORED_NUMBERS + 1):  # 3 numbers more than the bound
        run.emit([p.TextMessageContent(message_id="m1", delta="나")], streamed=True)
    sent = [seq_of(e) for e in executor.events]
    assert sent == list(range(1, outbox.UNSTORED_NUMBERS + 1))
    assert len(run.outbox) == 3
    # Operators see the store fall behind, once a run.
    assert caplog.text.count("streamed text waits for the store") == 1

    for written in logged:  # the store commits in order
        written.set_result(None)
    await asyncio.sleep(0)
    assert [seq_of(e) for e in executor.events] == list(range(1, outbox.UNSTORED_NUMBERS + 4))
    assert run.outbox.unstored == 0


async def _script(run: Run, gate: Callable[[], asyncio.Future[object] | None]) -> None:
    """A run that streams text, calls a client and a server tool and relays a result."""
    run.translator.client_calls.add("c-browser")
    run.emit(chunk("m1", "화면을 엽니다"), after=gate())
    run.emit([p.TextMessageEnd(message_id="m1")])
    run.emit(client_call("c-browser"))
    run.emit(client_call("c-server"))
    result = p.ToolCallResult(message_id="tm", tool_call_id="c-browser", content="{}", role="tool")
    run.emit([result], observers_only=True)
    run.emit(chunk("m2", "이동했습니다"), after=gate())
    await asyncio.sleep(0)


async def test_routing_is_the_same_whether_events_wait_or_not() -> None:
    direct, direct_executor, direct_observer = watched_run()
    await _script(direct, lambda: None)

    held, executor, observer = watched_run()
    commits: list[asyncio.Future[object]] = []

    def pending_commit() -> asyncio.Future[object]:
        commits.append(commit())
        return commits[-1]

    await _script(held, pending_commit)
    assert executor.events == observer.events == []
    for written in reversed(commits):  # out of order: deliveries still leave in theirs
        written.set_result(None)
    await asyncio.sleep(0)

    assert executor.events == direct_executor.events
    assert observer.events == direct_observer.events
    browser_events = client_call("c-browser")
    assert all(e in executor.events for e in browser_events)
    assert not any(e in observer.events for e in browser_events)
    assert any(isinstance(e, p.ToolCallResult) for e in observer.events)
    assert not any(isinstance(e, p.ToolCallResult) for e in executor.events)


async def test_a_failed_write_is_logged_and_the_stream_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    run, executor, _ = watched_run()
    written = commit()
    run.emit(chunk("m1", "안녕"), after=written)
    written.set_exception(StoreError("the session store is closed"))
    await asyncio.sleep(0)
    assert executor.events == chunk("m1", "안녕")
    assert "sent unstored" in caplog.text


async def test_a_subscriber_joining_behind_held_chunks_gets_each_once() -> None:
    run, executor, _ = watched_run()
    late = Recorder()
    first, second = commit(), commit()
    run.emit(chunk("m1", "안녕"), after=first)
    # What a reattach sends: the run as of now, including the chunk still held.
    run.join(late, chunk("m1", "안녕"))
    run.emit([p.TextMessageContent(message_id="m1", delta="하세요")], after=second)
    first.set_result(None)
    second.set_result(None)
    await asyncio.sleep(0)
    assert late.text() == executor.text() == "안녕하세요"
    assert late in run.thread.watchers


# --- the real hub, runner and store -------------------------------------------------------


def hub_on(db: str, pace_ms: float) -> contextlib.AbstractAsyncContextManager[Hub]:
    return navigator_hub(db, ScriptedLlm(pace_ms=pace_ms))


# A stored reply's content and metadata, as each database reads its first message.
_REPLY = {
    "sqlite": "SELECT json_extract(messages, '$[0].content'),"
    " json_extract(messages, '$[0].metadata') FROM events WHERE id = ?",
    "postgres": "SELECT messages::json->0->>'content', messages::json->0->>'metadata'"
    " FROM events WHERE id = %s",
}
_STREAMED = {
    "sqlite": "SELECT text FROM streamed_texts WHERE message_id = ?",
    "postgres": "SELECT text FROM streamed_texts WHERE message_id = %s",
}


class DurabilityProbe(Recorder):
    """A client that, as each chunk arrives, looks in the database for the text so far."""

    def __init__(self, db: str) -> None:
        super().__init__()
        self.kind = "postgres" if is_postgres(db) else "sqlite"
        # Its own connection, which sees each commit as it is made.
        self.db: Any = (
            psycopg.connect(db, autocommit=True)
            if is_postgres(db)
            else sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        )
        self.unstored: list[str] = []  # text a client was sent before it was committed
        # How far ahead of the stored log each numbered event was sent, by kind.
        self.ahead: dict[bool, list[int]] = {True: [], False: []}
        # At the run's end, what the store holds of each message the run streamed.
        self.stored_at_end: dict[str, str] = {}

    def deliver(self, event: p.Event) -> None:
        super().deliver(event)
        if (seq := seq_of(event)) is not None:
            text = isinstance(event, p.TextMessageStart | p.TextMessageContent)
            self.ahead[text].append(seq - stored_head(self))
        if isinstance(event, p.RunFinished):
            for message_id in {
                e.message_id for e in self.events if isinstance(e, p.TextMessageStart)
            }:
                self.stored_at_end[message_id] = self._stored(message_id)
        if isinstance(event, p.TextMessageContent):
            received = "".join(
                e.delta
                for e in self.events
                if isinstance(e, p.TextMessageContent) and e.message_id == event.message_id
            )
            if not self._stored(event.message_id).startswith(received):
                self.unstored.append(received)

    def stored_reply(self, message_id: str) -> tuple[str, Any]:
        """The content and metadata of the message stored under ``message_id``."""
        row = self.db.execute(_REPLY[self.kind], (message_id,)).fetchone()
        assert row is not None, f"no reply stored under {message_id}"
        return row[0], json.loads(row[1]) if row[1] else None

    def _stored(self, message_id: str) -> str:
        row = self.db.execute(_STREAMED[self.kind], (message_id,)).fetchone()
        if row is None:  # the whole message may be stored already
            row = self.db.execute(_REPLY[self.kind], (message_id,)).fetchone()
        return str(row[0]) if row and row[0] else ""


def start_input(thread: str) -> p.RunAgentInput:
    return p.decode_input(json.dumps(user_input(thread, INTRO)))


def streamed_rows(db: str) -> int:
    ((count,),) = rows(db, "SELECT COUNT(*) FROM streamed_texts")
    return int(count)


async def test_chunks_reach_a_client_ahead_of_a_slow_store_and_nothing_else_does(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow_commits(monkeypatch, 0.01)
    # Every chunk its own event, as a model sends them all at once: what is tested is the
    # store's grouping, not the driver's (``text_bursts`` joins such chunks, tested apart).
    monkeypatch.setattr(TextBurst, "hold", lambda burst, events: False)
    async with hub_on(db, pace_ms=0) as hub:
        probe = DurabilityProbe(db)
        commits = hub.engine.sessions.commits
        run = await hub.start("demo", start_input(new_id("t")), probe)
        await asyncio.wait_for(run.done.wait(), 30)
        frames = probe.frames()  # a valid AG-UI stream
        chunks = sum(frame["type"] == "TEXT_MESSAGE_CONTENT" for frame in frames)
        assert chunks == 94 and probe.text().startswith("안녕하세요")
        # Text went out while its commit was held back, never more than the bound ahead.
        assert probe.unstored, "every chunk waited for its commit"
        assert 0 < max(probe.ahead[True]) <= outbox.UNSTORED_NUMBERS
        # Every other numbered event, the run's end included, was stored when sent, and
        # by then so was the whole reply.
        assert max(probe.ahead[False]) <= 0
        assert list(probe.stored_at_end.values()) == [probe.text()]
        # Chunks that arrive during one commit share the next: far fewer writes than chunks.
        assert hub.engine.sessions.commits - commits < chunks / 4
        # The run is over only once its last event is out.
        assert frames[-1]["type"] == "RUN_FINISHED"
        assert streamed_rows(db) == 0  # the final event replaced the streamed text
        probe.db.close()


class AheadCounter(Recorder):
    """A client that notes, as each event arrives, whether the run had numbers of its log
    out ahead of their commit: only a chunk that went ahead of its own makes it so."""

    def __init__(self, hub: Hub, thread_id: str) -> None:
        super().__init__()
        self.hub, self.thread_id = hub, thread_id
        self.ahead: dict[bool, int] = {True: 0, False: 0}  # by whether the event is text

    def deliver(self, event: p.Event) -> None:
        super().deliver(event)
        run = self.hub.threads[self.thread_id].run
        if run is not None and run.outbox.unstored > 0:
            self.ahead[isinstance(event, p.TextMessageStart | p.TextMessageContent)] += 1


async def test_an_in_memory_store_s_chunks_go_ahead_of_their_commit_as_a_file_s_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An in-memory store saves no streamed text, and its chunks were once taken for events
    that are not streamed: each waited for its frame's commit, linger and all. Decided by
    what happened, not by timing: the store's commits are held from the reply's first
    chunk until its model is done (with everything before the reply stored and sent
    first), so each chunk within the bound has nothing but its own commit to wait for."""
    gate = gated_commits(monkeypatch)
    monkeypatch.setattr(TextBurst, "hold", lambda burst, events: False)
    streamed = ScriptedLlm.generate_content_async
    async with hub_on(":memory:", pace_ms=0) as hub:
        thread = new_id("t")

        async def held_while_streaming(
            model: ScriptedLlm, request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            async for response in streamed(model, request, stream):
                if response.partial and gate.is_set():  # the reply's first chunk
                    await hub.engine.sessions.flush()
                    run = hub.threads[thread].run
                    assert run is not None
                    await run.outbox.drained()
                    gate.clear()
                elif not response.partial:  # the whole reply, which ADK stores
                    gate.set()
                yield response

        monkeypatch.setattr(ScriptedLlm, "generate_content_async", held_while_streaming)
        client = AheadCounter(hub, thread)
        run = await hub.start("demo", start_input(thread), client)
        await asyncio.wait_for(run.done.wait(), 30)
        assert client.text().startswith("안녕하세요")
        assert client.ahead[True] > 0, "every chunk waited for its commit"
        assert client.ahead[False] == 0, "only streamed text goes ahead of its commit"
        assert client.frames()[-1]["type"] == "RUN_FINISHED"


async def test_a_cancelled_stream_becomes_its_stored_reply_and_leaves_no_text_behind(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow_commits(monkeypatch, 0.002)
    async with hub_on(db, pace_ms=2) as hub:
        thread = new_id("t")
        probe = DurabilityProbe(db)
        run = await hub.start("demo", start_input(thread), probe)
        while len(probe.text()) < 10:
            await asyncio.sleep(0.005)
        assert await hub.cancel("demo", thread)
        await asyncio.wait_for(run.done.wait(), 10)
        assert probe.frames()[-1]["outcome"] == {"type": "cancelled"}
        # The reply is stored, as far as the client was sent it, before the run's end goes out.
        assert max(probe.ahead[False]) <= 0
        [message_id] = {e.message_id for e in probe.events if isinstance(e, p.TextMessageStart)}
        assert probe.stored_reply(message_id) == (probe.text(), {"ended": "stopped"})
        await hub.engine.sessions.flush()
        assert streamed_rows(db) == 0
        probe.db.close()


async def test_a_reattach_among_held_chunks_gets_the_reply_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow_commits(monkeypatch, 0.01)
    monkeypatch.setattr(outbox, "UNSTORED_NUMBERS", 2)  # so that chunks are held
    async with hub_on(str(tmp_path / "threads.db"), pace_ms=2) as hub:
        thread = new_id("t")
        owner, late, gone = Recorder(), Recorder(), Recorder()
        run = await hub.start("demo", start_input(thread), owner)
        held_at_join: list[int] = []
        join = run.join

        def counting_join(subscriber: Any, catch_up: list[p.Event], **kind: bool) -> None:
            held_at_join.append(len(run.outbox))
            join(subscriber, catch_up, **kind)

        run.join = counting_join  # type: ignore[method-assign]
        while len(owner.text()) < 10:
            await asyncio.sleep(0.002)
        assert await hub.reattach("demo", thread, late) is run
        # A connection that closes before its snapshot goes out is never sent it.
        assert await hub.reattach("demo", thread, gone) is run
        hub.leave(gone)
        await asyncio.wait_for(run.done.wait(), 30)

        assert held_at_join and held_at_join[0] > 0, "nothing was held: the test proves nothing"
        frames = late.frames()
        assert [f["type"] for f in frames[:3]] == [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
        ]
        assert late.text() == owner.text() and len(owner.text()) > 300
        assert frames[-1] == owner.frames()[-1]
        assert gone.events == [] and gone not in run.thread.watchers


async def test_an_event_waits_for_its_frame_of_the_log_and_is_numbered_after_the_head() -> None:
    run, executor, observer = watched_run()
    run.thread.head = 41  # the stored head: numbering goes on from it
    logged: list[tuple[list[int], asyncio.Future[object]]] = []

    def log(frames: list[LoggedFrame], *, rides: bool = False) -> asyncio.Future[object]:
        logged.append(([frame.seq for frame in frames], commit()))
        return logged[-1][1]

    run.log = log
    run.emit([p.RunStarted(thread_id="t1", run_id="r1", protocol_version="1.0")])
    run.emit(client_call("call-1"))
    assert [seqs for seqs, _ in logged] == [[42], [43, 44, 45]]
    await asyncio.sleep(0)
    assert executor.events == observer.events == [], "no client holds a number unstored"
    logged[0][1].set_result(42)
    await asyncio.sleep(0)
    assert [seq_of(e) for e in executor.events] == [42] and observer.events == executor.events
    logged[1][1].set_result(45)
    await asyncio.sleep(0)
    assert [seq_of(e) for e in executor.events] == [42, 43, 44, 45]


async def test_a_reattach_with_a_cursor_sent_ahead_of_the_store_gets_the_rest_not_a_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow_commits(monkeypatch, 0.05)
    db = str(tmp_path / "threads.db")
    async with hub_on(db, pace_ms=2) as hub:
        thread = new_id("t")
        owner, late = DurabilityProbe(db), Recorder()
        run = await hub.start("demo", start_input(thread), owner)
        while not (owner.ahead[True] and owner.ahead[True][-1] > 0):
            await asyncio.sleep(0.001)
        cursor = seq_of(owner.events[-1])
        assert cursor is not None and cursor > stored_head(owner), "the test proves nothing"
        # A client that dropped now comes back with the number it was sent last.
        assert await hub.reattach("demo", thread, late, after=cursor) is run
        await asyncio.wait_for(run.done.wait(), 30)

        seen = next(i for i, e in enumerate(owner.events) if seq_of(e) == cursor)
        assert late.events == owner.events[seen + 1 :]
        assert late.events[-1] == owner.events[-1]
        owner.db.close()


def stored_head(probe: DurabilityProbe) -> int:
    ((head,),) = probe.db.execute("SELECT COALESCE(MAX(seq), 0) FROM frames").fetchall()
    return int(head)
