"""Voice on /ws survives drops, end to end: a real gateway on loopback, ADK's real run_live,
the local Gemini Live server (which checks every resumption handle it is given), a
websockets client.

The provider's session-resumption handle is kept with the thread: a later live turn, on
the same gateway or after a restart, resumes the provider's session instead of sending the
history again; a handle the provider lost starts a fresh session with the history; a
connection the provider ends mid-turn is resumed with the newest handle.

A live turn outlives its browser's socket: the same tab (its ``clientId``) reattaching by
cursor gets what it missed, the browser action called meanwhile once, and the agent's
speech again; a turn nobody comes back to ends by itself, still counted against the
user's live turns until then.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from gateway.wire import live as wire_live
from tests.support import gemini_live as live
from tests.support.agui import new_id, snapshot_of
from tests.support.budgets import eventually, scaled
from tests.support.servers import RunningGateway, running_gateway
from tests.support.voice import (
    NAVIGATE,
    VoiceSocket,
    find_screen,
    live_gateway,
    messages,
    navigated,
    voice_agent,
    voice_client,
)

SPEECH = live.tone(0.3, live.OUTPUT_RATE)
METRICS_TOKEN = "voice-drops-metrics-token"

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
    async with voice_client(gateway) as voice:
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
            async with voice_client(gateway, f"&threadId={thread_id}") as again:
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
    async with live_gateway([first, second], [find_screen]) as (server, gateway):
        events = await talk(gateway, thread_id, "네, 이어서 말씀드리면")
        assert server.failures == []
    assert [c.resumed_from for c in server.connections] == [None, "handle-2"]
    assert server.connections[1].session == server.connections[0].session
    assert server.connections[1].client_contents == []
    assert sorted(messages(events).values()) == [
        ("assistant", "네, 이어서 말씀드리면"),
        ("user", "길게 얘기해 보자"),
    ]


def cursor(voice: VoiceSocket) -> int:
    """The last number of the thread's log the client saw."""
    return max(event.get("metadata", {}).get("gateway.seq", 0) for event in voice.events)


async def dropped(voice: VoiceSocket) -> None:
    """The network goes: no close frame, the TCP connection just ends."""
    voice.ws.transport.abort()
    with pytest.raises(Exception):  # noqa: B017 - whichever way the socket says it is gone
        await voice.ws.recv()


def live_call(gateway: RunningGateway, thread_id: str) -> bool:
    hub = gateway.app.hub
    assert hub is not None
    thread = hub.threads.get(thread_id)
    return thread is not None and thread.run is not None and bool(thread.run.translator.pending)


def held(gateway: RunningGateway, thread_id: str) -> bool:
    """Whether the thread's live turn lost its connection and waits for its tab."""
    assert gateway.app.shared is not None
    turn = gateway.app.shared.live_users.turns.get(thread_id)
    return turn is not None and turn.held is not None and not turn.stopping.is_set()


