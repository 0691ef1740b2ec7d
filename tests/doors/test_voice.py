"""Voice on /ws, end to end: a real gateway on loopback, ADK's real run_live, the local
Gemini Live server (``tests.support.gemini_live``) in place of Gemini, a websockets client.

A spoken turn streams both transcripts as text messages and the agent's speech as binary
frames, is stored, and comes back in the snapshot of a later connection under the ids it
streamed with; barge-in tells the client which turn's audio to drop; a stock client never
gets a binary frame; bad audio and a busy thread are refused with codes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from websockets.exceptions import ConnectionClosed

from gateway.wire import live as wire_live
from tests.support import gemini_live as live
from tests.support.agui import new_id, snapshot_of
from tests.support.budgets import eventually
from tests.support.servers import RunningGateway, running_gateway
from tests.support.voice import (
    NAVIGATE,
    find_screen,
    live_gateway,
    messages,
    navigated,
    voice_client,
)

pytestmark = pytest.mark.server

SPEECH = live.tone(0.3, live.OUTPUT_RATE)
METRICS_TOKEN = "voice-metrics-token"


def voice_gateway(
    scripts: Sequence[Sequence[live.Step]], **settings: Any
) -> contextlib.AbstractAsyncContextManager[tuple[live.LiveServer, RunningGateway]]:
    """The voice agent with the catalog's ``find_screen``, on the local Live server."""
    return live_gateway(scripts, [find_screen], **settings)


def a_spoken_turn() -> list[live.Step]:
    return [
        live.WaitAudio(6400),
        live.Send(
            live.heard("업무 요청 "),
            live.heard("목록 열어줘", finished=True),
            live.audio_out(SPEECH[:4800]),
            live.said("화면을 "),
            live.audio_out(SPEECH[4800:]),
            live.said("열었습니다"),
            live.turn_complete(),
        ),
    ]


async def test_a_spoken_turn_streams_transcripts_and_speech_and_is_stored() -> None:
    thread_id, run_id = new_id("t"), new_id("r")
    async with voice_gateway([a_spoken_turn()], metrics="on", metrics_token=METRICS_TOKEN) as (
        server,
        gateway,
    ):
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, run_id)
            started = await voice.until("CUSTOM", wire_live.STARTED)
            assert started["value"]["input"]["sampleRate"] == 16_000
            assert started["value"]["output"]["sampleRate"] == 24_000
            await voice.speak(live.tone(0.2))
            # The agent's transcript ends as its turn completes.
            while len([m for m in messages(voice.events).values() if m[0] == "assistant"]) < 1:
                await voice.next()
            await voice.until("TEXT_MESSAGE_END")
            await voice.stop(thread_id)
            end = await voice.until_terminal()
        assert end["type"] == "RUN_FINISHED", end
        assert server.failures == []
        assert bytes(server.connections[0].audio) == live.tone(0.2)

        streamed = messages(voice.events)
        assert sorted(streamed.values()) == [
            ("assistant", "화면을 열었습니다"),
            ("user", "업무 요청 목록 열어줘"),
        ]
        assert voice.events[0]["type"] == "RUN_STARTED"
        assert voice.events[0]["runId"] == run_id
        # The agent's speech, to the byte, in turn 1, between the run's start and end.
        assert b"".join(pcm for _, pcm in voice.audio) == SPEECH
        assert {turn for turn, _ in voice.audio} == {1}
        first_audio = voice.arrivals.index("audio:1")
        assert 0 < first_audio < voice.arrivals.index("RUN_FINISHED")

        # Operators see the audio each way.
        async with httpx.AsyncClient() as client:
            scraped = await client.get(
                gateway.http + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
            )
        assert 'gateway_live_audio_seconds_total{direction="in"} 0.2' in scraped.text
        assert 'gateway_live_audio_seconds_total{direction="out"} 0.3' in scraped.text

        # A reload sees the conversation, under the ids it streamed with; so does /history.
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            snapshot = snapshot_of(await again.until_end())
        stored = {m["id"]: (m["role"], m["content"]) for m in snapshot}
        assert stored == streamed
        async with httpx.AsyncClient() as client:
            history = await client.get(
                f"{gateway.http}/history?threadId={thread_id}",
                headers={"X-Gateway-User": "demo"},
            )
        assert {m["id"]: (m["role"], m["content"]) for m in history.json()["messages"]} == streamed
        # Another user cannot talk on this thread.
        async with voice_client(gateway, user="mallory") as stranger:
            await stranger.start(thread_id, new_id("r"))
            denied = await stranger.until_terminal()
        assert denied["code"] == "ACCESS_DENIED", denied


