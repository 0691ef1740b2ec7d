"""Multi-agent trees say which agent is speaking: every sub-agent run is announced with
SUBAGENT_STARTED/FINISHED, what it says carries its subagentRunId and its name, snapshots
repeat both, and parallel agents never share a message id."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents import LlmAgent, LoopAgent, SequentialAgent
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.function_tool import FunctionTool

from tests.support.agui import StreamChecker, new_id, outcome, resume, user_input
from tests.support.servers import post_run, running_gateway
from tests.support.speakers import Speaker, call, of_type, openers, say, texts_by_message
from tests.support.subagents import parallel_tree, speaker, workflow_agents

pytestmark = pytest.mark.server


def started(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """SUBAGENT_STARTED by subagentRunId."""
    return {e["subagentRunId"]: e for e in of_type(events, "SUBAGENT_STARTED")}


def speakers_of(events: list[dict[str, Any]]) -> list[tuple[str | None, str | None, str]]:
    """(name, subagent name, text) of each streamed message, in order."""
    names = {run_id: e["name"] for run_id, e in started(events).items()}
    texts = texts_by_message(events)
    return [
        (e.get("name"), names.get(e.get("subagentRunId", "")), texts[message_id])
        for message_id, e in openers(events).items()
    ]


async def test_sequential_children_each_speak_as_an_announced_sub_agent() -> None:
    with workflow_agents():
        tree = SequentialAgent(
            name="pipeline",
            sub_agents=[
                speaker("drafter", [say("first draft")], description="Writes a draft."),
                speaker("editor", [say("edited draft")]),
            ],
        )
    thread = new_id("t")
    async with running_gateway(agent=tree) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(thread, "write", tools=[]))
        assert speakers_of(events) == [
            ("drafter", "drafter", "first draft"),
            ("editor", "editor", "edited draft"),
        ]
        kinds = [e["type"] for e in events if e["type"].startswith("SUBAGENT_")]
        assert kinds == ["SUBAGENT_STARTED", "SUBAGENT_FINISHED"] * 2
        drafter = next(e for e in started(events).values() if e["name"] == "drafter")
        assert drafter["description"] == "Writes a draft."
        assert "parentSubagentRunId" not in drafter  # the root's own child
        assert outcome(events) == {"type": "success"}

        # A reattach shows the same speakers under the same ids as the live stream.
        await ws.send({"type": "reattach", "threadId": thread})
        snapshot = (await ws.until_end())[1]
        live = {m_id: e for m_id, e in openers(events).items()}
        replies = [m for m in snapshot["messages"] if m["role"] == "assistant"]
        assert [(m["id"], m["name"], m.get("subagentRunId")) for m in replies] == [
            (m_id, e["name"], e["subagentRunId"]) for m_id, e in live.items()
        ]


async def test_a_transfer_hands_the_conversation_to_the_sub_agent() -> None:
    helper = speaker("billing", [say("billing here")], [say("still billing")])
    root = LlmAgent(
        name="front_desk",
        model=Speaker(turns=[[call("transfer_to_agent", agent_name="billing")]]),
        sub_agents=[helper],
    )
    thread = new_id("t")
    async with running_gateway(agent=root) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(thread, "my invoice", tools=[]))
        [transfer] = of_type(events, "TOOL_CALL_START")
        assert transfer["toolCallName"] == "transfer_to_agent"
        assert "subagentRunId" not in transfer  # the root itself hands over
        assert speakers_of(events) == [("billing", "billing", "billing here")]
        # The next turn goes straight to the agent the conversation was handed to.
        later = await ws.run(user_input(thread, "and another", tools=[]))
        assert speakers_of(later) == [("billing", "billing", "still billing")]
        assert set(started(later)).isdisjoint(started(events))


async def test_each_loop_iteration_is_a_sub_agent_run_of_its_own() -> None:
    with workflow_agents():
        tree = LoopAgent(
            name="refine", max_iterations=3, sub_agents=[speaker("step", [say("again")])]
        )
    async with running_gateway(agent=tree) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "go", tools=[]))
    runs = started(events)
    assert [e["name"] for e in runs.values()] == ["step"] * 3
    assert [speaker for _, speaker, _ in speakers_of(events)] == ["step"] * 3
    assert {e.get("subagentRunId") for e in openers(events).values()} == set(runs)


def assert_parallel_speakers(events: list[dict[str, Any]]) -> None:
    runs = started(events)
    by_name = {e["name"]: run_id for run_id, e in runs.items()}
    # Nested: the children's runs belong to the ParallelAgent's run.
    assert runs[by_name["left"]]["parentSubagentRunId"] == by_name["fan_out"]
    assert runs[by_name["right"]]["parentSubagentRunId"] == by_name["fan_out"]
    messages = openers(events)
    texts = texts_by_message(events)
    assert len(messages) == 3
    said = {e["name"]: (texts[m_id], e["subagentRunId"]) for m_id, e in messages.items()}
    assert said == {
        "left": ("one two three four five six", by_name["left"]),
        "right": ("alpha beta gamma delta epsilon", by_name["right"]),
        "summary": ("both done", by_name["summary"]),
    }
    # They streamed at once: a message was reopened after the other one's chunk.
    assert len(of_type(events, "TEXT_MESSAGE_START")) > 3


async def test_parallel_agents_stream_at_once_and_never_share_a_message_id() -> None:
    async with running_gateway(agent=parallel_tree()) as gateway:
        async with gateway.socket() as ws:
            assert_parallel_speakers(await ws.run(user_input(new_id("t"), "go", tools=[])))
        status, _, events, _ = await post_run(gateway, user_input(new_id("t"), "go", tools=[]))
        assert status == 200
        assert_parallel_speakers(events)


async def test_a_tab_that_joins_mid_run_sees_the_sub_agents_and_their_text_so_far() -> None:
    thread = new_id("t")
    async with (
        running_gateway(agent=parallel_tree()) as gateway,
        gateway.socket() as ws,
        gateway.socket() as late,
    ):
        await ws.send(user_input(thread, "go", tools=[]))
        while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
            pass
        await late.send({"type": "reattach", "threadId": thread})
        joined = await late.until_end()  # its own StreamChecker checks the replay
        await ws.until_end()
    # It ends up with every message whole, however far the run was when it joined.
    texts = texts_by_message(joined)
    assert sorted(texts.values()) == sorted(
        ["one two three four five six", "alpha beta gamma delta epsilon", "both done"]
    )


async def test_an_agent_tool_call_announces_the_agent_it_runs() -> None:
    expert = speaker("tax_expert", [say("VAT is 10%")], description="Answers tax questions.")
    root = LlmAgent(
        name="assistant",
        model=Speaker(turns=[[call("tax_expert", request="VAT?")], [say("It is 10%.")]]),
        tools=[AgentTool(expert)],
    )
    async with running_gateway(agent=root) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "VAT?", tools=[]))
    [start] = of_type(events, "TOOL_CALL_START")
    [announced] = of_type(events, "SUBAGENT_STARTED")
    assert announced["name"] == "tax_expert"
    assert announced["description"] == "Answers tax questions."
    assert announced["parentToolCallId"] == start["toolCallId"]
    assert announced["parentMessageId"] == start["parentMessageId"]
    kinds = [e["type"] for e in events]
    assert kinds.index("SUBAGENT_FINISHED") < kinds.index("TOOL_CALL_RESULT")
    [result] = of_type(events, "TOOL_CALL_RESULT")
    assert result["content"] == '{"result":"VAT is 10%"}'


async def test_a_cancel_closes_the_sub_agents_it_cut_off() -> None:
    slow = speaker("slow", [say(" ".join(["word"] * 200))], pace=0.02)
    with workflow_agents():
        tree = SequentialAgent(name="pipeline", sub_agents=[slow])
    thread = new_id("t")
    async with running_gateway(agent=tree) as gateway, gateway.socket() as ws:
        await ws.send(user_input(thread, "go", tools=[]))
        while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
            pass
        await ws.send({"type": "cancel", "threadId": thread})
        events = await ws.until_end()
    [error] = of_type(events, "SUBAGENT_ERROR")
    assert error["code"] == "CANCELLED"
    assert outcome(events)["type"] == "cancelled"


def test_the_stream_checker_refuses_an_unannounced_sub_agent() -> None:
    checker = StreamChecker()
    checker.feed({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": "1.0"})
    try:
        checker.feed(
            {
                "type": "TEXT_MESSAGE_START",
                "messageId": "m",
                "role": "assistant",
                "subagentRunId": "x",
            }
        )
    except AssertionError:
        return
    raise AssertionError("an unannounced subagentRunId passed")


def pay(amount: float) -> dict[str, Any]:
    """Pays an amount."""
    return {"paid": amount}


async def test_an_approval_asked_by_a_sub_agent_suspends_it_and_names_it() -> None:
    cashier = LlmAgent(
        name="cashier",
        model=Speaker(turns=[[call("pay", amount=5.0)], [say("paid 5")]]),
        tools=[FunctionTool(pay, require_confirmation=True)],
    )
    with workflow_agents():
        tree = SequentialAgent(name="shop", sub_agents=[cashier])
    thread = new_id("t")
    async with running_gateway(agent=tree) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(thread, "pay", tools=[]))
        [run_id] = started(events)
        [interrupt] = outcome(events)["interrupts"]
        assert interrupt["subagentRunId"] == run_id
        [finished] = of_type(events, "SUBAGENT_FINISHED")
        assert finished["outcome"] == {"type": "suspended", "interruptIds": [interrupt["id"]]}
        # Resumed, the cashier goes on in a run of its own and finishes.
        later = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
        assert speakers_of(later) == [("cashier", "cashier", "paid 5")]
        assert outcome(later) == {"type": "success"}
