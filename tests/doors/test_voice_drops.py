"""Voice on /ws survives drops, end to end: a real gateway on loopback, ADK's real run_live,
the local Gemini Live server (which checks every resumption handle it is given), a
websockets client.

The provider's session-resumption handle is kept with the thread: a later live turn, on
the same gateway or after a restart, resumes the provider's session instead of sending the
history again; a handle the provider lost starts a fresh session with the history; a
connection the provider ends mid-turn is resumed with the newest handle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.wire import live as wire_live
from tests.support import gemini_live as live
from tests.support.agui import new_id, snapshot_of
from tests.support.servers import running_gateway
from tests.support.voice import messages, voice_agent, voice_gateway, voice_socket

pytestmark = pytest.mark.server


def a_turn(heard: str, said: str, handle: str) -> list[live.Step]:
    """The person says ``heard``, the agent ``said``; then the turn is resumable at ``handle``,
    as Gemini says after a turn."""
    return [
        live.WaitAudio(3200),
        live.Send(
            live.heard(heard, finished=True),
            live.said(said, finished=True),
            live.turn_complete(),
            live.resumption(handle),
        ),
    ]


async def talk(gateway: Any, thread_id: str, answer: str) -> list[dict[str, Any]]:
    """One live turn on the thread: a tenth of a second of speech, until ``answer`` is said,
    then liveStop; the turn's events."""
    async with voice_socket(gateway) as voice:
        await voice.start(thread_id, new_id("r"))
        await voice.until("CUSTOM", wire_live.STARTED)
        await voice.speak(live.tone(0.1))
        while answer not in [text for _, text in messages(voice.events).values()]:
            await voice.next()
        await voice.stop(thread_id)
        end = await voice.until_terminal()
    assert end["type"] == "RUN_FINISHED", end
    return voice.events


def history_texts(connection: live.Connection) -> str:
    """What a fresh connection was sent of the thread's history, as one text."""
    return str(connection.client_contents)


async def test_the_next_live_turn_resumes_the_session_kept_with_the_thread(
    tmp_path: Path,
) -> None:
    scripts = [
        a_turn("내 이름은 민수야", "반가워요 민수님", "handle-1"),
        a_turn("내 이름 기억해?", "민수님이시죠", "handle-2"),
        a_turn("다시 물어볼게", "민수님", "handle-3"),
    ]
    thread_id = new_id("t")
    db = str(tmp_path / "voice.db")
    async with live.LiveServer(scripts) as server:
        async with running_gateway(agent=voice_agent(server), db=db) as gateway:
            await talk(gateway, thread_id, "반가워요 민수님")
        # After a restart the handle is read back from the store.
        async with running_gateway(agent=voice_agent(server), db=db) as gateway:
            await talk(gateway, thread_id, "민수님이시죠")
            # The provider lost the newest session (it expired): the turn starts afresh,
            # and the model is given the conversation as the thread has it.
            server.forget("handle-2")
            await talk(gateway, thread_id, "민수님")
            async with voice_socket(gateway, f"&threadId={thread_id}") as again:
                snapshot = snapshot_of(await again.until_end())
        assert server.failures == []
    first, resumed, fresh = server.connections
    assert first.resumed_from is None
    # The second turn went on in the first turn's session, and was not sent the history.
    assert resumed.resumed_from == "handle-1"
    assert resumed.session == first.session
    assert resumed.client_contents == []
    # The third asked for the lost session, was refused, and began anew with the history.
    assert server.refused == ["handle-2"]
    assert fresh.resumed_from is None and fresh.session != first.session
    assert "내 이름은 민수야" in history_texts(fresh)
    assert "민수님이시죠" in history_texts(fresh)
    assert [(m["role"], m["content"]) for m in snapshot] == [
        ("user", "내 이름은 민수야"),
        ("assistant", "반가워요 민수님"),
        ("user", "내 이름 기억해?"),
        ("assistant", "민수님이시죠"),
        ("user", "다시 물어볼게"),
        ("assistant", "민수님"),
    ]


async def test_a_connection_the_provider_ends_mid_turn_resumes_with_the_newest_handle() -> None:
    # The provider's ten-minute limit: the connection closes, with no goAway before it.
    first = [
        live.WaitAudio(3200),
        live.Send(
            live.resumption("handle-1"),
            live.heard("길게 얘기해 보자", finished=True),
            live.turn_complete(),
            live.resumption("handle-2"),
        ),
        live.Close(),
    ]
    second = [live.Send(live.said("네, 이어서 말씀드리면", finished=True), live.turn_complete())]
    thread_id = new_id("t")
    async with voice_gateway([first, second]) as (server, gateway):
        events = await talk(gateway, thread_id, "네, 이어서 말씀드리면")
        assert server.failures == []
    assert [c.resumed_from for c in server.connections] == [None, "handle-2"]
    assert server.connections[1].session == server.connections[0].session
    assert server.connections[1].client_contents == []
    assert sorted(messages(events).values()) == [
        ("assistant", "네, 이어서 말씀드리면"),
        ("user", "길게 얘기해 보자"),
    ]
