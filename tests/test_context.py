"""Tools know who asks: ``gateway.context.caller()`` in a tool of a run started through each
door, in jwt mode (org, roles and the claims GATEWAY_JWT_CLAIMS maps) and in dev mode, and
in the run that resumes an approval; nothing of it is stored with the thread."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.llm_request import LlmRequest
from google.adk.tools import FunctionTool
from google.adk.tools.tool_context import ToolContext
from websockets.asyncio.client import connect

from gateway.context import caller
from gateway.models.script import ScriptLlm
from tests.support.agui import AgUiSocket, new_id, outcome, resume, tool_result, user_input
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


def agent(tmp_path: Path, seen: list[str | None] | None = None) -> LlmAgent:
    """The agent; ``seen`` collects who its instruction provider and model callback saw."""
    script = tmp_path / "who.json"
    script.write_text(json.dumps(SCRIPT))
    noted = seen if seen is not None else []

    def instruction(context: ReadonlyContext) -> str:
        asker = caller()
        noted.append(f"instruction:{asker.user_id if asker else None}")
        return "Answer briefly."

    def before_model(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        asker = caller()
        noted.append(f"callback:{asker.user_id if asker else None}")

    return LlmAgent(
        name="who",
        model=ScriptLlm.from_file(script),
        instruction=instruction,
        before_model_callback=before_model,
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


@contextlib.asynccontextmanager
async def signed_in(gateway: RunningGateway, credential: str) -> AsyncIterator[AgUiSocket]:
    """A /ws connection with ``credential`` as its bearer header."""
    url = f"ws://127.0.0.1:{gateway.port}/ws"
    async with connect(url, additional_headers=bearer(credential)) as raw:
        yield AgUiSocket(raw)


def alice_token() -> str:
    return token(roles=["approver", "clerk"], team="payments", tenant={"id": "t-9"})


async def test_a_tool_reads_the_callers_identity_and_mapped_claims_over_ws(
    jwt_gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with signed_in(jwt_gateway, alice_token()) as ws:
        events = await ws.run(user_input(thread, "who am i", tools=[]))
    assert tool_result(events, "whoami") == {
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
    found = tool_result(events, "whoami")
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
    async with signed_in(jwt_gateway, alice_token()) as ws:
        asked = outcome(await ws.run(user_input(thread, "pay", tools=[])))
        assert asked["type"] == "interrupt"
        [interrupt] = asked["interrupts"]
    # The answer comes on another connection, with a token naming other roles.
    async with signed_in(jwt_gateway, token(roles=["manager"])) as ws:
        events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
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


async def test_in_dev_mode_tools_and_callbacks_read_the_user_the_client_names(
    tmp_path: Path,
) -> None:
    seen: list[str | None] = []
    async with (
        running_gateway(agent=agent(tmp_path, seen)) as gateway,
        gateway.socket("carol") as ws,
    ):
        events = await ws.run(user_input(new_id("t"), "who am i", tools=[]))
    found = tool_result(events, "whoami")
    assert (found["user"], found["org"], found["roles"], found["claims"]) == ("carol", None, [], {})
    # Both model calls of the turn: the instruction provider and the callback saw her too.
    assert seen == ["instruction:carol", "callback:carol"] * 2


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
