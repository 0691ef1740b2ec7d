"""Regenerate, edit and switch through the official @ag-ui/client 1.0's HttpAgent, on
either store (docs/branches.md): a stock client that resends the user's message forks the
thread, our own `forwardedProps.branch` edits and switches, every stream passes the
client's enforcement and verifier with no warning, and going back to the flagship's
branch shows its navigation without asking the browser for it again."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.agui import new_id
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.official_client import NEEDS_NODE, accepted, base_input, run_http_agent
from tests.support.servers import RunningGateway

pytestmark = [NEEDS_NODE, pytest.mark.browser]


@pytest.fixture(scope="module")
def gateway(gateway_on_each_store: RunningGateway) -> RunningGateway:
    return gateway_on_each_store


def _user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def _events(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in report["events"] if e["type"] == kind]


def _forks(report: dict[str, Any]) -> list[dict[str, Any]]:
    [listing] = [e["value"] for e in _events(report, "CUSTOM") if e["name"] == "gateway.branches"]
    forks: list[dict[str, Any]] = listing["forks"]
    return forks


def _said(report: dict[str, Any]) -> list[str]:
    return [
        m.get("content") or "" for m in report["messages"] if m["role"] in ("user", "assistant")
    ]


async def test_regenerate_edit_and_switch_through_the_official_client(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    first = base_input(thread, [_user("m1", "hello")])
    hello = await run_http_agent(gateway, first)
    accepted(hello)
    [original] = [m for m in hello["messages"] if m["role"] == "assistant"]

    # A stock client's regenerate: the messages up to the user's, resent as they were.
    again = base_input(thread, [_user("m1", "hello")])
    regenerated = await run_http_agent(gateway, again)
    accepted(regenerated)
    [fork] = _forks(regenerated)
    assert [(b["runId"], b["active"]) for b in fork["branches"]] == [
        (first["runId"], False),
        (again["runId"], True),
    ]
    # The client shows its own messages up to the one it sent: no snapshot undoes them.
    assert not _events(regenerated, "MESSAGES_SNAPSHOT")
    assert [m["role"] for m in regenerated["messages"]] == ["user", "assistant"]
    assert regenerated["messages"][1]["id"] != original["id"]

    # Our own client's edit names the message; the new version goes on from the same place.
    edit = base_input(thread, [_user("m1-edited", FLAGSHIP)])
    edit["forwardedProps"] = {"branch": {"before": "m1"}}
    edited = await run_http_agent(gateway, edit)
    accepted(edited)
    [navigate] = [
        e for e in _events(edited, "TOOL_CALL_START") if e["toolCallName"] == "navigateToScreen"
    ]
    [fork] = _forks(edited)
    assert [b["text"] for b in fork["branches"]] == ["hello", "hello", FLAGSHIP]
    answered = base_input(
        thread,
        [
            *edited["messages"],
            {
                "id": new_id("tool"),
                "role": "tool",
                "toolCallId": navigate["toolCallId"],
                "content": '{"status": "navigated"}',
            },
        ],
    )
    moved = await run_http_agent(gateway, answered)
    accepted(moved)
    assert _said(moved)[-1] == MOVED

    # Switch to the first reply: the client's messages become that branch.
    switch = base_input(thread, [])
    switch["forwardedProps"] = {"branch": {"switchTo": first["runId"]}}
    switched = await run_http_agent(gateway, switch)
    accepted(switched)
    assert [m["id"] for m in switched["messages"]] == ["m1", original["id"]]
    assert not _events(switched, "TOOL_CALL_START")

    # And back to the edit: its navigation is shown answered, not asked of the browser again.
    back = base_input(thread, [])
    back["forwardedProps"] = {"branch": {"switchTo": edit["runId"]}}
    shown = await run_http_agent(gateway, back)
    accepted(shown)
    assert not _events(shown, "TOOL_CALL_START")
    [finished] = _events(shown, "RUN_FINISHED")
    assert "pendingToolCallIds" not in (finished.get("outcome") or {})
    assert _said(shown)[-1] == MOVED
    tools = [m for m in shown["messages"] if m["role"] == "tool"]
    assert [m["toolCallId"] for m in tools if m["toolCallId"] == navigate["toolCallId"]]


async def test_copilotkits_own_client_regenerates_by_resending_the_message(
    gateway: RunningGateway,
) -> None:
    """CopilotKit 1.74 bundles @ag-ui/client 0.0.59: its regenerate resends the messages up
    to the user's, and the thread forks, in a stream its zod schemas take unchanged."""
    thread = new_id("t")
    first = base_input(thread, [_user("m1", "hello")])
    accepted(await run_http_agent(gateway, first, old_client=True))
    regenerated = await run_http_agent(
        gateway, base_input(thread, [_user("m1", "hello")]), old_client=True
    )
    accepted(regenerated)
    [fork] = _forks(regenerated)
    assert [b["active"] for b in fork["branches"]] == [False, True]
    assert [m["role"] for m in regenerated["messages"]] == ["user", "assistant"]
