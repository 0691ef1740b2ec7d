"""Tools know who asks: ``gateway.context.caller()`` in a tool of a run started through each
door, in jwt mode (org, roles and the claims GATEWAY_JWT_CLAIMS maps) and in dev mode, and
in the run that resumes an approval; nothing of it is stored with the thread."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool
from google.adk.tools.tool_context import ToolContext
from websockets.asyncio.client import connect

from gateway.context import caller
from gateway.models.script import ScriptLlm
from tests.support.agui import AgUiSocket, new_id, outcome, resume, tool_calls, user_input
from tests.support.auth import JWT, bearer, post_run
from tests.support.servers import RunningGateway, running_gateway
from tests.support.tokens import token

pytestmark = pytest.mark.server

SCRIPT = {
    "rules": [
        {"user": "who am i", "call": {"name": "whoami"}},
        {"user": "pay", "call": {"name": "pay", "args": {"amount": 5}}},
        {"after": "whoami", "say": "You are {user}."},
        {"after": "pay", "say": "Paid by {paidBy}."},
    ]
}


def whoami(tool_context: ToolContext) -> dict[str, Any]:
    """Says who asked for the run."""
    asker = caller()
    if asker is None:
        return {"user": None}
    return {
        "user": asker.user_id,
        "org": asker.org,
        "roles": sorted(asker.roles),
        "claims": dict(asker.claims),
        "thread": tool_context.session.id,
    }


def pay(amount: int, tool_context: ToolContext) -> dict[str, Any]:
    """Pays an amount, once a person approved it."""
    asker = caller()
    return {
        "paidBy": asker.user_id if asker else None,
        "roles": sorted(asker.roles) if asker else [],
    }


def agent(tmp_path: Path) -> LlmAgent:
    script = tmp_path / "who.json"
    script.write_text(json.dumps(SCRIPT))
    return LlmAgent(
        name="who",
        model=ScriptLlm.from_file(script),
        tools=[whoami, FunctionTool(pay, require_confirmation=True)],
    )


@pytest.fixture(scope="module")
async def jwt_gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningGateway]:
    async with running_gateway(
        agent=agent(tmp_path_factory.mktemp("who")),
        jwt_claims="team,tenant.id,missing",
        **JWT,
    ) as running:
        yield running


def result_of(events: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [call] = tool_calls(events, name)
    [found] = [
        e for e in events if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == call["id"]
    ]
    result: dict[str, Any] = json.loads(found["content"])
    return result


def alice_token() -> str:
    return token(roles=["approver", "clerk"], team="payments", tenant={"id": "t-9"})


async def test_a_tool_reads_the_callers_identity_and_mapped_claims_over_ws(
    jwt_gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    url = f"ws://127.0.0.1:{jwt_gateway.port}/ws"
    async with connect(url, additional_headers=bearer(alice_token())) as raw:
        events = await AgUiSocket(raw).run(user_input(thread, "who am i", tools=[]))
    assert result_of(events, "whoami") == {
        "user": "alice",
        "org": "acme",
        "roles": ["approver", "clerk"],
        # Only the claims the operator maps, by the names they map them with.
        "claims": {"team": "payments", "tenant.id": "t-9"},
        "thread": thread,
    }


async def test_a_tool_reads_the_caller_over_sse_too(jwt_gateway: RunningGateway) -> None:
    response, events = await post_run(
        jwt_gateway, user_input(new_id("t"), "who am i", tools=[]), bearer(token(sub="bob"))
    )
    assert response.status_code == 200
    found = result_of(events, "whoami")
    assert (found["user"], found["org"], found["roles"], found["claims"]) == (
        "bob",
        "acme",
        ["approver"],
        {},
    )


async def test_an_approved_tool_reads_who_answered_the_approval(
    jwt_gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    url = f"ws://127.0.0.1:{jwt_gateway.port}/ws"
    async with connect(url, additional_headers=bearer(alice_token())) as raw:
        ws = AgUiSocket(raw)
        asked = outcome(await ws.run(user_input(thread, "pay", tools=[])))
        assert asked["type"] == "interrupt"
        [interrupt] = asked["interrupts"]
    # The answer comes on another connection, with a token naming other roles.
    async with connect(url, additional_headers=bearer(token(roles=["manager"]))) as raw:
        events = await AgUiSocket(raw).run(
            resume(thread, interrupt["id"], payload={"approved": True})
        )
    # The resumed run carries the result of the call its predecessor made.
    results = [json.loads(e["content"]) for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert {"paidBy": "alice", "roles": ["manager"]} in results


async def test_a_token_whose_mapped_claim_has_a_wrong_shape_is_refused(
    jwt_gateway: RunningGateway,
) -> None:
    response, events = await post_run(
        jwt_gateway,
        user_input(new_id("t"), "who am i", tools=[]),
        bearer(token(team={"nested": "object"})),
    )
    assert response.status_code == 401
    assert "'team' claim" in events[0]["message"]


async def test_in_dev_mode_a_tool_reads_the_user_the_client_names(tmp_path: Path) -> None:
    async with running_gateway(agent=agent(tmp_path)) as gateway, gateway.socket("carol") as ws:
        events = await ws.run(user_input(new_id("t"), "who am i", tools=[]))
    found = result_of(events, "whoami")
    assert (found["user"], found["org"], found["roles"], found["claims"]) == ("carol", None, [], {})


async def test_nothing_of_the_caller_is_stored_with_the_thread(
    jwt_gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    response, _ = await post_run(
        jwt_gateway, user_input(thread, "who am i", tools=[]), bearer(alice_token())
    )
    assert response.status_code == 200
    session = await jwt_gateway.app.hub.engine.session("alice", thread)
    assert session.events
    # The tool's own result holds what it chose to return; the run's metadata holds none.
    for event in session.events:
        assert "payments" not in json.dumps(event.custom_metadata or {})
        assert "clerk" not in json.dumps(event.custom_metadata or {})
