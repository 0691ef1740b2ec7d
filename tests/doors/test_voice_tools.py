"""A live turn beyond talking, end to end over /ws against the local Live server
(``tests.support.gemini_live``), ADK's real ``run_live``: a tool that needs approval pauses
the turn and asks the person (``gateway.live.approval``, answered by ``liveResume``), then
runs or is refused, and the model is told, every answer audited; a reply the person spoke
over is marked so (``metadata.ended: "bargedIn"``) live, in a snapshot and in /history;
a message typed during the turn goes to the model as a user turn and is stored as one;
a live turn's tools, answers and refusals are audited as a typed run's are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.adk.tools import FunctionTool

from gateway.wire import live as wire_live
from tests.support import gemini_live as live
from tests.support.agui import new_id, snapshot_of
from tests.support.voice import (
    NAVIGATE,
    VoiceSocket,
    find_screen,
    live_gateway,
    messages,
    voice_client,
)

pytestmark = pytest.mark.server


class Approvals:
    """A tool that approves a work request, only once a person said yes."""

    def __init__(self) -> None:
        self.approved: list[str] = []

    def tool(self) -> FunctionTool:
        def approve_request(request_id: str) -> dict[str, str]:
            """Approves the work request ``request_id``."""
            self.approved.append(request_id)
            return {"status": "approved", "requestId": request_id}

        return FunctionTool(approve_request, require_confirmation=True)


def asks_to_approve(call_id: str) -> list[live.Step]:
    return [
        live.WaitAudio(3200),
        live.Send(
            live.heard("R-1042 승인해줘", finished=True),
            live.tool_call("approve_request", {"request_id": "R-1042"}, call_id),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(live.said("처리했습니다", finished=True), live.turn_complete()),
    ]


async def answer(voice: VoiceSocket, thread_id: str, interrupt_id: str, **payload: Any) -> None:
    await voice.ws.send(
        json.dumps(
            {
                "type": "liveResume",
                "threadId": thread_id,
                "resume": [{"interruptId": interrupt_id, "status": "resolved", "payload": payload}],
            }
        )
    )


async def asked_approval(voice: VoiceSocket, thread_id: str) -> dict[str, Any]:
    """Opens a live turn, speaks, and returns the approval the turn asks for."""
    await voice.start(thread_id, new_id("r"))
    await voice.until("CUSTOM", wire_live.STARTED)
    await voice.speak(live.tone(0.1))
    return dict((await voice.until("CUSTOM", wire_live.APPROVAL))["value"])


async def until_said(voice: VoiceSocket, text: str) -> None:
    while text not in [m[1] for m in messages(voice.events).values()]:
        event = await voice.next()
        assert event["type"] != "RUN_ERROR", event


async def test_a_tool_that_needs_approval_asks_the_person_then_runs_once() -> None:
    approvals = Approvals()
    thread_id = new_id("t")
    async with live_gateway([asks_to_approve("call-a")], [approvals.tool()]) as (server, gateway):
        async with voice_client(gateway) as voice:
            asked = await asked_approval(voice, thread_id)
            # The same interrupt a typed run ends with; nothing ran yet, the model waits.
            assert asked["reason"] == "approval"
            assert asked["toolCallId"] == "call-a"
            assert asked["metadata"] == {
                "tool": "approve_request",
                "arguments": {"request_id": "R-1042"},
            }
            assert "approved" in asked["responseSchema"]["properties"]
            assert approvals.approved == []
            assert server.connections[0].tool_responses == []
            # An answer that is not an approval's is refused; the call still waits.
            await answer(voice, thread_id, asked["id"], maybe=True)
            await answer(voice, thread_id, asked["id"], approved=True)
            await until_said(voice, "처리했습니다")
            # Answered once: a second answer is a notice, as in a typed run, and runs nothing.
            await answer(voice, thread_id, asked["id"], approved=True)
            again_told = await voice.until("CUSTOM", "gateway.notice")
            assert again_told["value"]["code"] == "INTERRUPT_ALREADY_ANSWERED"
            await voice.stop(thread_id)
            end = await voice.until_terminal()
            assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "success", end
            # The unreadable answer is told once the turn has ended, as any refused frame.
            refused = await voice.until_terminal()
        assert server.failures == []
        assert approvals.approved == ["R-1042"]
        assert server.connections[0].tool_responses == [
            {
                "id": "call-a",
                "name": "approve_request",
                "response": {"status": "approved", "requestId": "R-1042"},
            }
        ]
        assert refused["code"] == "VALIDATION_ERROR", refused
        assert '{"approved": true|false' in refused["message"]
        # The call streamed as any server tool's; its result too.
        result = next(e for e in voice.events if e["type"] == "TOOL_CALL_RESULT")
        assert result["toolCallId"] == "call-a" and "approved" in result["content"]
        # A reload finds the thread idle, nothing left to approve, the call answered.
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            reload = await again.until_end()
        assert reload[-1]["outcome"] == {"type": "success"}, reload[-1]
        kinds = [(m["role"], m.get("toolCallId") or m.get("content")) for m in snapshot_of(reload)]
        assert ("tool", "call-a") in kinds
        assert kinds[-1] == ("assistant", "처리했습니다")
        # Audited as a typed run's approval: the person's answer, and the tool's run.
        hub = gateway.app.hub
        assert hub is not None and hub.audit is not None
        calls = await hub.audit.query(thread=thread_id)
        doors = await hub.audit.query_access(thread=thread_id)
    assert [(c.tool, c.outcome, c.executor) for c in calls] == [
        ("approve_request approval", "ok", "client"),
        ("approve_request", "approved", "server"),
    ]
    assert [(d.action, d.outcome, d.detail) for d in doors if d.action == "approval"] == [
        ("approval", "VALIDATION_ERROR", "unreadable"),
        ("approval", "ok", "approved"),
        ("approval", "INTERRUPT_ALREADY_ANSWERED", "approved"),
    ]


async def test_a_rejected_approval_tells_the_model_why_and_runs_nothing() -> None:
    approvals = Approvals()
    thread_id = new_id("t")
    async with live_gateway([asks_to_approve("call-r")], [approvals.tool()]) as (server, gateway):
        async with voice_client(gateway) as voice:
            asked = await asked_approval(voice, thread_id)
            await answer(voice, thread_id, asked["id"], approved=False, reason="예산 초과")
            await until_said(voice, "처리했습니다")
            await voice.stop(thread_id)
            assert (await voice.until_terminal())["type"] == "RUN_FINISHED"
        assert server.failures == []
    assert approvals.approved == []
    [told] = server.connections[0].tool_responses
    assert told["id"] == "call-r"
    assert told["response"]["status"] == "rejected"
    assert told["response"]["reason"] == "예산 초과"


async def test_a_turn_stopped_while_an_approval_waits_rejects_it_and_ends() -> None:
    approvals = Approvals()
    thread_id = new_id("t")
    script = [
        live.WaitAudio(3200),
        live.Send(
            live.tool_call("approve_request", {"request_id": "R-7"}, "call-s"),
            live.turn_complete(),
        ),
        live.WaitAudio(10**9),
    ]
    async with live_gateway([script], [approvals.tool()]) as (_, gateway):
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, new_id("r"))
            await voice.until("CUSTOM", wire_live.STARTED)
            await voice.speak(live.tone(0.1))
            await voice.until("CUSTOM", wire_live.APPROVAL)
            await voice.stop(thread_id)
            end = await voice.until_terminal()
        assert end["type"] == "RUN_FINISHED", end
        # The thread is left with nothing to approve: a reload's run ends in success.
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            reload = await again.until_end()
    assert reload[-1]["outcome"] == {"type": "success"}, reload[-1]
    assert approvals.approved == []


async def test_a_reply_spoken_over_is_marked_live_and_after_a_reload() -> None:
    speech = live.tone(0.2, live.OUTPUT_RATE)
    script = [
        live.WaitAudio(3200),
        live.Send(live.audio_out(speech), live.said("길게 설명드리면 ")),
        live.WaitAudio(6400),  # the person speaks over it
        live.Send(
            live.interrupted(),
            live.heard("잠깐만요", finished=True),
            live.said("네, 말씀하세요", finished=True),
            live.turn_complete(),
        ),
    ]
    thread_id = new_id("t")
    async with live_gateway([script], []) as (server, gateway):
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, new_id("r"))
            await voice.until("CUSTOM", wire_live.STARTED)
            await voice.speak(live.tone(0.1))
            await voice.until("TEXT_MESSAGE_CONTENT")
            await voice.speak(live.tone(0.1))
            cut = (await voice.until("CUSTOM", wire_live.INTERRUPTED))["value"]["messageId"]
            await until_said(voice, "네, 말씀하세요")
            # A tab that joins mid-turn finds the reply marked in its snapshot.
            async with voice_client(gateway, f"&threadId={thread_id}") as joining:
                joined = await joining.until("RUN_STARTED")
                snapshot = await joining.until("MESSAGES_SNAPSHOT")
            await voice.stop(thread_id)
            assert (await voice.until_terminal())["type"] == "RUN_FINISHED"
        assert server.failures == []
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            reloaded = snapshot_of(await again.until_end())
        async with httpx.AsyncClient() as client:
            history = await client.get(
                f"{gateway.http}/history?threadId={thread_id}", headers={"X-Gateway-User": "demo"}
            )
    ended = next(
        e for e in voice.events if e["type"] == "TEXT_MESSAGE_END" and e["messageId"] == cut
    )
    assert ended["metadata"]["ended"] == "bargedIn"
    assert joined["runId"] == voice.events[0]["runId"]
    for messages_now in (snapshot["messages"], reloaded, history.json()["messages"]):
        by_id = {m["id"]: m for m in messages_now}
        assert by_id[cut]["content"] == "길게 설명드리면 "
        assert by_id[cut]["metadata"] == {"ended": "bargedIn"}
        # The reply after it is whole, and unmarked.
        [after] = [m for m in messages_now if m.get("content") == "네, 말씀하세요"]
        assert "metadata" not in after


async def test_a_message_typed_into_the_live_turn_reaches_the_model_and_is_stored() -> None:
    script = [
        live.WaitAudio(3200),
        live.Send(live.heard("안녕", finished=True), live.said("네", finished=True)),
        live.Send(live.turn_complete()),
        live.WaitClientContent(),
        live.Send(live.said("목록을 엽니다", finished=True), live.turn_complete()),
    ]
    thread_id, run_id = new_id("t"), new_id("r")
    typed = {
        "threadId": thread_id,
        "runId": new_id("r"),
        "messages": [{"id": "typed-1", "role": "user", "content": "업무 요청 목록 보여줘"}],
    }
    async with live_gateway([script], []) as (server, gateway):
        async with voice_client(gateway) as voice:
            await voice.start(thread_id, run_id)
            await voice.until("CUSTOM", wire_live.STARTED)
            async with voice_client(gateway, f"&threadId={thread_id}") as watcher:
                await watcher.until("RUN_STARTED")
                await voice.speak(live.tone(0.1))
                await until_said(voice, "네")
                await voice.ws.send(json.dumps(typed))  # not queued behind the live turn
                await until_said(voice, "목록을 엽니다")
                await voice.stop(thread_id)
                end = await voice.until_terminal()
                await watcher.until_terminal()
        assert end["type"] == "RUN_FINISHED" and end["runId"] == run_id, end
        assert server.failures == []
        turn = server.connections[0].client_contents[-1]
        assert turn["turns"] == [{"role": "user", "parts": [{"text": "업무 요청 목록 보여줘"}]}]
        assert turn["turnComplete"] is True
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            reloaded = snapshot_of(await again.until_end())
    # Stored as the user's message, under the id the client sent, in its place.
    assert [(m["role"], m.get("content")) for m in reloaded] == [
        ("user", "안녕"),
        ("assistant", "네"),
        ("user", "업무 요청 목록 보여줘"),
        ("assistant", "목록을 엽니다"),
    ]
    assert reloaded[2]["id"] == "typed-1"
    # The other tab was shown it as it was typed; the tab that typed it has it already.
    assert messages(watcher.events)["typed-1"] == ("user", "업무 요청 목록 보여줘")
    assert "typed-1" not in messages(voice.events)


async def start_with_navigate(voice: VoiceSocket, thread_id: str) -> None:
    """Opens a live turn offering the browser's navigation, and speaks."""
    start = {"type": "liveStart", "threadId": thread_id, "runId": new_id("r")}
    await voice.ws.send(json.dumps({**start, "tools": [NAVIGATE]}))
    await voice.until("CUSTOM", wire_live.STARTED)
    await voice.speak(live.tone(0.1))


