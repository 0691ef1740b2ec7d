"""A reply the user stops, or a failure cuts off, keeps its text in the thread, marked.

The real server on a database file, a scripted model that records what it is sent. The
user stops a reply mid-stream over /ws: its TEXT_MESSAGE_END carries the mark, and by the
time RUN_FINISHED(cancelled) arrives the text so far is stored under the id it streamed
with; a reattach, and a reattach after a restart, show it as an assistant message with
``metadata.ended`` "stopped" and exactly the text the client was sent; the next turn
works, and the model reads its cut-off reply with a note that the user stopped it. A model
that fails mid-stream leaves its text the same way, marked "failed", stored before the
RUN_ERROR. A run stopped before any text leaves no reply. (A crash mid-stream:
``test_crash_recovery``.)
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from gateway.store.cut_off import NOTES, Ending
from tests.support.agui import AgUiSocket, new_id, outcome, text_of, user_input
from tests.support.cancels import CHUNKS_BEFORE_STOP, STORY, stop_mid_reply, storyteller
from tests.support.servers import running_gateway
from tests.support.speakers import Speaker, say

pytestmark = pytest.mark.server


class Breaking(Speaker):
    """A Speaker whose first call fails after streaming ``CHUNKS_BEFORE_STOP`` chunks."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        first = not self.requests
        chunks = 0
        async for response in super().generate_content_async(llm_request, stream):
            yield response
            chunks += 1
            if first and chunks == CHUNKS_BEFORE_STOP:
                raise RuntimeError("the model broke off")


def stored_reply(db: str, message_id: str) -> tuple[int, int]:
    """(events stored under ``message_id``, streamed-text rows left), read from the file."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        query = "SELECT COUNT(*) FROM events WHERE id = ?"
        (events,) = conn.execute(query, (message_id,)).fetchone()
        (rows,) = conn.execute("SELECT COUNT(*) FROM streamed_texts").fetchone()
    return int(events), int(rows)


def streamed_message(events: list[dict[str, Any]]) -> tuple[str, str]:
    """The one text message a run streamed: its id and the text the client was sent."""
    (message_id,) = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"}
    return message_id, text_of(events)


async def snapshot_of(ws: AgUiSocket, thread: str) -> list[dict[str, Any]]:
    events = await ws.run({"type": "reattach", "threadId": thread})
    [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    messages: list[dict[str, Any]] = snapshot["messages"]
    return messages


def model_said(contents: list[types.Content]) -> list[list[str]]:
    """The text parts of each model turn in a request the model was sent."""
    return [
        [part.text for part in content.parts or [] if part.text]
        for content in contents
        if content.role == "model"
    ]


async def test_a_stopped_reply_keeps_its_text_marked_through_a_reattach_and_a_restart(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "threads.db")
    model = Speaker(turns=[[say(STORY)], [say("Shall I go on?")]], pace=0.01)
    thread = new_id("t")
    async with running_gateway(agent=storyteller(model), db=db) as gateway:
        async with gateway.socket() as ws:
            events = await stop_mid_reply(ws, thread)
            assert outcome(events) == {"type": "cancelled"}
            message_id, text = streamed_message(events)
            # Stored in the same write that dropped its streamed text, before RUN_FINISHED.
            assert stored_reply(db, message_id) == (1, 0)
            # The live stream marks it as the thread does: the END's metadata, which a 1.0
            # client merges into the message it closes.
            [end] = [e for e in events if e["type"] == "TEXT_MESSAGE_END"]
            assert end["messageId"] == message_id and end["metadata"]["ended"] == "stopped"
        assert 0 < len(text) < len(STORY)
        expected = {
            "id": message_id,
            "role": "assistant",
            "name": "storyteller",
            "content": text,
            "metadata": {"ended": "stopped"},
        }
        async with gateway.socket() as reloaded:
            assert (await snapshot_of(reloaded, thread))[-1] == expected

    async with (
        running_gateway(agent=storyteller(model), db=db) as gateway,
        gateway.socket() as ws,
    ):
        messages = await snapshot_of(ws, thread)
        assert [m["id"] for m in messages] == ["m1", message_id] and messages[-1] == expected
        after = await ws.run(user_input(thread, "go on", tools=[]))
        assert outcome(after) == {"type": "success"} and text_of(after) == "Shall I go on?"
    # The model reads what it said before the stop, then that the user stopped it there.
    assert model_said(model.requests[-1]) == [[text, "\n\n" + NOTES[Ending.STOPPED]]]


async def test_a_reply_a_failure_cuts_off_keeps_its_text_marked_failed(tmp_path: Path) -> None:
    db = str(tmp_path / "threads.db")
    model = Breaking(turns=[[say(STORY)], [say("Sorry, here it is again.")]], pace=0.005)
    thread = new_id("t")
    async with (
        running_gateway(agent=storyteller(model), db=db) as gateway,
        gateway.socket() as ws,
    ):
        events = await ws.run(user_input(thread, "tell me a story", tools=[], message_id="m1"))
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "AGENT_ERROR"
        message_id, text = streamed_message(events)
        assert stored_reply(db, message_id) == (1, 0)  # before the RUN_ERROR went out
        [*_, reply] = await snapshot_of(ws, thread)
        assert reply == {
            "id": message_id,
            "role": "assistant",
            "name": "storyteller",
            "content": text,
            "metadata": {"ended": "failed"},
        }
        after = await ws.run(user_input(thread, "try again", tools=[]))
        assert outcome(after) == {"type": "success"}
    assert model_said(model.requests[-1]) == [[text, "\n\n" + NOTES[Ending.FAILED]]]


async def test_a_run_stopped_before_any_text_leaves_no_reply(tmp_path: Path) -> None:
    model = Speaker(turns=[[say(STORY)], [say("Hello.")]], pace=1.0)
    thread = new_id("t")
    async with (
        running_gateway(agent=storyteller(model), db=str(tmp_path / "threads.db")) as gateway,
        gateway.socket() as ws,
    ):
        await ws.send(user_input(thread, "tell me a story", tools=[], message_id="m1"))
        assert (await ws.next())["type"] == "RUN_STARTED"
        await ws.send({"type": "cancel", "threadId": thread})
        events = await ws.until_end()
        assert outcome(events) == {"type": "cancelled"} and text_of(events) == ""
        # Nothing was shown, so nothing is kept: the thread holds the user's message alone.
        assert [m["id"] for m in await snapshot_of(ws, thread)] == ["m1"]
