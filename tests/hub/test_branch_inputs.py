"""What an input asks of its thread's branches, read before anything is stored
(``gateway.hub.branches.asked``): hostile values are VALIDATION_ERRORs naming the field,
and an input that asks nothing is left alone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway import wire as p
from gateway.hub.branches import asked

pytestmark = pytest.mark.unit


def _input(branch: Any = None, **extra: Any) -> p.RunAgentInput:
    frame: dict[str, Any] = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "m2", "role": "user", "content": "again"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {} if branch is None else {"branch": branch},
        **extra,
    }
    return p.decode_input(json.dumps(frame))


def _refusal(run_input: p.RunAgentInput) -> str:
    with pytest.raises(p.GatewayError) as refused:
        asked(run_input)
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
    return str(refused.value)


def test_an_input_that_asks_nothing_is_left_alone() -> None:
    assert asked(_input()) is None


def test_each_ask_is_read() -> None:
    fork = asked(_input({"before": "m1"}))
    assert fork is not None and (fork.before, fork.switch_to) == ("m1", None)
    switch = asked(_input({"switchTo": "r1"}, messages=[]))
    assert switch is not None and (switch.before, switch.switch_to) == (None, "r1")


@pytest.mark.parametrize(
    ("branch", "says"),
    [
        (5, "$.forwardedProps.branch"),
        ([], "$.forwardedProps.branch"),
        ({"before": 5}, "$.forwardedProps.branch.before"),
        ({"before": ""}, "$.forwardedProps.branch.before"),
        ({"before": "m" * 257}, "$.forwardedProps.branch.before"),
        ({"switchTo": {"a": 1}}, "$.forwardedProps.branch.switchTo"),
        ({"other": "x"}, "$.forwardedProps.branch"),
        ({}, "exactly one"),
        ({"before": "m1", "switchTo": "r1"}, "exactly one"),
    ],
)
def test_hostile_asks_are_refused_naming_the_field(branch: Any, says: str) -> None:
    assert says in _refusal(_input(branch))


def test_a_fork_needs_the_users_message_last_and_nothing_else_asked() -> None:
    tool = [{"id": "x", "role": "tool", "toolCallId": "c", "content": "{}"}]
    assert "last message" in _refusal(_input({"before": "m1"}, messages=tool))
    assert "last message" in _refusal(_input({"before": "m1"}, messages=[]))
    resume = [{"interruptId": "i", "status": "resolved"}]
    assert "last message" in _refusal(_input({"before": "m1"}, resume=resume))