async def test_barge_in_names_the_turn_whose_audio_the_client_drops() -> None:
    script = [
        live.WaitAudio(3200),
        live.Send(live.audio_out(SPEECH[:4800]), live.said("길게 설명드리면 ")),
        live.WaitAudio(6400),  # the person speaks over it
        live.Send(
            live.interrupted(),
            live.heard("잠깐만요", finished=True),
            live.audio_out(SPEECH[4800:]),
            live.said("네, 말씀하세요", finished=True),
            live.turn_complete(),
        ),
    ]
    thread_id = new_id("t")
    async with voice_gateway([script]) as (server, gateway):
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, new_id("r"))
            await voice.until("CUSTOM", wire_live.STARTED)
            await voice.speak(live.tone(0.1))
            await voice.until("TEXT_MESSAGE_CONTENT")
            await voice.speak(live.tone(0.1))
            barge_in = await voice.until("CUSTOM", wire_live.INTERRUPTED)
            while "네, 말씀하세요" not in [m[1] for m in messages(voice.events).values()]:
                await voice.next()
            await voice.stop(thread_id)
            await voice.until_terminal()
        assert server.failures == []
    cut = barge_in["value"]
    assert cut["turn"] == 1
    streamed = messages(voice.events)
    assert streamed[cut["messageId"]] == ("assistant", "길게 설명드리면 ")
    # Turn 1's audio came before the interruption; what follows is turn 2, played.
    assert [turn for turn, _ in voice.audio] == [1, 2]
    told = voice.arrivals.index(f"CUSTOM:{wire_live.INTERRUPTED}")
    assert voice.arrivals.index("audio:1") < told < voice.arrivals.index("audio:2")
    # The cut-off message was ended before the interruption was told.
    assert any(
        event["type"] == "TEXT_MESSAGE_END" and event["messageId"] == cut["messageId"]
        for event in voice.events[: voice.events.index(barge_in)]
    )


async def test_a_watching_stock_client_sees_transcripts_and_no_binary_frame() -> None:
    thread_id = new_id("t")
    async with voice_gateway([a_spoken_turn()]) as (_, gateway):
        # The thread exists once a first turn ran; a second tab then follows it.
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, new_id("r"))
            await voice.until("CUSTOM", wire_live.STARTED)
            async with voice_client(gateway, f"&threadId={thread_id}") as watcher:
                await watcher.until("RUN_STARTED")
                await voice.speak(live.tone(0.2))
                while "화면을 열었습니다" not in [m[1] for m in messages(watcher.events).values()]:
                    await watcher.next()
                await voice.stop(thread_id)
                await watcher.until_terminal()
                await voice.until_terminal()
        assert watcher.audio == []
        assert voice.audio != []


async def test_bad_audio_frames_and_a_busy_thread_are_refused_with_codes() -> None:
    thread_id = new_id("t")
    async with voice_gateway([a_spoken_turn()]) as (_, gateway), voice_client(gateway) as voice:
        # Audio with no live turn open.
        await voice.ws.send(wire_live.audio_in_frame(live.tone(0.01)))
        refused = await voice.until_terminal()
        assert refused["code"] == "VALIDATION_ERROR"
        assert "liveStart" in refused["message"]
        # A client tool may not take a server tool's name: refused before any turn.
        clash: dict[str, Any] = {"type": "liveStart", "threadId": thread_id, "runId": new_id("r")}
        clash["tools"] = [{"name": "find_screen", "description": "mine"}]
        await voice.ws.send(json.dumps(clash))
        named = await voice.until_terminal()
        assert named["code"] == "VALIDATION_ERROR" and "server tool" in named["message"]
        await voice.start(thread_id, new_id("r"))
        await voice.until("CUSTOM", wire_live.STARTED)
        # An odd number of bytes, and audio out sent up: refused, the turn goes on.
        await voice.ws.send(wire_live.audio_in_frame(b"\x00\x01\x02"))
        await voice.ws.send(bytes([wire_live.AUDIO_OUT, 1, 0, 0]) + b"\x00\x00")
        # A second tab cannot open a live turn on the busy thread.
        async with voice_client(gateway) as other:
            await other.start(thread_id, new_id("r"))
            busy = await other.until_terminal()
        assert busy["code"] == "SESSION_BUSY"
        await voice.speak(live.tone(0.2))
        await voice.until("TEXT_MESSAGE_END")
        await voice.stop(thread_id)
        assert (await voice.until_terminal())["type"] == "RUN_FINISHED"
        # Frames refused during a run are told after it, in one error of their own run.
        told = await voice.until_terminal()
    assert told["code"] == "VALIDATION_ERROR"
    assert "2 frame(s) were refused" in told["message"]


