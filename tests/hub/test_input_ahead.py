"""The model is called while a run's input commits; nothing answers the input before it is
stored (docs/first-event.md, docs/durability.md).

ADK's runner stores a run's input (the user's message, the browser's answer) before it calls
the model; the store goes on with the model call once the input is queued, not committed
(``SessionService.input_ahead``), and the driver sends nothing of the stream before that
commit is done. The real hub, ADK runner and store on a SQLite file, with another
connection holding the file's write lock or every commit slowed down. And the read that
comes before: a thread the hub has in hand is read beside the writer, at once on the loop,
and a run that came and went during that read makes the claim read again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.models.llm_request import LlmRequest

from gateway import wire as p
from gateway.context import Caller
from gateway.examples.navigator.scripted import Reply, ScriptedLlm
from gateway.hub.busy import Busy
from gateway.hub.hub import Hub
from gateway.hub.refusals import Claimed
from tests.support.agui import StreamChecker, new_id, user_input
from tests.support.budgets import eventually, scaled
from tests.support.held_store import navigator_hub, slow_commits, write_lock_held
from tests.support.turns import without_a_turn

pytestmark = pytest.mark.unit

HELLO = "안녕하세요"
INTRO = "자기소개를 길게 해 주세요"  # the scripted model answers in 94 chunks

# The model's calls, by the last thing the user said to it.
CALLED: list[str] = []


class CountedLlm(ScriptedLlm):
    def reply(self, llm_request: LlmRequest) -> Reply:
        CALLED.append(str(llm_request.contents[-1].parts[0].text))  # type: ignore[index]
        return super().reply(llm_request)


class Client:
    """A subscriber that keeps what it is sent, and whether the thread held the input's
    message when the first text of the reply reached it."""

    client: str | None = None

    def __init__(self, db: str, said: str) -> None:
        self.events: list[p.Event] = []
        self._db, self._said = db, said
        self.input_stored_at_first_text: bool | None = None

    def deliver(self, event: p.Event) -> None:
        self.events.append(event)
        if isinstance(event, p.TextMessageContent) and self.input_stored_at_first_text is None:
            self.input_stored_at_first_text = self._said in stored_texts(self._db)

    def types(self) -> list[str]:
        checker = StreamChecker()
        frames = [json.loads(p.encode(event)) for event in self.events]
        for frame in frames:
            checker.feed(frame)
        return [frame["type"] for frame in frames]


def client_text(client: Client) -> list[str]:
    return [e.delta for e in client.events if isinstance(e, p.TextMessageContent)]


def stored_texts(db: str) -> str:
    """Every stored event's data of the file, read as an operator would, over its own
    connection: what is committed."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return "".join(str(data) for (data,) in conn.execute("SELECT data FROM events"))


def hub_on(db: str, pace_ms: float) -> contextlib.AbstractAsyncContextManager[Hub]:
    return navigator_hub(db, CountedLlm(pace_ms=pace_ms))


def said(thread: str, text: str) -> p.RunAgentInput:
    return p.decode_input(json.dumps(user_input(thread, text)))


async def test_the_model_is_called_while_the_input_commits(tmp_path: Path) -> None:
    db = str(tmp_path / "threads.db")
    async with hub_on(db, pace_ms=0) as hub:
        thread = new_id("t")
        first = await hub.start("demo", said(thread, HELLO), Client(db, HELLO))
        await asyncio.wait_for(first.done.wait(), scaled(10))
        CALLED.clear()
        client = Client(db, INTRO)
        with write_lock_held(db):
            run = await asyncio.wait_for(hub.start("demo", said(thread, INTRO), client), scaled(5))
            # The thread was read beside the writer, and the model asked, while the input's
            # commit waits for the lock: before, both waited for it.
            await eventually(lambda: INTRO in CALLED, 5, what="the model was not called")
            assert INTRO not in stored_texts(db)
            assert not any(isinstance(e, p.TextMessageContent) for e in client.events)
        await asyncio.wait_for(run.done.wait(), scaled(30))
        assert client.input_stored_at_first_text is True
        assert client.types()[-1] == "RUN_FINISHED"
        # Stored in order: the input, then the reply to it.
        session = await hub.engine.session("demo", thread)
        assert session is not None
        spoken = [
            part.text
            for event in session.events
            if event.content is not None
            for part in event.content.parts or []
            if part.text
        ]
        assert spoken[-2:] == [INTRO, "".join(client_text(client))]


