"""The local Gemini Live server speaks what google-genai and ADK's live path expect.

Checked first against google-genai's own ``client.aio.live.connect`` (the setup it sends,
audio in, every kind of server message back), then under ADK's real ``Runner.run_live``
(transcripts stored, a server tool answered over the socket, a ``goAway`` reconnected with
the session-resumption handle), so the gateway's voice tests stand on a server that the
real clients accept.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google import genai
from google.adk.agents import LlmAgent
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.events import Event
from google.adk.runners import InMemoryRunner
from google.genai import types

from tests.support import gemini_live as live
from tests.support.budgets import scaled

pytestmark = pytest.mark.server

MIC = f"audio/pcm;rate={live.INPUT_RATE}"


def _config() -> types.LiveConnectConfig:
    return types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO],
        input_audio_transcription=types.AudioTranscriptionConfig(),
        output_audio_transcription=types.AudioTranscriptionConfig(),
    )


async def _one_turn(session: Any) -> list[types.LiveServerMessage]:
    async def read() -> list[types.LiveServerMessage]:
        return [message async for message in session.receive()]

    return await asyncio.wait_for(read(), scaled(5))


async def test_google_genai_connects_streams_audio_and_reads_a_scripted_turn() -> None:
    speech = live.tone(0.2, live.OUTPUT_RATE)
    script = [
        live.WaitAudio(6400),
        live.Send(
            live.heard("업무 요청 "),
            live.heard("목록"),
            live.resumption("handle-1"),
            live.audio_out(speech),
            live.said("열었습니다"),
            live.turn_complete(),
        ),
    ]
    async with live.LiveServer([script]) as server:
        client = genai.Client(**server.client_options())
        async with client.aio.live.connect(model=live.MODEL, config=_config()) as session:
            mic = live.tone(0.1)
            for _ in range(2):
                await session.send_realtime_input(audio=types.Blob(data=mic, mime_type=MIC))
            turn = await _one_turn(session)
        connection = server.connections[0]
        assert server.failures == []
        assert connection.setup["model"] == f"models/{live.MODEL}"
        assert "inputAudioTranscription" in connection.setup
        assert bytes(connection.audio) == mic * 2
        assert connection.audio_mime_types == {MIC}
    contents = [message.server_content for message in turn]
    assert [c.input_transcription.text for c in contents if c and c.input_transcription] == [
        "업무 요청 ",
        "목록",
    ]
    parts = [c.model_turn.parts for c in contents if c and c.model_turn and c.model_turn.parts]
    assert parts[0][0].inline_data is not None
    assert parts[0][0].inline_data.data == speech
    assert [c.output_transcription.text for c in contents if c and c.output_transcription] == [
        "열었습니다"
    ]
    assert contents[-1] is not None and contents[-1].turn_complete
    updates = [m.session_resumption_update for m in turn if m.session_resumption_update]
    assert [update.new_handle for update in updates] == ["handle-1"]


async def test_google_genai_gets_interruptions_tool_calls_and_go_away() -> None:
    script = [
        live.WaitAudio(3200),
        live.Send(live.said("길게 말하는 "), live.interrupted()),
        live.Send(live.tool_call("find_screen", {"query": "업무 요청"}, "call-1")),
        live.Send(live.turn_complete()),
        live.WaitToolResponse(),
        live.Send(live.go_away(5), live.turn_complete()),
    ]
    async with live.LiveServer([script]) as server:
        client = genai.Client(**server.client_options())
        async with client.aio.live.connect(model=live.MODEL, config=_config()) as session:
            await session.send_realtime_input(audio=types.Blob(data=live.tone(0.1), mime_type=MIC))
            first = await _one_turn(session)
            answer = types.FunctionResponse(
                id="call-1", name="find_screen", response={"screenId": "MNU-3120"}
            )
            await session.send_tool_response(function_responses=[answer])
            rest = await _one_turn(session)
        connection = server.connections[0]
        assert server.failures == []
        assert connection.tool_responses == [
            {"id": "call-1", "name": "find_screen", "response": {"screenId": "MNU-3120"}}
        ]
    messages = first + rest
    assert any(m.server_content and m.server_content.interrupted for m in messages)
    calls = [call for m in messages if m.tool_call for call in m.tool_call.function_calls or []]
    assert [(call.id, call.name, call.args) for call in calls] == [
        ("call-1", "find_screen", {"query": "업무 요청"})
    ]
    assert any(m.go_away and m.go_away.time_left for m in messages)


async def test_a_handle_resumes_its_session_and_one_never_given_is_refused() -> None:
    given = [live.Send(live.resumption("handle-1"), live.turn_complete())]
    async with live.LiveServer([given]) as server:
        client = genai.Client(**server.client_options())
        async with client.aio.live.connect(model=live.MODEL, config=_config()) as session:
            await _one_turn(session)
        resume = _config()
        resume.session_resumption = types.SessionResumptionConfig(handle="handle-1")
        async with client.aio.live.connect(model=live.MODEL, config=resume) as session:
            await _one_turn(session)
        first, resumed = server.connections
        assert resumed.resumed_from == "handle-1" and resumed.session == first.session
        # A handle the server never gave, and one it lost, are refused before setupComplete.
        server.forget("handle-1")
        for handle in ("handle-0", "handle-1"):
            resume.session_resumption = types.SessionResumptionConfig(handle=handle)
            with pytest.raises(genai.errors.APIError) as refused:
                async with client.aio.live.connect(model=live.MODEL, config=resume):
                    pass
            assert refused.value.code == live.CLOSE_INVALID_ARGUMENT
        assert server.refused == ["handle-0", "handle-1"]
        assert len(server.connections) == 2


def find_screen(query: str) -> dict[str, str]:
    """Finds the screen the person asks for."""
    return {"screenId": "MNU-3120", "asked": query}


def _run_config() -> RunConfig:
    return RunConfig(
        streaming_mode=StreamingMode.BIDI,
        response_modalities=[types.Modality.AUDIO],
        input_audio_transcription=types.AudioTranscriptionConfig(),
        output_audio_transcription=types.AudioTranscriptionConfig(),
        session_resumption=types.SessionResumptionConfig(),
    )


async def _run_live(
    server: live.LiveServer, until: Any
) -> tuple[list[Event], list[Event], LiveRequestQueue]:
    """Runs ADK's run_live against ``server`` until ``until(events)``; the events it
    yielded and the ones it stored."""
    agent = LlmAgent(
        name="voice", model=server.live_model(), instruction="Be brief.", tools=[find_screen]
    )
    runner = InMemoryRunner(agent=agent, app_name="voice")
    session = await runner.session_service.create_session(app_name="voice", user_id="u")
    queue = LiveRequestQueue()
    queue.send_realtime(types.Blob(data=live.tone(0.1), mime_type=MIC))
    events: list[Event] = []

    async def run() -> None:
        async for event in runner.run_live(
            user_id="u", session_id=session.id, live_request_queue=queue, run_config=_run_config()
        ):
            events.append(event)
            if until(events):
                queue.close()
                return

    await asyncio.wait_for(run(), scaled(10))
    stored = await runner.session_service.get_session(
        app_name="voice", user_id="u", session_id=session.id
    )
    assert stored is not None
    return events, stored.events, queue


async def test_adk_run_live_stores_transcripts_and_answers_a_server_tool() -> None:
    script = [
        live.WaitAudio(3200),
        live.Send(
            live.heard("업무 요청 "),
            live.heard("목록 열어줘", finished=True),
            live.tool_call("find_screen", {"query": "업무 요청"}, "call-1"),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(
            live.audio_out(live.tone(0.1, live.OUTPUT_RATE)),
            live.said("화면을 "),
            live.said("찾았습니다"),
            live.turn_complete(),
        ),
    ]
    async with live.LiveServer([script]) as server:
        events, stored, _ = await _run_live(
            server, lambda events: sum(bool(e.turn_complete) for e in events) == 2
        )
        assert server.failures == []
        assert server.connections[0].tool_responses[0]["response"] == {
            "screenId": "MNU-3120",
            "asked": "업무 요청",
        }
    assert any(e.content and e.content.parts and e.content.parts[0].inline_data for e in events)
    heard = [e.input_transcription.text for e in stored if e.input_transcription]
    said = [e.output_transcription.text for e in stored if e.output_transcription]
    assert heard == ["업무 요청 목록 열어줘"]
    assert said == ["화면을 찾았습니다"]
    assert not any(e.partial for e in stored)


async def test_adk_reconnects_after_go_away_with_the_resumption_handle() -> None:
    first = [
        live.WaitAudio(3200),
        live.Send(live.resumption("handle-7"), live.said("반갑"), live.go_away(1)),
        live.Close(),
    ]
    second = [live.Send(live.said("습니다"), live.turn_complete())]
    async with live.LiveServer([first, second]) as server:
        await _run_live(server, lambda events: any(e.turn_complete for e in events))
        assert server.failures == []
        assert len(server.connections) == 2
        assert server.connections[0].resumed_from is None
        assert server.connections[1].resumed_from == "handle-7"