async def navigated(voice: VoiceSocket, thread_id: str, call_id: str) -> None:
    """The browser's result for the navigation ``call_id``."""
    result = {"id": f"result-{call_id}", "role": "tool", "toolCallId": call_id}
    result["content"] = '{"status": "navigated"}'
    frame = {"type": "liveToolResult", "threadId": thread_id, "message": result}
    await voice.ws.send(json.dumps(frame))


async def test_a_live_turn_is_audited_as_a_typed_run_is() -> None:
    script = [
        live.WaitAudio(3200),
        live.Send(
            live.tool_call("find_screen", {"query": "업무 요청"}, "find-1"),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(
            live.tool_call("navigateToScreen", {"screenId": "MNU-3120"}, "nav-1"),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(live.said("열었습니다", finished=True), live.turn_complete()),
    ]
    thread_id = new_id("t")
    async with live_gateway([script], [find_screen]) as (server, gateway):
        async with voice_client(gateway) as voice:
            await start_with_navigate(voice, thread_id)
            while (call := await voice.until("TOOL_CALL_START"))["toolCallId"] != "nav-1":
                pass
            await voice.until("TOOL_CALL_END")
            await navigated(voice, thread_id, "nav-1")
            await until_said(voice, "열었습니다")
            await voice.stop(thread_id)
            run_id = (await voice.until_terminal())["runId"]
        # Another user may not talk on the thread: refused, and audited as a denial.
        async with voice_client(gateway, user="mallory") as stranger:
            await stranger.start(thread_id, new_id("r"))
            assert (await stranger.until_terminal())["code"] == "ACCESS_DENIED"
        assert server.failures == []
        hub = gateway.app.hub
        assert hub is not None and hub.audit is not None
        calls = await hub.audit.query(thread=thread_id)
        doors = await hub.audit.query_access(thread=thread_id)
    assert call["toolCallName"] == "navigateToScreen"
    assert [(c.tool, c.call_id, c.outcome, c.executor, c.run_id) for c in calls] == [
        ("find_screen", "find-1", "ok", "server", run_id),
        ("navigateToScreen", "nav-1", "navigated", "client", run_id),
    ]
    assert calls[1].arguments == {"screenId": "MNU-3120"}
    assert [(d.user_id, d.action, d.outcome) for d in doors] == [
        ("mallory", "live", "ACCESS_DENIED")
    ]


async def test_a_browser_result_stored_while_adk_stores_transcripts_is_not_refused(
    tmp_path: Path,
) -> None:
    # ADK stores each finished transcript as it comes; the browser's result is stored by the
    # gateway beside them. Unserialised, a result landing while a transcript's write is in
    # flight carries a stale revision and the store refuses one of the two writes.
    flood = [live.heard(f"{n}번", finished=True) for n in range(300)]
    script = [
        live.WaitAudio(3200),
        live.Send(
            live.tool_call("navigateToScreen", {"screenId": "MNU-3120"}, "nav-1"),
            live.turn_complete(),
        ),
        live.Send(*flood),
        live.WaitToolResponse(),
        live.Send(live.said("열었습니다", finished=True), live.turn_complete()),
    ]
    thread_id = new_id("t")
    # On disk, each commit takes a while: the flood's writes are in flight for a second.
    db = str(tmp_path / "threads.db")
    async with live_gateway([script], [], db=db) as (server, gateway):
        async with voice_client(gateway) as voice:
            await start_with_navigate(voice, thread_id)
            await voice.until("TOOL_CALL_END")
            await voice.until("TEXT_MESSAGE_END")  # the flood is being stored
            await navigated(voice, thread_id, "nav-1")
            await until_said(voice, "열었습니다")
            await voice.stop(thread_id)
            end = await voice.until_terminal()
        assert end["type"] == "RUN_FINISHED", end
        assert server.failures == []
        async with voice_client(gateway, f"&threadId={thread_id}") as again:
            reloaded = snapshot_of(await again.until_end())
    said_by_user = [m["content"] for m in reloaded if m["role"] == "user"]
    assert said_by_user == [f"{n}번" for n in range(300)]
    assert ("tool", "nav-1") in [(m["role"], m.get("toolCallId")) for m in reloaded]
    assert reloaded[-1]["content"] == "열었습니다"