async def test_a_server_tool_runs_in_a_live_turn_and_a_go_away_is_survived() -> None:
    first = [
        live.WaitAudio(3200),
        live.Send(
            live.resumption("handle-1"),
            live.heard("업무 요청 찾아줘", finished=True),
            live.tool_call("find_screen", {"query": "업무 요청"}, "call-1"),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(live.resumption("handle-2"), live.go_away(1)),
        live.Close(),
    ]
    # The provider's next connection resumes the session and the agent answers.
    second = [live.Send(live.said("찾았습니다", finished=True), live.turn_complete())]
    thread_id = new_id("t")
    async with voice_gateway([first, second]) as (server, gateway):
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, new_id("r"))
            await voice.until("CUSTOM", wire_live.STARTED)
            await voice.speak(live.tone(0.1))
            while "찾았습니다" not in [m[1] for m in messages(voice.events).values()]:
                await voice.next()
            await voice.stop(thread_id)
            end = await voice.until_terminal()
        assert end["type"] == "RUN_FINISHED", end
        assert server.failures == []
        assert server.connections[0].tool_responses[0]["response"] == {
            "screenId": "MNU-3120",
            "asked": "업무 요청",
        }
        assert [c.resumed_from for c in server.connections] == [None, "handle-2"]
        kinds = [event["type"] for event in voice.events]
        for kind in ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"):
            assert kind in kinds
        result = next(e for e in voice.events if e["type"] == "TOOL_CALL_RESULT")
        assert "MNU-3120" in result["content"]
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            snapshot = snapshot_of(await again.until_end())
    roles = [
        (m["role"], m.get("content") or [c["function"]["name"] for c in m["toolCalls"]])
        for m in snapshot
    ]
    assert roles[0] == ("user", "업무 요청 찾아줘")
    assert ("assistant", ["find_screen"]) in roles
    assert roles[-1] == ("assistant", "찾았습니다")


async def test_a_cancel_ends_the_live_turn_and_a_closed_socket_frees_the_thread() -> None:
    thread_id = new_id("t")
    async with voice_gateway([[live.WaitAudio(10**9)]]) as (server, gateway):
        async with voice_client(gateway) as voice:
            run_id = new_id("r")
            await voice.start(thread_id, run_id)
            await voice.until("CUSTOM", wire_live.STARTED)
            await voice.ws.send(json.dumps({"type": "cancel", "threadId": thread_id}))
            end = await voice.until_terminal()
        assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "cancelled", end
        # A socket that closes mid-turn ends the turn: the thread takes the next one.
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, new_id("r"))
            await voice.until("CUSTOM", wire_live.STARTED)
        hub = gateway.app.hub
        assert hub is not None

        def ended() -> bool:
            thread = hub.threads.get(thread_id)
            return thread is None or thread.run is None

        await eventually(ended, 10, what="the live turn of a closed socket ended")
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, new_id("r"))
            await voice.until("CUSTOM", wire_live.STARTED)
            await voice.stop(thread_id)
            assert (await voice.until_terminal())["type"] == "RUN_FINISHED"
        await eventually(
            lambda: all(c.closed for c in server.connections), 10, what="the provider let go"
        )


async def test_live_turns_are_bounded_per_user_per_turn_and_in_pace() -> None:
    async with (
        voice_gateway([[live.WaitAudio(10**9)]], live_turns_per_user=1, live_max_seconds=3.0) as (
            _,
            gateway,
        ),
        voice_client(gateway) as voice,
        voice_client(gateway) as other,
    ):
        thread_id = new_id("t")
        await voice.start(thread_id, new_id("r"))
        await voice.until("CUSTOM", wire_live.STARTED)
        await other.start(new_id("t"), new_id("r"))
        quota = await other.until_terminal()
        assert quota["code"] == "SERVICE_QUOTA_EXCEEDED"
        assert "GATEWAY_LIVE_TURNS_PER_USER" in quota["message"]
        # Three seconds at once is faster than real time past the 2 s burst: refused.
        await voice.speak(live.tone(3.0))
        # Paced, the turn hears its three seconds and ends with the quota's error.
        await voice.speak(live.tone(1.5), pace=0.1)
        end = await voice.until_terminal()
        assert end["code"] == "SERVICE_QUOTA_EXCEEDED", end
        assert "GATEWAY_LIVE_MAX_SECONDS" in end["message"]
        told = await voice.until_terminal()
        assert told["code"] == "RATE_LIMIT_EXCEEDED", told


