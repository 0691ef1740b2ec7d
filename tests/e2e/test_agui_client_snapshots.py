"""Snapshots of cut-off replies, as the official @ag-ui/client 1.0 takes them in: a reply
the user stopped (text so far) and one a restart closed before any text (no content), each
with ``metadata.ended``, pass its enforcement and verifier with no warning and unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.adk.events import Event
from google.genai import types

from tests.support.agui import new_id, user_input
from tests.support.cancels import STORY, stop_mid_reply, storyteller
from tests.support.official_client import NEEDS_NODE, official_check
from tests.support.servers import running_gateway
from tests.support.speakers import Speaker, say
from tests.support.stores import session_store

pytestmark = [NEEDS_NODE, pytest.mark.browser]


async def test_the_official_client_takes_cut_off_replies_with_their_mark(tmp_path: Path) -> None:
    db = str(tmp_path / "threads.db")
    model = Speaker(turns=[[say(STORY)]], pace=0.01)
    stopped, crashed = new_id("stopped"), new_id("crashed")
    async with running_gateway(agent=storyteller(model), db=db) as gateway:
        assert gateway.app.hub is not None
        app_name = gateway.app.hub.engine.app_name
        async with gateway.socket() as ws:
            await stop_mid_reply(ws, stopped)
    # A thread whose run a crash cut off before the model said anything.
    store = session_store(db)
    await store.open()
    session = await store.create_session(app_name=app_name, user_id="demo", session_id=crashed)
    asked = types.Content(role="user", parts=[types.Part(text="tell me a story")])
    await store.append_event(session, Event(invocation_id="inv", author="user", content=asked))
    await store.close()

    async with running_gateway(agent=storyteller(model), db=db) as gateway, gateway.socket() as ws:
        for thread, ended in ((stopped, "stopped"), (crashed, "interrupted")):
            events = await ws.run({"type": "reattach", "threadId": thread})
            reply = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")["messages"][-1]
            assert reply["role"] == "assistant" and reply["metadata"] == {"ended": ended}
            assert ("content" in reply) is (ended == "stopped")
            report = await official_check(events)
            assert report["failed"] is None and report["warnings"] == []
            assert report["events"] == events


async def test_the_official_client_takes_an_observers_and_a_returning_executors_streams() -> None:
    """The user's message sent to another tab, and ``gateway.executor`` on a reattach."""
    async with running_gateway() as gateway:
        thread = new_id("t")
        async with (
            gateway.socket(query="&clientId=tab-1") as sender,
            gateway.socket() as observer,
        ):
            await observer.run({"type": "reattach", "threadId": thread})
            await sender.run(user_input(thread, "업무 요청 목록 화면 열어줘"))
            seen = await observer.until_end()
        async with gateway.socket(query="&clientId=tab-1") as back:
            returned = await back.run({"type": "reattach", "threadId": thread})
    assert any(e["type"] == "TEXT_MESSAGE_START" and e["role"] == "user" for e in seen)
    assert any(e["type"] == "CUSTOM" and e["name"] == "gateway.executor" for e in returned)
    for events in (seen, returned):
        report = await official_check(events)
        assert report["failed"] is None and report["warnings"] == []
        assert report["events"] == events