async def test_a_reattach_resumes_the_live_turn_and_the_action_called_meanwhile_runs_once() -> None:
    dropped_now = asyncio.Event()
    script = [
        live.WaitAudio(3200),
        live.Send(live.heard("업무 요청 목록 화면 열어줘", finished=True)),
        live.Until(dropped_now),  # the model calls the browser while the tab is away
        live.Send(
            live.tool_call("navigateToScreen", {"screenId": "MNU-3120"}, "nav-1"),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(live.said("이동했습니다", finished=True), live.turn_complete()),
        live.WaitAudio(6400),
        live.Send(
            live.audio_out(SPEECH),
            live.said("더 필요하신가요", finished=True),
            live.turn_complete(),
        ),
    ]
    thread_id, run_id, tab = new_id("t"), new_id("r"), "&clientId=tab-1"
    async with live_gateway([script], [find_screen]) as (server, gateway):
        async with voice_client(gateway, tab) as before:
            start = {"type": "liveStart", "threadId": thread_id, "runId": run_id}
            await before.ws.send(json.dumps({**start, "tools": [NAVIGATE]}))
            await before.until("CUSTOM", wire_live.STARTED)
            await before.speak(live.tone(0.1))
            await before.until("TEXT_MESSAGE_END")
            seen = cursor(before)
            await dropped(before)
        dropped_now.set()
        await eventually(lambda: live_call(gateway, thread_id), 10, what="the call, unsent")
        url = gateway.ws_url("demo", f"{tab}&threadId={thread_id}&after={seen}")
        async with connect(url, max_size=None) as ws:
            after = VoiceSocket(ws)
            after.checker = before.checker  # the stream goes on where the client left it
            call = await after.until("TOOL_CALL_START")
            await after.until("TOOL_CALL_END")
            await after.until("CUSTOM", wire_live.RESUMED)
            result = navigated(thread_id, call["toolCallId"])
            await ws.send(json.dumps(result))
            await ws.send(json.dumps(result))  # sent again after a reconnect: not run again
            while "이동했습니다" not in [text for _, text in messages(after.events).values()]:
                await after.next()
            # The tab speaks again on its new connection, and hears the agent there.
            await after.speak(live.tone(0.1))
            while "더 필요하신가요" not in [text for _, text in messages(after.events).values()]:
                await after.next()
            await after.stop(thread_id)
            end = await after.until_terminal()
            refused = await after.until_terminal()
        assert end["type"] == "RUN_FINISHED" and end["runId"] == run_id, end
        assert refused["code"] == "VALIDATION_ERROR" and "answered already" in refused["message"]
        assert server.failures == []
        # One provider session all along; the browser's action reached the model once.
        assert len(server.connections) == 1
        assert [r["id"] for r in server.connections[0].tool_responses] == ["nav-1"]
        assert not any(e["type"] == "TOOL_CALL_START" for e in before.events)
        assert [e["type"] for e in after.events].count("TOOL_CALL_START") == 1
        assert b"".join(pcm for _, pcm in after.audio) == SPEECH
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            snapshot = snapshot_of(await again.until_end())
    said = [(m["role"], m.get("content")) for m in snapshot if m["role"] != "tool"]
    assert said[0] == ("user", "업무 요청 목록 화면 열어줘")
    assert said[-2:] == [("assistant", "이동했습니다"), ("assistant", "더 필요하신가요")]
    assert [m["toolCallId"] for m in snapshot if m["role"] == "tool"] == [call["toolCallId"]]


async def test_a_live_turn_nobody_reattaches_to_ends_by_itself_counted_until_then() -> None:
    grace = scaled(1.0)
    script = [live.WaitAudio(3200), live.Send(live.heard("잠깐만요", finished=True))]
    thread_id, run_id = new_id("t"), new_id("r")
    settings = {"metrics": "on", "metrics_token": METRICS_TOKEN}
    async with live_gateway(
        [script], [find_screen], live_reattach_seconds=grace, live_turns_per_user=1, **settings
    ) as (server, gateway):
        async with voice_client(gateway, "&clientId=tab-1") as before:
            await before.start(thread_id, run_id)
            await before.until("CUSTOM", wire_live.STARTED)
            await before.speak(live.tone(0.1))
            await before.until("TEXT_MESSAGE_END")
            seen = cursor(before)
            await dropped(before)
        await eventually(lambda: held(gateway, thread_id), 10, what="the turn held for its tab")
        # Held for its tab, the turn is still the user's one live turn.
        async with voice_client(gateway) as other:
            await other.start(new_id("t"), new_id("r"))
            quota = await other.until_terminal()
        assert quota["code"] == "SERVICE_QUOTA_EXCEEDED", quota
        await eventually(
            lambda: all(c.closed for c in server.connections), 10, what="the turn let go"
        )
        # A later reattach by cursor finds the turn ended in the thread's log, its words kept.
        async with voice_client(gateway, f"&threadId={thread_id}&after={seen}") as later:
            later.checker = before.checker
            end = await later.until_terminal()
        assert end["type"] == "RUN_FINISHED" and end["runId"] == run_id, end
        assert later.audio == []
        # Operators see the drop: held, then ended.
        async with httpx.AsyncClient() as client:
            scraped = await client.get(
                gateway.http + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
            )
        assert 'gateway_live_drops_total{outcome="held"} 1.0' in scraped.text
        assert 'gateway_live_drops_total{outcome="ended"} 1.0' in scraped.text
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            snapshot = snapshot_of(await again.until_end())
    assert [(m["role"], m["content"]) for m in snapshot] == [("user", "잠깐만요")]


async def test_a_reattach_without_a_cursor_mid_utterance_gets_the_words_so_far() -> None:
    dropped_now = asyncio.Event()
    script = [
        live.WaitAudio(3200),
        live.Send(live.heard("업무 요청 "), live.audio_out(SPEECH[:4800]), live.said("네, ")),
        live.Until(dropped_now),
        live.WaitAudio(6400),
        live.Send(
            live.said("말씀하세요", finished=True),
            live.audio_out(SPEECH[4800:]),
            live.turn_complete(),
        ),
    ]
    thread_id, run_id, tab = new_id("t"), new_id("r"), "&clientId=tab-1"
    async with live_gateway([script], [find_screen]) as (server, gateway):
        async with voice_client(gateway, tab) as before:
            await before.start(thread_id, run_id)
            await before.until("CUSTOM", wire_live.STARTED)
            await before.speak(live.tone(0.1))
            while ("assistant", "네, ") not in messages(before.events).values():
                await before.next()
            await dropped(before)
        await eventually(lambda: held(gateway, thread_id), 10, what="the turn held for its tab")
        dropped_now.set()
        async with voice_client(gateway, f"{tab}&threadId={thread_id}") as after:
            started = await after.until("RUN_STARTED")
            await after.until("CUSTOM", wire_live.RESUMED)
            await after.speak(live.tone(0.1))
            while "네, 말씀하세요" not in [text for _, text in messages(after.events).values()]:
                await after.next()
            await after.stop(thread_id)
            end = await after.until_terminal()
        assert server.failures == []
    assert started["runId"] == run_id and end["type"] == "RUN_FINISHED"
    # The open reply came back as it stood, then went on, in one message.
    streamed = messages(after.events)
    assert ("assistant", "네, 말씀하세요") in streamed.values()
    assert b"".join(pcm for _, pcm in after.audio) == SPEECH[4800:]


async def test_a_provider_that_ends_the_connection_where_adk_lost_its_handle_is_resumed() -> None:
    # Gemini says now and then that the session cannot be resumed at this point (while it
    # generates, or runs a tool): ADK then forgets the handle it had, and a connection
    # ended right after would end the turn; the gateway resumes it with the handle it kept.
    not_resumable = {"sessionResumptionUpdate": {"resumable": False}}
    first = [
        live.WaitAudio(3200),
        live.Send(
            live.resumption("handle-1"),
            live.heard("계속 얘기하자", finished=True),
            not_resumable,
        ),
        live.Close(),
    ]
    second = [live.Send(live.said("네, 이어서요", finished=True), live.turn_complete())]
    async with live_gateway([first, second], [find_screen]) as (server, gateway):
        events = await talk(gateway, new_id("t"), "네, 이어서요")
        assert server.failures == []
    assert [c.resumed_from for c in server.connections] == [None, "handle-1"]
    assert server.connections[1].session == server.connections[0].session
    assert ("assistant", "네, 이어서요") in messages(events).values()