async def test_nothing_of_the_reply_goes_out_before_the_input_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamed text goes out ahead of its own commit; never ahead of the input's.

    As under load, the writer commits the run's opening (its RUN_STARTED) before ADK
    stores the input, so nothing is held when the model's first chunk comes (0.15 s), while
    the input's commit takes 0.3 s.
    """
    slow_commits(monkeypatch, 0.3)
    db = str(tmp_path / "threads.db")
    async with hub_on(db, pace_ms=150) as hub:
        engine = hub.engine
        run_adk = engine.run

        async def after_the_opening_is_stored(**run: Any) -> AsyncIterator[Any]:
            await engine.sessions.flush()
            async for event in run_adk(**run):
                yield event

        engine.run = after_the_opening_is_stored  # type: ignore[method-assign,assignment]
        client = Client(db, INTRO)
        thread = new_id("t")
        run = await hub.start("demo", said(thread, INTRO), client)
        await eventually(
            lambda: client.input_stored_at_first_text is not None, 10, what="no text came"
        )
        assert client.input_stored_at_first_text is True
        assert await hub.cancel("demo", thread)
        await asyncio.wait_for(run.done.wait(), scaled(10))


async def test_a_run_that_came_and_went_during_a_known_threads_read_makes_it_read_again(
    tmp_path: Path,
) -> None:
    """A thread in hand is read beside the writer, which may begin before another run of
    the thread stored its last events: a run that came and went meanwhile (the thread's log
    moved on) makes the claim read again (queued inputs) or refuse (``reject``)."""
    db = str(tmp_path / "threads.db")
    async with hub_on(db, pace_ms=0) as hub:
        thread = new_id("t")
        first = await hub.start("demo", said(thread, HELLO), Client(db, HELLO))
        await asyncio.wait_for(first.done.wait(), scaled(10))
        engine, known = hub.engine, hub.threads[thread]
        read = engine.open_thread

        async def read_while_a_run_goes_by(user_id: str, thread_id: str, *, known: bool) -> Any:
            opened = await read(user_id, thread_id, known=known)
            hub.threads[thread_id].head = (hub.threads[thread_id].head or 0) + 3
            return opened

        engine.open_thread = read_while_a_run_goes_by  # type: ignore[method-assign]
        caller = Caller("demo")
        with pytest.raises(Claimed):
            await hub.claim(caller, thread, "r-enqueued", None, Busy.ENQUEUE)
        with pytest.raises(p.GatewayError) as refused:
            await hub.claim(caller, thread, "r-rejected", None, Busy.REJECT)
        assert refused.value.code is p.ErrorCode.SESSION_BUSY
        assert known.run is None and hub.slots.taken == 0  # nothing kept of either claim
        engine.open_thread = read  # type: ignore[method-assign]
        run = await hub.start("demo", said(thread, INTRO), client := Client(db, INTRO))
        await asyncio.wait_for(run.done.wait(), scaled(30))
        assert client.types()[-1] == "RUN_FINISHED"


async def test_the_next_messages_run_is_claimed_without_a_turn_of_the_loop(
    tmp_path: Path,
) -> None:
    """A thread in hand is read at once, on the loop (``open_thread(known=True)``): the
    claim, the read, the plan and the run's task are made in the turn that starts the run,
    with nothing of other runs' work between. The read's hop to the reader's thread and
    back (two wake-ups) was most of the slowest claims' wait under load."""
    db = str(tmp_path / "threads.db")
    async with hub_on(db, pace_ms=0) as hub:
        thread = new_id("t")
        first = await hub.start("demo", said(thread, HELLO), Client(db, HELLO))
        await asyncio.wait_for(first.done.wait(), scaled(10))
        client = Client(db, INTRO)
        run = without_a_turn(hub.start("demo", said(thread, INTRO), client))
        assert run.task is not None and hub.threads[thread].run is run
        await asyncio.wait_for(run.done.wait(), scaled(30))
        assert client.types()[-1] == "RUN_FINISHED"
