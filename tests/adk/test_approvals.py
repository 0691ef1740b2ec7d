"""Approvals for any ADK tool: require_confirmation (bool or callable) and
request_confirmation(hint, payload) pause as AG-UI interrupts; the answer's payload reaches
the tool and a rejection's reason reaches the model."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from gateway.adk.approvals import interrupt_message, response_schema
from gateway.tools.catalog import ToolEntry, from_entries
from tests.support.agui import new_id, outcome, resume, text_of, user_input
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

RAN: list[tuple[str, Any]] = []


async def pay(amount: float, payee: str) -> dict[str, Any]:
    """Pays a payee."""
    RAN.append(("pay", amount))
    return {"status": "paid", "amount": amount, "payee": payee}


async def refund(order: str, tool_context: ToolContext) -> dict[str, Any]:
    """Refunds an order, once a person confirms how much."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(
            hint=f"Refund order {order}? Choose the amount.", payload={"amount": 10.0}
        )
        return {"status": "waiting for a person"}
    if not confirmation.confirmed:
        return {"status": "not refunded", "why": confirmation.payload}
    RAN.append(("refund", confirmation.payload))
    return {"status": "refunded", "amount": confirmation.payload["amount"]}


class EchoLlm(BaseLlm):
    """'pay' calls pay, 'refund' calls refund; after a tool answers, it says the answer."""

    model: str = "echo"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts or []
        answered = [part.function_response for part in last if part.function_response]
        if answered:
            text = json.dumps(answered[-1].response, ensure_ascii=False, sort_keys=True)
            part = types.Part(text=text)
        else:
            words = "".join(part.text or "" for part in last)
            if words.startswith("pay"):
                call = types.FunctionCall(name="pay", args={"amount": 120.0, "payee": "ACME"})
            else:
                call = types.FunctionCall(name="refund", args={"order": "O-7"})
            part = types.Part(function_call=call)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def shop() -> LlmAgent:
    return LlmAgent(
        name="shop",
        model=EchoLlm(),
        instruction="Pay and refund.",
        tools=[
            FunctionTool(pay, require_confirmation=lambda amount, payee: amount > 100),
            refund,
        ],
    )


async def test_require_confirmation_pauses_and_a_rejection_tells_the_model_why() -> None:
    RAN.clear()
    thread = new_id("t")
    async with running_gateway(agent=shop()) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(thread, "pay ACME"))
        [interrupt] = outcome(events)["interrupts"]
        # ADK's hint is for developers; the person reads the call itself.
        assert interrupt["message"] == "Approve pay(amount=120.0, payee=ACME)?"
        assert interrupt["responseSchema"]["required"] == ["approved"]
        assert "payload" not in interrupt["responseSchema"]["properties"]
        answer = {"approved": False, "reason": "ACME was paid yesterday"}
        events = await ws.run(resume(thread, interrupt["id"], payload=answer))
        said = json.loads(text_of(events))
        assert said["status"] == "rejected" and said["reason"] == "ACME was paid yesterday"
        assert RAN == []

        events = await ws.run(user_input(thread, "pay ACME again"))
        [interrupt] = outcome(events)["interrupts"]
        events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
        assert json.loads(text_of(events))["status"] == "paid"
        assert RAN == [("pay", 120.0)]


async def test_request_confirmation_shows_the_hint_and_its_payload_reaches_the_tool() -> None:
    RAN.clear()
    thread = new_id("t")
    async with running_gateway(agent=shop()) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(thread, "refund O-7"))
        [interrupt] = outcome(events)["interrupts"]
        assert interrupt["message"] == "Refund order O-7? Choose the amount."
        shape = interrupt["responseSchema"]["properties"]["payload"]
        assert shape == {"type": "object", "properties": {"amount": {"type": "number"}}}

        wrong = {"approved": True, "payload": {"amount": "all of it"}}
        refused = await ws.run(resume(thread, interrupt["id"], payload=wrong))
        assert refused[-1]["type"] == "RUN_ERROR" and refused[-1]["code"] == "VALIDATION_ERROR"
        assert "payload.amount" in refused[-1]["message"]

        right = {"approved": True, "payload": {"amount": 7.5}}
        events = await ws.run(resume(thread, interrupt["id"], payload=right))
        assert json.loads(text_of(events)) == {"amount": 7.5, "status": "refunded"}
        assert RAN == [("refund", {"amount": 7.5})]


def test_the_message_prefers_the_hint_then_the_catalog_then_the_call() -> None:
    catalog = from_entries(
        [
            ToolEntry(
                "approveThing",
                "Approves a thing.",
                {"type": "object"},
                "client",
                requires_approval=True,
                approval_template="{thing} 승인",
            )
        ]
    )
    assert interrupt_message("approveThing", {"thing": "T1"}, "", catalog) == (
        "T1 승인 승인하시겠습니까?"
    )
    # An argument the sentence does not say is still shown to the person who decides.
    assert interrupt_message("approveThing", {"thing": "T1", "note": "n"}, "", catalog) == (
        "T1 승인 (note=n) 승인하시겠습니까?"
    )
    assert interrupt_message("x", {"a": 1}, "Really?", catalog) == "Really?"
    adk_hint = (
        "Please approve or reject the tool call x() by responding with a FunctionResponse "
        "with an expected ToolConfirmation payload."
    )
    assert interrupt_message("x", {"a": 1}, adk_hint, None) == "Approve x(a=1)?"
    # A tool that asks in its own body keeps its words, even ADK's (its sample's are).
    assert interrupt_message("x", {"a": 1}, adk_hint, None, own_hint=True) == adk_hint
    assert response_schema([1, "a"])["properties"]["payload"] == {
        "type": "array",
        "items": {"type": "number"},
    }
