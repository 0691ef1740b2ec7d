"""Real providers' wire formats through the gateway: the demo's story, an approval and a
cancel, with ``GATEWAY_MODEL`` naming an OpenAI-compatible model or a Gemini one, served by
a local provider (``tests.support.providers``) that streams what the real one streams."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import flagship as story
from tests.support.agui import new_id, outcome, resume, text_of, tool_answer, tool_calls, user_input
from tests.support.approvals import APPROVE, ask_approval
from tests.support.budgets import eventually
from tests.support.cancels import cancel_mid_reply_then_go_on
from tests.support.flagship import FLAGSHIP
from tests.support.providers import GeminiApi, Provider
from tests.support.providers.agents import navigator_on
from tests.support.providers.gemini_api import SIGNATURE
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server


async def test_the_flagship_story_through_the_provider(provider: Provider) -> None:
    async with running_gateway(agent=navigator_on(provider)) as gateway:
        await story.flagship_navigated_then_honest_reply(gateway)
    # The model read the browser's own answer, paired with its call.
    answered = _function_responses(provider, provider.generations[-1])
    assert answered == [("navigateToScreen", {"status": "navigated", "message": "ok"})]
    assert len(provider.generations) == 3


async def test_parallel_calls_stream_through_and_pair_by_id(provider: Provider) -> None:
    """OpenAI-style streams interleave the two calls' argument pieces; each call is whole."""
    async with running_gateway(agent=navigator_on(provider)) as gateway:
        await story.parallel_calls_answered_in_reverse_order_pair_by_id(gateway)
    answered = _function_responses(provider, provider.generations[-1])
    assert [status["status"] for _, status in answered] == ["navigated", "denied"]


async def test_an_approval_pauses_and_resumes_through_the_provider(provider: Provider) -> None:
    async with running_gateway(agent=navigator_on(provider)) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        interrupt = await ask_approval(ws, thread)
        assert "R-1042" in interrupt["message"]
        events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
        assert text_of(events) == "R-1042 요청을 승인했습니다."
        assert outcome(events) == {"type": "success"}
        rejected = new_id("t")
        interrupt = await ask_approval(ws, rejected)
        reason = {"approved": False, "reason": "금액 확인 필요"}
        events = await ws.run(resume(rejected, interrupt["id"], payload=reason))
        assert "거절" in text_of(events) and "금액 확인 필요" in text_of(events)
    assert APPROVE in json.dumps(provider.generations, ensure_ascii=False)


async def test_a_cancel_mid_stream_closes_the_providers_stream(provider: Provider) -> None:
    provider.pace = 0.03
    async with running_gateway(agent=navigator_on(provider)) as gateway, gateway.socket() as ws:
        await cancel_mid_reply_then_go_on(ws)
        # The provider hears the close when its server next reads the connection: on a busy
        # machine, after the next turn has been answered.
        await eventually(
            lambda: provider.abandoned == 1,
            5,
            what="the provider's stream was closed, not read to its end",
        )


async def test_token_usage_is_the_providers_own_count(provider: Provider) -> None:
    async with running_gateway(agent=navigator_on(provider)) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "안녕"))
    plan = provider.plan(provider.generations[-1])
    thoughts = plan.thought_tokens
    [usage] = events[-1]["usage"]
    assert usage["inputTokens"] == plan.prompt_tokens
    assert usage["outputTokens"] == plan.output_tokens + thoughts
    assert usage["totalTokens"] == plan.prompt_tokens + plan.output_tokens + thoughts
    assert usage.get("reasoningTokens") == (thoughts or None)


async def test_gemini_thoughts_stream_as_reasoning_and_signatures_go_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = GeminiApi()
    for name, value in provider.env().items():
        monkeypatch.setenv(name, value)
    async with (
        provider.running(),
        running_gateway(agent=navigator_on(provider)) as gateway,
        gateway.socket() as ws,
    ):
        thread = new_id("t")
        first = await ws.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(first, "navigateToScreen")
        await ws.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
        await ws.run(user_input(thread, "고마워"))
    reasoning = "".join(e["delta"] for e in first if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert reasoning.startswith("**Choosing the next step**")
    # Within the turn, each call goes back with the signature it came with.
    within = provider.generations[1]["contents"]
    signed = [p for c in within for p in c["parts"] if "functionCall" in p]
    assert signed[0]["thoughtSignature"] == SIGNATURE
    # A later turn does not replay the earlier turns' unsigned thoughts.
    later = provider.generations[-1]["contents"]
    assert not [p for c in later[:-1] for p in c["parts"] if p.get("thought")]


def _function_responses(provider: Provider, request: dict[str, Any]) -> list[tuple[str, Any]]:
    contents, _ = provider.conversation(request)
    last = contents[-1]
    return [
        (part.function_response.name or "", part.function_response.response)
        for part in last.parts or []
        if part.function_response is not None
    ]