async def test_an_agent_without_a_live_model_refuses_the_turn_with_a_sentence() -> None:
    # The demo's offline scripted model has no live connection.
    async with running_gateway() as gateway, voice_client(gateway) as voice:
        thread_id = new_id("t")
        await voice.start(thread_id, new_id("r"))
        end = await voice.until_terminal()
        assert end["code"] == "AGENT_ERROR"
        assert "cannot hold a live (voice) conversation" in end["message"]
        # The thread is free again, and nothing a client cannot read was stored.
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            await again.until_end()


async def test_a_provider_that_cannot_be_reached_ends_the_turn_with_agent_error() -> None:
    async with live.LiveServer([[]]) as server:
        model = server.live_model()
    # The server is gone: its port refuses the connection.
    agent = LlmAgent(name="voice", model=model, instruction="Answer briefly.")
    async with (
        running_gateway(agent=agent, await_ready=False) as gateway,
        voice_client(gateway) as voice,
    ):
        await voice.start(new_id("t"), new_id("r"))
        end = await voice.until_terminal()
    assert end["code"] == "AGENT_ERROR", end
    assert "live service failed" in end["message"]


async def test_a_drain_ends_a_live_turn_at_once_then_closes_the_socket() -> None:
    async with (
        voice_gateway([[live.WaitAudio(10**9)]], drain_seconds=30.0) as (_, gateway),
        voice_client(gateway) as voice,
    ):
        await voice.start(new_id("t"), new_id("r"))
        await voice.until("CUSTOM", wire_live.STARTED)
        gateway.server.should_exit = True
        end = await voice.until_terminal()
        assert end["type"] == "RUN_FINISHED", end
        with pytest.raises(ConnectionClosed) as closed:
            await voice.next()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012


async def test_the_browser_action_runs_once_in_a_live_turn_and_its_result_goes_back() -> None:
    script = [
        live.WaitAudio(3200),
        live.Send(
            live.heard("업무 요청 목록 화면 열어줘", finished=True),
            live.tool_call("navigateToScreen", {"screenId": "MNU-3120"}, "nav-1"),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(live.said("이동했습니다", finished=True), live.turn_complete()),
    ]
    thread_id = new_id("t")
    async with voice_gateway([script]) as (server, gateway):
        async with voice_client(gateway) as voice:
            await voice.ws.send(
                json.dumps(
                    {
                        "type": "liveStart",
                        "threadId": thread_id,
                        "runId": new_id("r"),
                        "tools": [NAVIGATE],
                    }
                )
            )
            await voice.until("CUSTOM", wire_live.STARTED)
            async with voice_client(gateway, f"&threadId={thread_id}") as watcher:
                await watcher.until("RUN_STARTED")
                await voice.speak(live.tone(0.1))
                call = await voice.until("TOOL_CALL_START")
                assert call["toolCallName"] == "navigateToScreen"
                await voice.until("TOOL_CALL_END")
                result = navigated(thread_id, call["toolCallId"])
                await voice.ws.send(json.dumps(result))
                await voice.ws.send(json.dumps(result))  # a resend: refused, not run again
                while "이동했습니다" not in [m[1] for m in messages(voice.events).values()]:
                    await voice.next()
                await voice.stop(thread_id)
                assert (await voice.until_terminal())["type"] == "RUN_FINISHED"
                refused = await voice.until_terminal()
                await watcher.until_terminal()
        assert server.failures == []
        # The model was given the browser's own account, once.
        assert server.connections[0].tool_responses == [
            {
                "id": call["toolCallId"],
                "name": "navigateToScreen",
                "response": {"status": "navigated", "screenId": "MNU-3120"},
            }
        ]
        assert refused["code"] == "VALIDATION_ERROR" and "answered already" in refused["message"]
        # Only the executor was sent the live call; the watcher saw the result.
        assert not any(e["type"] == "TOOL_CALL_START" for e in watcher.events)
        assert any(e["type"] == "TOOL_CALL_RESULT" for e in watcher.events)
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            snapshot = snapshot_of(await again.until_end())
    kinds = [(m["role"], m.get("toolCallId") or m.get("content")) for m in snapshot]
    assert kinds[0] == ("user", "업무 요청 목록 화면 열어줘")
    assert ("tool", call["toolCallId"]) in kinds
    assert kinds[-1] == ("assistant", "이동했습니다")
