"""Version negotiation: a 1.x client gets the 1.0 stream, one that declares none the 0.0.x
shape, any other version a VALIDATION_ERROR; the downgrade reshapes, never invents."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from gateway import wire as p
from gateway.doors.send_queue import Outgoing
from gateway.wire import versions
from gateway.wire.versions import Dialect
from tests.support.wire import every_event

pytestmark = pytest.mark.unit

INTERRUPT = p.Interrupt(id="i-1", reason="approval", message="승인하시겠습니까?", tool_call_id="c")


def run_input(**fields: Any) -> p.RunAgentInput:
    frame = {"threadId": "t", "runId": "r", "messages": [], **fields}
    return p.decode_input(json.dumps(frame))


def legacy(event: p.Event) -> list[dict[str, Any]]:
    return [json.loads(data) for _, data in versions.encoded(event, Dialect.LEGACY)]


@pytest.mark.parametrize("declared", ["1.0", "1.3", "1.0.0"])
def test_a_1x_declaration_gets_the_current_stream(declared: str) -> None:
    dialect, _ = versions.negotiate(run_input(protocolVersion=declared))
    assert dialect is Dialect.CURRENT


@pytest.mark.parametrize("declared", [None, "0.0", "0.0.59"])
def test_no_declaration_or_a_0x_one_gets_the_legacy_stream(declared: str | None) -> None:
    fields = {} if declared is None else {"protocolVersion": declared}
    dialect, _ = versions.negotiate(run_input(**fields))
    assert dialect is Dialect.LEGACY


@pytest.mark.parametrize(
    ("declared", "said"),
    [("2.0", "AG-UI 2.x"), ("10.1", "AG-UI 10.x"), ("latest", "not a version"), ("", "MAJOR")],
)
def test_an_unknown_version_is_refused_with_a_sentence(declared: str, said: str) -> None:
    with pytest.raises(p.GatewayError) as refused:
        versions.negotiate(run_input(protocolVersion=declared))
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
    assert said in refused.value.message and '"1.0"' in refused.value.message


def test_the_current_dialect_sends_every_event_as_it_is() -> None:
    for event in every_event():
        assert versions.shaped(event, Dialect.CURRENT) == (event,)


def test_a_legacy_run_starts_without_a_version_declaration() -> None:
    [started] = legacy(p.RunStarted(thread_id="t", run_id="r", protocol_version="1.0"))
    assert started == {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


def test_a_legacy_outcome_lists_no_pending_calls_and_never_says_cancelled() -> None:
    waiting = p.RunFinished(
        thread_id="t", run_id="r", outcome=p.SuccessOutcome(pending_tool_call_ids=["c"])
    )
    [finished] = legacy(waiting)
    assert finished["outcome"] == {"type": "success"}
    [cancelled] = legacy(p.RunFinished(thread_id="t", run_id="r", outcome=p.CancelledOutcome()))
    assert "outcome" not in cancelled and cancelled["runId"] == "r"


def test_a_legacy_interrupt_is_also_announced_as_on_interrupt_before_the_end() -> None:
    interrupted = p.RunFinished(
        thread_id="t", run_id="r", outcome=p.InterruptOutcome(interrupts=[INTERRUPT])
    )
    announced, finished = legacy(interrupted)
    assert announced == {
        "type": "CUSTOM",
        "name": "on_interrupt",
        "value": json.loads(msgspec.json.encode(INTERRUPT)),
    }
    assert finished == json.loads(p.encode(interrupted))


def test_legacy_tool_results_and_messages_carry_text_and_media_0x_can_name() -> None:
    events = {type(event): event for event in every_event()}
    [result] = legacy(events[p.ToolCallResult])
    assert result["content"] == "done"
    [snapshot] = legacy(events[p.MessagesSnapshot])
    user, assistant, tool = snapshot["messages"]
    assert [part.get("source", {}).get("type") for part in user["content"]] == [None, "url"]
    assert assistant["metadata"] == {"ended": "stopped"}
    assert tool["content"] == "{}"


def test_a_legacy_interrupt_answer_is_read_as_the_resume_it_means() -> None:
    asked = json.loads(msgspec.json.encode(INTERRUPT))
    answered = run_input(
        forwardedProps={"command": {"resume": {"approved": True}, "interruptEvent": asked}}
    )
    dialect, read = versions.negotiate(answered)
    assert dialect is Dialect.LEGACY
    assert read.resume == [
        p.ResumeEntry(interrupt_id="i-1", status="resolved", payload={"approved": True})
    ]


@pytest.mark.parametrize("asked", [None, "i-1", {"reason": "approval"}, {"id": ""}])
def test_a_legacy_answer_that_names_no_interrupt_is_refused(asked: Any) -> None:
    answered = run_input(forwardedProps={"command": {"resume": {}, "interruptEvent": asked}})
    with pytest.raises(p.GatewayError) as refused:
        versions.negotiate(answered)
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
    assert "interruptEvent" in refused.value.message


def test_a_1x_resume_is_left_as_it_is_beside_a_command() -> None:
    entry = {"interruptId": "i-2", "status": "cancelled"}
    command = {"command": {"resume": {"approved": True}, "interruptEvent": {"id": "i-1"}}}
    _, read = versions.negotiate(run_input(resume=[entry], forwardedProps=command))
    assert read.resume == [p.ResumeEntry(interrupt_id="i-2", status="cancelled")]


def test_a_queue_sends_its_clients_dialect() -> None:
    queue: Outgoing[p.Event | None] = Outgoing()
    waiting = p.RunFinished(
        thread_id="t", run_id="r", outcome=p.SuccessOutcome(pending_tool_call_ids=["c"])
    )
    queue.put(waiting)
    queue.dialect = Dialect.LEGACY
    queue.put(waiting)
    first, second = (json.loads(data) for _, data in queue._items)
    assert first["outcome"]["pendingToolCallIds"] == ["c"]
    assert second["outcome"] == {"type": "success"}
