"""Wire types: decoding errors name the field, encoding matches AG-UI, schemas stay fresh."""

from __future__ import annotations

import json

import pytest

from gateway import wire as p
from scripts.export_schemas import OUT, rendered
from tests.support.agui import validate_official

pytestmark = pytest.mark.unit


def test_checked_in_schemas_match_the_types() -> None:
    for name, text in rendered().items():
        path = OUT / name
        assert path.exists(), f"{path} missing: run scripts/export_schemas.py"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run the script"


def test_input_decodes_with_every_message_kind() -> None:
    frame = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "s", "role": "system", "content": "be brief"},
            {"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "id": "a",
                "role": "assistant",
                "toolCalls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"id": "t1", "role": "tool", "toolCallId": "c", "content": "{}"},
        ],
        "resume": [{"interruptId": "i", "status": "resolved", "payload": {"approved": True}}],
        "somethingNew": 1,
    }
    decoded = p.decode_upstream(json.dumps(frame))
    assert isinstance(decoded, p.RunAgentInput)
    assert isinstance(decoded.messages[3], p.ToolMessage)
    assert decoded.resume and decoded.resume[0].payload == {"approved": True}


@pytest.mark.parametrize(
    ("frame", "names"),
    [
        ('{"threadId": "t", "runId": "r"}', "messages"),
        ('{"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "robot"}]}', "role"),
        ('{"threadId": "t", "runId": 5, "messages": []}', "$.runId"),
        ('{"type": "cancel"}', "threadId"),
        ("[1, 2]", "object"),
    ],
)
def test_bad_frames_name_the_field(frame: str, names: str) -> None:
    with pytest.raises(p.GatewayError) as raised:
        p.decode_upstream(frame)
    assert raised.value.code is p.ErrorCode.VALIDATION_ERROR
    assert names in raised.value.message


def test_control_frames_decode() -> None:
    assert p.decode_upstream('{"type": "cancel", "threadId": "t"}') == p.Cancel(thread_id="t")
    assert p.decode_upstream('{"type": "reattach", "threadId": "t"}') == p.Reattach(thread_id="t")


def test_emitted_events_are_valid_ag_ui() -> None:
    events: list[p.Event] = [
        p.RunStarted(thread_id="t", run_id="r", protocol_version=p.PROTOCOL_VERSION),
        p.TextMessageStart(message_id="m", role="assistant"),
        p.TextMessageContent(message_id="m", delta="x"),
        p.TextMessageEnd(message_id="m"),
        p.ToolCallStart(tool_call_id="c", tool_call_name="f", parent_message_id="m"),
        p.ToolCallArgs(tool_call_id="c", delta="{}"),
        p.ToolCallEnd(tool_call_id="c"),
        p.ToolCallResult(message_id="tr-c", tool_call_id="c", content="{}", role="tool"),
        p.StateDelta(delta=[{"op": "add", "path": "/a", "value": 1}]),
        p.StateSnapshot(snapshot={"a": 1}),
        p.MessagesSnapshot(messages=[p.UserMessage(id="u", content="hi")]),
        p.Custom(name="gateway.notice", value={"code": "X"}),
        p.RunFinished(
            thread_id="t",
            run_id="r",
            outcome=p.InterruptOutcome(
                interrupts=[p.Interrupt(id="i", reason="approval", tool_call_id="c")]
            ),
        ),
        p.RunFinished(thread_id="t", run_id="r", outcome=p.CancelledOutcome()),
        p.RunError(message="boom", code="AGENT_ERROR"),
    ]
    for event in events:
        validate_official(json.loads(p.encode(event)))


def test_error_codes_map_to_the_agentcore_statuses() -> None:
    assert p.ErrorCode.SESSION_BUSY.http_status == 409
    assert p.ErrorCode.VALIDATION_ERROR.http_status == 400
    assert p.ErrorCode.AGENT_ERROR.http_status == 200
