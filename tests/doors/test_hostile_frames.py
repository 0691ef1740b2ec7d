"""Frames an attacker sends: each gets a coded RUN_ERROR, and nothing it carries is stored.

The inputs are issue 11's: a tool result nested ~200 deep (it was stored, could not be read
back, and broke its thread and then the store), a 5,000-digit number, nesting past the
decoder's own limit, bogus tool schemas, ids with newlines, a flood of queued frames.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from gateway import wire as p
from gateway.doors.websocket import REFUSED_NAMED, Refused, Taken
from gateway.examples.navigator.screens import catalog as screens
from gateway.hub import planning
from gateway.hub.inputs import needed_part
from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.flagship import FLAGSHIP
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server


def nested(depth: int) -> Any:
    value: Any = {"status": "navigated"}
    for _ in range(depth):
        value = {"a": value}
    return value


def nested_list(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


async def paused_on_navigate(ws: AgUiSocket, thread: str) -> str:
    events = await ws.run(user_input(thread, FLAGSHIP))
    [call] = tool_calls(events, "navigateToScreen")
    return str(call["id"])


async def assert_refused(ws: AgUiSocket, frame: dict[str, Any] | str, *words: str) -> str:
    error = await ws.refused(frame)
    assert error["type"] == "RUN_ERROR" and error["code"] == "VALIDATION_ERROR", error
    for word in words:
        assert word in error["message"], error["message"]
    return str(error["message"])


@pytest.mark.parametrize(
    "result",
    [
        pytest.param(json.dumps(nested(200)), id="nested 200 deep"),
        pytest.param('{"status": "navigated", "n": 1' + "0" * 5000 + "}", id="5000 digits"),
        pytest.param("[" * 5000 + "]" * 5000, id="nested past the decoder"),
    ],
)
async def test_a_tool_result_the_store_could_not_read_back_is_refused_and_the_thread_goes_on(
    gateway: RunningGateway, result: str
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        call_id = await paused_on_navigate(ws, thread)
        frame = tool_answer(thread, [(call_id, {})])
        frame["messages"][0]["content"] = result
        await assert_refused(ws, frame, "`$.messages[0].content")
        # Nothing was stored: the call still waits, and a real answer resumes the run.
        events = await ws.run(tool_answer(thread, [(call_id, {"status": "navigated"})]))
        assert text_of(events) == "업무 요청 목록 화면으로 이동했습니다."
    async with gateway.socket(query=f"&threadId={thread}") as ws:
        snapshot = await ws.until_end()
        assert outcome(snapshot) == {"type": "success"}


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("state", nested(40), "`$.state.a.a"),
        (
            "forwardedProps",
            {"k": nested_list(34)},
            "`$.forwardedProps.k[0]",
        ),
        ("state", {"x" * 300: 1}, "a key of 300 characters"),
        ("state", list(range(10_001)), "10001 entries"),
        (
            "threadId",
            "t\n2026-12-01 ERROR forged line",
            "no spaces around it - at `$.threadId`",
        ),
        ("threadId", "t" * 1_000_000, "length <= 256 - at `$.threadId`"),
        ("runId", "", "length >= 1 - at `$.runId`"),
    ],
)
async def test_a_frame_out_of_bounds_names_the_field(
    gateway: RunningGateway, field: str, value: Any, named: str
) -> None:
    async with gateway.socket() as ws:
        frame = user_input(new_id("t"), "안녕")
        frame[field] = value
        await assert_refused(ws, frame, named)
        assert outcome(await ws.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}


async def test_nesting_past_the_decoder_limit_is_a_validation_error_not_a_closed_socket(
    gateway: RunningGateway,
) -> None:
    async with gateway.socket() as ws:
        frame = json.dumps(user_input(new_id("t"), "안녕"))
        deep = frame[:-1] + ', "state": ' + "[" * 100_000 + "]" * 100_000 + "}"
        await assert_refused(ws, deep, "nested too deeply")
        await assert_refused(ws, '{"type": "cancel", "threadId": ' + "[" * 5000, "")
        assert outcome(await ws.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "object", "properties": 5},
        {"type": "object", "properties": {"screenId": {"type": "string"}}, "required": "screenId"},
        {"type": "object", "required": [1, 2]},
        {"type": ["object"], "properties": []},
    ],
)
async def test_a_bogus_tool_schema_is_a_validation_error(
    gateway: RunningGateway, parameters: dict[str, Any]
) -> None:
    tool = {"name": "navigateToScreen", "description": "x", "parameters": parameters}
    async with gateway.socket() as ws:
        await assert_refused(ws, user_input(new_id("t"), FLAGSHIP, tools=[tool]), "tools[0]")


async def test_an_unexpected_failure_is_internal_error_with_an_id_and_the_socket_goes_on(
    gateway: RunningGateway, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals at /srv/app.py")

    async with gateway.socket() as ws:
        with monkeypatch.context() as patch:
            patch.setattr(planning, "read_input", broken)
            error = await ws.refused(user_input(new_id("t"), "안녕"))
        assert error["code"] == "INTERNAL_ERROR"
        assert "secret" not in error["message"] and "RuntimeError" not in error["message"]
        error_id = error["message"].split("error id ")[1].split(")")[0]
        assert any(error_id in r.getMessage() and r.exc_info for r in caplog.records)
        assert outcome(await ws.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}


async def test_an_unexpected_failure_on_sse_is_a_coded_500(
    gateway: RunningGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret")

    monkeypatch.setattr(planning, "read_input", broken)
    async with httpx.AsyncClient(base_url=gateway.http) as client:
        response = await client.post("/invocations", json=user_input(new_id("t"), "안녕"))
    assert response.status_code == 500
    [line] = [line for line in response.text.splitlines() if line.startswith("data: ")]
    error = json.loads(line.removeprefix("data: "))
    assert error["type"] == "RUN_ERROR" and error["code"] == "INTERNAL_ERROR"
    assert "secret" not in error["message"]


async def test_an_unexpected_failure_on_any_http_route_is_a_coded_500(
    gateway: RunningGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> Any:
        raise RuntimeError("secret")

    monkeypatch.setattr(screens, "load", broken)
    async with httpx.AsyncClient(base_url=gateway.http) as client:
        response = await client.get("/me", headers={"X-Gateway-User": "demo"})
        assert response.status_code == 500
        assert response.json()["code"] == "INTERNAL_ERROR"
        assert "secret" not in response.text and "error id" in response.text
        assert (await client.get("/tools")).status_code == 200


async def test_frames_past_the_queue_limit_are_refused_and_the_run_goes_on(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        await ws.send(user_input(thread, FLAGSHIP))
        # While that run goes, a flood: each frame is ~100 KB of resent history.
        history = [{"id": new_id("m"), "role": "user", "content": "x" * 100_000}]
        flood = user_input(thread, "안녕")
        flood["messages"] = history + flood["messages"]
        encoded = json.dumps(flood)
        for _ in range(100):
            await ws.ws.send(encoded)
        events = await ws.until_end()
        assert tool_calls(events, "navigateToScreen")
        refused = []
        while True:
            event = await ws.next()
            if event["type"] == "RUN_ERROR" and event["code"] == "RATE_LIMIT_EXCEEDED":
                refused.append(event)
                break
            if event["type"] == "RUN_ERROR":
                assert event["code"] == "SESSION_BUSY" or "busy" in event["message"], event
        assert refused and "frame(s) were refused" in refused[0]["message"]
        count = int(re.search(r"(\d+) frame\(s\) were refused", refused[0]["message"])[1])
        assert 0 < count < 100
        # It names the input it refused (once), as the refusal of one input does.
        assert refused[0]["metadata"] == {
            p.REFUSED_RUN_ID: flood["runId"],
            p.REFUSED_RUN_IDS: [flood["runId"]],
        }
        # The queue frees as it drains: the connection takes new runs.
        await asyncio.sleep(0.2)
        while True:
            try:
                await ws.next(timeout=0.5)
            except TimeoutError:
                break
        assert outcome(await ws.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}


def test_a_queued_input_keeps_only_the_messages_a_run_reads() -> None:
    frame = user_input("t", "안녕")
    frame["messages"] = [
        {"id": "m1", "role": "user", "content": "old"},
        {"id": "a1", "role": "assistant", "content": "old reply"},
        {"id": "r1", "role": "tool", "toolCallId": "c1", "content": "{}"},
        {"id": "r2", "role": "tool", "toolCallId": "c2", "content": "{}"},
    ]
    kept = needed_part(p.decode_input(json.dumps(frame)))
    assert [m.id for m in kept.messages] == ["r1", "r2"]
    frame["messages"].append({"id": "m2", "role": "user", "content": "new"})
    kept = needed_part(p.decode_input(json.dumps(frame)))
    assert [m.id for m in kept.messages] == ["m2"]


async def test_a_frame_far_past_the_limit_closes_its_socket_and_no_other() -> None:
    async with running_gateway(max_frame_bytes=4096) as gateway:
        async with gateway.socket() as ws:
            await ws.ws.send("x" * (5 * 4096))
            with pytest.raises(ConnectionClosed) as closed:
                await ws.next()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        async with gateway.socket() as ws:
            assert outcome(await ws.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}


@pytest.mark.unit
def test_one_error_for_many_frames_names_the_inputs_among_them_in_order_and_a_few() -> None:
    refused = Refused(p.GatewayError(p.ErrorCode.RATE_LIMIT_EXCEEDED, "Slow down."))
    inputs = [p.decode_upstream(json.dumps(user_input("t", "안녕"))) for _ in range(40)]
    assert all(isinstance(frame, p.RunAgentInput) for frame in inputs)
    refused.count(None)  # a frame a rate limit refused unread
    refused.count(Taken(inputs[0], None))  # admitted as it was read, then refused
    for frame in inputs:  # the first again: named once
        refused.count(frame)
    refused.count(p.Reattach(thread_id="t"))  # not an input
    error = refused.to_event()
    assert "43 frame(s) were refused" in error.message
    assert error.metadata == {p.REFUSED_RUN_IDS: [frame.run_id for frame in inputs[:REFUSED_NAMED]]}
