"""Other people's agents, unchanged: every agent of ``tests/support/dojo``, written the way
the AG-UI dojo and ADK's samples write theirs, works through the gateway the three ways a
page reaches it (@ag-ui/client's HttpAgent, /ws, SSE); what the page shows live is what it
shows after a reload (a reattach's snapshots, ``GET /history``); its runs log no ERROR and
no traceback; and ag-ui-adk, serving the same agent to the same official client, ends
where the gateway does, except where the gateway differs on purpose (said below).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
from ag_ui_adk import AGUIToolset

from tests.support.agui import new_id, tool_answer, tool_calls, user_input
from tests.support.agui_adk import running_agui_adk
from tests.support.budgets import scaled
from tests.support.dojo_runs import (
    WAYS,
    Answer,
    Approve,
    Conversation,
    Page,
    Say,
    Turn,
    as_reloaded,
    assert_quiet,
    converse,
    fresh_agent,
    gist,
    joined_mid_run,
    next_input,
    quiet_log,
    reloaded,
)
from tests.support.official_client import NEEDS_NODE
from tests.support.servers import running_gateway

pytestmark = [NEEDS_NODE, pytest.mark.browser]


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """A tool as a page declares it (CopilotKit's useFrontendTool, the dojo's pages)."""
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {"name": name, "description": description, "parameters": schema}


CHANGE_BACKGROUND = _tool(
    "change_background", "Change the page's background.", {"background": {"type": "string"}}
)
TASK_STEPS = _tool(
    "generate_task_steps",
    "Show the steps of a task for the user to keep or drop.",
    {
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "status": {"type": "string", "enum": ["enabled", "disabled"]},
                },
                "required": ["description", "status"],
            },
        }
    },
)
HAIKU = _tool(
    "generate_haiku",
    "Show a haiku.",
    {
        "japanese": {"type": "array", "items": {"type": "string"}},
        "english": {"type": "array", "items": {"type": "string"}},
    },
)
KEPT_STEPS = [
    {"description": "Dig hole", "status": "enabled"},
    {"description": "Water tree", "status": "enabled"},
]


@dataclasses.dataclass(frozen=True)
class Case:
    """One dojo agent's conversation: ``turns``, the ``tools`` its page declares, and
    ``check``, what the feature must have done, given the conversation of each way."""

    turns: tuple[Turn, ...]
    check: Callable[[Conversation], None]
    tools: tuple[dict[str, Any], ...] = ()
    # The dojo module, when the case is not named after it.
    module: str = ""


def _messages(page: Page, role: str) -> list[dict[str, Any]]:
    return [m for m in page.messages if m["role"] == role]


def _said(page: Page) -> list[str]:
    return [m["content"] for m in _messages(page, "assistant") if m.get("content")]


def _results(page: Page) -> list[Any]:
    return [json.loads(m["content"]) for m in _messages(page, "tool")]


def _events(conversation: Conversation, kind: str) -> list[dict[str, Any]]:
    return [e for run in conversation.runs for e in run if e["type"] == kind]


def _outcome(run: list[dict[str, Any]]) -> dict[str, Any]:
    outcome: dict[str, Any] = run[-1]["outcome"]
    return outcome


def _calls(page: Page) -> list[dict[str, Any]]:
    return [call for m in _messages(page, "assistant") for call in m.get("toolCalls") or ()]


def agentic_chat(c: Conversation) -> None:
    # The page's own tool reached an agent that names no tool, and waited for the page.
    [call] = _calls(c.page)
    assert call["function"]["name"] == "change_background"
    assert _outcome(c.runs[1])["pendingToolCallIds"] == [call["id"]]
    assert _said(c.page) == ["Hello! How can I help you today?", "The background is blue now."]


def human_in_the_loop(c: Conversation) -> None:
    [call] = _calls(c.page)
    assert _outcome(c.runs[0])["pendingToolCallIds"] == [call["id"]]
    assert _said(c.page) == ["Doing Dig hole... then Water tree... Done."]


def backend_tool_rendering(c: Conversation) -> None:
    # The page draws its card from the result, which arrives live, before the words.
    [result] = _events(c, "TOOL_CALL_RESULT")
    weather = {"location": "Seoul", "temperature": 21, "conditions": "sunny", "humidity": 40}
    assert json.loads(result["content"]) == weather
    assert "pendingToolCallIds" not in _outcome(c.runs[0])
    assert _said(c.page) == ["It is sunny in Seoul at 21 degrees."]


def mixed_calls(c: Conversation) -> None:
    # One model turn calls a server tool and the page's: the server's runs at once, the
    # run waits for the page's alone, and the model answers once both are in.
    [weather, paint] = _calls(c.page)
    assert [weather["function"]["name"], paint["function"]["name"]] == [
        "get_weather",
        "change_background",
    ]
    assert _outcome(c.runs[0])["pendingToolCallIds"] == [paint["id"]]
    assert [m.get("toolCallId") for m in _messages(c.page, "tool")] == [weather["id"], paint["id"]]
    assert _said(c.page) == ["Painted blue."]


def tool_based_generative_ui(c: Conversation) -> None:
    [call] = _calls(c.page)
    arguments = json.loads(call["function"]["arguments"])
    assert arguments["english"][0] == "An old silent pond" and len(arguments["japanese"]) == 3
    assert _said(c.page) == ["I wrote you a haiku about a pond."]


def agentic_generative_ui(c: Conversation) -> None:
    # The plan's progress reaches the page step by step, as state deltas, while it runs.
    assert len(_events(c, "STATE_DELTA")) >= 4
    statuses = [step["status"] for step in c.page.state["steps"]]
    assert statuses == ["completed"] * 3
    assert _said(c.page) == ["All done."]


def tool_confirmation(c: Conversation) -> None:
    asked = [_outcome(run) for run in c.runs if _outcome(run)["type"] == "interrupt"]
    assert [o["interrupts"][0]["metadata"]["tool"] for o in asked] == [
        "reimburse",
        "request_time_off",
    ]
    # The payload the tool asked for is part of the answer's schema, and the user's edit of
    # it (2 days, not 3) is what the tool received.
    schema = asked[1]["interrupts"][0]["responseSchema"]
    assert schema["properties"]["payload"]["properties"] == {"approved_days": {"type": "number"}}
    assert _said(c.page) == ["I paid you back 50 dollars.", "You have 2 days off."]


def sub_agents(c: Conversation) -> None:
    # The gateway names each reply's agent, so a page can show who answered.
    named = [
        (m.get("name"), m["content"]) for m in _messages(c.page, "assistant") if m.get("content")
    ]
    assert named == [
        ("greeter", "Hello there, nice to meet you!"),
        ("dice_roller", "You rolled a 4 on a 6-sided die."),
    ]


def callbacks(c: Conversation) -> None:
    # before_tool upper-cased the id, after_tool marked the result, on_tool_error answered
    # for the tool that raised; every callback's state is on the page, temp: state is not.
    assert _results(c.page) == [
        {"order_id": "A-100", "status": "shipped", "checked": True},
        {"order_id": "B-7", "status": "unknown", "checked": True},
    ]
    assert c.page.state == {
        "agent_runs": 2,
        "last_agent": "order_desk",
        "model_calls": 4,
        "model_replies": 4,
        "last_tool": "look_up_order",
        "tool_calls": 2,
        "tool_errors": 1,
    }


def instruction_state(c: Conversation) -> None:
    # The instruction's {user_name} was filled on every turn (ADK refuses a run whose
    # template names a missing key): first from the callback's default, then the tool's.
    assert _said(c.page)[0].startswith("You are stranger.")
    assert _said(c.page)[-1] == "You are Ada. Hi Ada!"
    assert c.page.state == {"user_name": "Ada", "user:greeting": "Hi Ada"}


def sequential_workflow(c: Conversation) -> None:
    named = [(m.get("name"), m["content"]) for m in _messages(c.page, "assistant")]
    assert named == [
        ("writer", "Roses are red."),
        ("reviewer", "Add a second line."),
        ("refiner", "Roses are red, violets are blue."),
    ]
    assert c.page.state == {
        "draft": "Roses are red.",
        "review": "Add a second line.",
        "final": "Roses are red, violets are blue.",
    }


CASES = {
    "agentic_chat": Case(
        (Say("hello"), Say("make the background blue"), Answer("change_background", {"ok": 1})),
        agentic_chat,
        (CHANGE_BACKGROUND,),
    ),
    "human_in_the_loop": Case(
        (
            Say("plan how to plant a tree"),
            Answer("generate_task_steps", {"accepted": True, "steps": KEPT_STEPS}),
        ),
        human_in_the_loop,
        (TASK_STEPS,),
    ),
    "backend_tool_rendering": Case((Say("what is the weather in Seoul"),), backend_tool_rendering),
    "mixed_calls": Case(
        (Say("weather in Seoul and paint it blue"), Answer("change_background", {"ok": True})),
        mixed_calls,
        (CHANGE_BACKGROUND,),
        module="backend_tool_rendering",
    ),
    "tool_based_generative_ui": Case(
        (Say("write me a haiku"), Answer("generate_haiku", {"shown": True})),
        tool_based_generative_ui,
        (HAIKU,),
    ),
    "agentic_generative_ui": Case((Say("plan a trip to Jeju"),), agentic_generative_ui),
    "tool_confirmation": Case(
        (
            Say("reimburse my lunch"),
            Approve(),
            Say("I want 3 days off"),
            Approve(payload={"approved_days": 2}),
        ),
        tool_confirmation,
    ),
    "sub_agents": Case((Say("hello"), Say("roll a die for me")), sub_agents),
    "callbacks": Case((Say("where is order a-100"), Say("and order B-7")), callbacks),
    "instruction_state": Case(
        (Say("who am i"), Say("my name is Ada"), Say("who am i now")), instruction_state
    ),
    "sequential_workflow": Case((Say("write a poem about roses"),), sequential_workflow),
}


@pytest.mark.parametrize("name", CASES)
async def test_a_dojo_agent_reads_the_same_live_and_after_a_reload_every_way_a_page_reaches_it(
    name: str,
) -> None:
    case = CASES[name]
    gists = {}
    with quiet_log() as records:
        async with running_gateway(agent=fresh_agent(case.module or name)) as gateway:
            for way in WAYS:
                # A user of their own each: ``user:`` state is shared by a user's threads.
                user = f"dojo-{way}"
                conversation = await converse(way, gateway, case.turns, case.tools, user=user)
                case.check(conversation)
                reload = await reloaded(gateway, conversation.thread, user=user)
                live = as_reloaded(conversation.page.messages)
                assert live == as_reloaded(reload.snapshot.messages), way
                assert conversation.page.state == reload.snapshot.state, way
                assert reload.history == reload.snapshot.messages, way
                gists[way] = gist(conversation.page)
    assert gists["ws"] == gists["sse"] == gists["client"]
    assert_quiet(records)


@pytest.mark.parametrize(
    ("module", "words", "after"),
    [
        ("sub_agents", "roll a die for me", "TEXT_MESSAGE_CONTENT"),
        ("sequential_workflow", "write a poem about roses", "TEXT_MESSAGE_END"),
        ("agentic_generative_ui", "plan a trip to Jeju", "STATE_DELTA"),
    ],
)
async def test_a_tab_opened_mid_run_ends_where_a_reload_after_the_run_does(
    module: str, words: str, after: str
) -> None:
    """A reload while a sub-agent speaks, between a workflow's agents, or while a plan's
    state moves: the tab catches up and ends with the page a reload shows afterwards."""
    with quiet_log() as records:
        # Slow enough that the tab's reattach lands while the run still streams.
        agent = fresh_agent(module, pace_ms=scaled(0.05) * 1000)
        async with running_gateway(agent=agent) as gateway:
            thread = new_id("t")
            run_input = next_input(thread, Page([], {}), Say(words), (), [])
            tab = await joined_mid_run(gateway, thread, run_input, after)
            reload = await reloaded(gateway, thread)
    assert as_reloaded(tab.messages) == as_reloaded(reload.snapshot.messages)
    assert tab.state == reload.snapshot.state
    assert_quiet(records)


async def test_a_call_the_page_never_answers_is_closed_live_as_it_reads_after_a_reload() -> None:
    """A page that only draws its tool's call (the dojo's haiku card) never answers it; the
    user's next message closes it with a "superseded" result, which the page is sent live
    and finds where a reload puts it, after the call and before the new message."""
    turns = (Say("write me a haiku"), Say("thanks"))
    with quiet_log() as records:
        async with running_gateway(agent=fresh_agent("tool_based_generative_ui")) as gateway:
            for way in WAYS:
                conversation = await converse(way, gateway, turns, (HAIKU,))
                assert [m["role"] for m in conversation.page.messages] == [
                    "user",
                    "assistant",
                    "tool",
                    "user",
                    "assistant",
                ], way
                [closed] = _results(conversation.page)
                assert closed == {"status": "no_result", "reason": "superseded"}
                reload = await reloaded(gateway, conversation.thread)
                live = as_reloaded(conversation.page.messages)
                assert live == as_reloaded(reload.snapshot.messages), way
    assert_quiet(records)


@pytest.mark.parametrize("words", ["The user liked it", '{"shown": true, "liked": "yes"}'])
async def test_a_pages_answer_to_its_tool_reads_as_it_sent_it_in_other_tabs_and_after_a_reload(
    words: str,
) -> None:
    """Words (CopilotKit's ``respond("...")``) or JSON written the page's own way: the model
    reads it as JSON or as text under ``result``, and every page sees what was sent."""
    async with running_gateway(agent=fresh_agent("tool_based_generative_ui")) as gateway:
        thread = new_id("t")
        async with gateway.socket() as page, gateway.socket() as other_tab:
            asked = await page.run(user_input(thread, "write me a haiku", tools=[HAIKU]))
            [call] = tool_calls(asked, "generate_haiku")
            await other_tab.run({"type": "reattach", "threadId": thread})
            answer = tool_answer(thread, [], tools=[HAIKU])
            answer["messages"] = [
                {"id": new_id("tool"), "role": "tool", "toolCallId": call["id"], "content": words}
            ]
            await page.run(answer)
            seen = await other_tab.until_end()
        [result] = [e for e in seen if e["type"] == "TOOL_CALL_RESULT"]
        assert result["content"] == words
        reload = await reloaded(gateway, thread)
    [shown] = [m for m in reload.snapshot.messages if m["role"] == "tool"]
    assert shown == {**answer["messages"][0]}
    assert reload.history == reload.snapshot.messages


async def test_an_agents_own_confirmation_hint_is_what_the_user_is_asked() -> None:
    async with running_gateway(agent=fresh_agent("tool_confirmation")) as gateway:
        conversation = await converse("ws", gateway, (Say("I want 3 days off"),))
    [interrupt] = _outcome(conversation.runs[0])["interrupts"]
    assert interrupt["message"] == (
        "Please approve or reject the tool call request_time_off() by responding with the "
        "number of days you approve."
    )


# --- beside ag-ui-adk -------------------------------------------------------------------------

# Where a dojo frontend sees the same from both, but for what the gateway does on purpose.
ORACLE = [
    pytest.param(module, marks=marks)
    for module, marks in [
        ("agentic_chat", ()),
        ("human_in_the_loop", ()),
        ("backend_tool_rendering", ()),
        ("tool_based_generative_ui", ()),
        # mixed_calls: ag-ui-adk drops the server call of a turn that also calls the page's
        # tool ("Dropping function calls with no matching function response"), and its model
        # answers the weather, not the page.
        ("agentic_generative_ui", ()),
        # tool_confirmation: ag-ui-adk hands ADK's own adk_request_confirmation call to the
        # page as a tool call to answer; the gateway asks through AG-UI 1.0's interrupt.
        ("sub_agents", ()),
        ("callbacks", ()),
        ("instruction_state", ()),
        ("sequential_workflow", ()),
    ]
]
# ag-ui-adk keeps its own bookkeeping in the state it sends the page; the gateway does not.
_AGUI_ADK_STATE = ("_ag_ui_thread_id", "_ag_ui_app_name", "_ag_ui_user_id", "pending_tool_calls")


def _as_the_gateway_says_it(seen: dict[str, Any]) -> dict[str, Any]:
    """ag-ui-adk's page in the gateway's terms, where they differ by design: its state
    without its bookkeeping, and a call with no arguments as ``{}`` (ag-ui-adk streams no
    TOOL_CALL_ARGS for one, so the client's arguments are an empty string, not JSON)."""
    state = {k: v for k, v in seen["state"].items() if k not in _AGUI_ADK_STATE}
    messages = []
    for message in seen["messages"]:
        calls = message.get("toolCalls")
        if calls:
            calls = [(name, {} if arguments == "" else arguments) for name, arguments in calls]
            message = {**message, "toolCalls": calls}
        messages.append(message)
    return {"messages": messages, "state": state}


@pytest.mark.parametrize("module", ORACLE)
async def test_a_dojo_agent_ends_where_ag_ui_adk_ends_for_the_official_client(module: str) -> None:
    case = CASES[module]
    async with running_gateway(agent=fresh_agent(module)) as gateway:
        ours = await converse("client", gateway, case.turns, case.tools)
    agent = fresh_agent(module)
    if case.tools:
        # ag-ui-adk offers a page's tools only to an agent carrying its placeholder, as the
        # dojo's agents do; the gateway offers them to every agent of the App.
        agent.tools.append(AGUIToolset())  # type: ignore[attr-defined]
    # ag-ui-adk keeps one session service per process: an App of its own keeps other
    # tests' ``user:`` state out.
    async with running_agui_adk(agent, app_name=module) as url:
        theirs = await converse("client", url, case.turns, case.tools)
    assert gist(ours.page) == _as_the_gateway_says_it(gist(theirs.page))
