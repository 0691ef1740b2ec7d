"""Two-way state over the real server: what a client sends in ``RunAgentInput.state``
reaches the agent, opens the run's STATE_SNAPSHOT, is stored for a reload and shown to the
thread's other tabs; an echo writes nothing; ``{}`` erases nothing; scoped keys, odd shapes
and sizes are ignored or refused with a code and a sentence (``gateway.hub.client_state``).

The agent is the recipe helper of ``tests/support/dojo/shared_state.py``, which shows its
model the recipe in a ``before_model_callback`` and renames it with a tool."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from google.adk.agents import LlmAgent

from tests.support.agui import new_id, tool_answer, tool_calls, user_input
from tests.support.dojo.shared_state import STARTER_RECIPE, root_agent
from tests.support.instructions import InstructedScript, watched
from tests.support.servers import RunningGateway, post_run, running_gateway
from tests.support.speakers import Speaker, call, of_type, say

pytestmark = pytest.mark.server

EDITED = copy.deepcopy(STARTER_RECIPE) | {"servings": 4}
EDITED["ingredients"][1] = {"name": "oat milk", "amount": "1 cup"}


def shared(thread: str, text: str, state: Any) -> dict[str, Any]:
    return {**user_input(thread, text, tools=[]), "state": state}


def snapshots(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event["snapshot"] for event in of_type(events, "STATE_SNAPSHOT")]


def notices(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["value"] for e in of_type(events, "CUSTOM") if e["name"] == "gateway.notice"]


async def stored_state(gateway: RunningGateway, thread: str) -> dict[str, Any]:
    async with gateway.socket() as ws:
        await ws.send({"type": "reattach", "threadId": thread})
        [snapshot] = snapshots(await ws.until_end())
    return snapshot


async def state_writes(gateway: RunningGateway, thread: str) -> list[dict[str, Any]]:
    """The state deltas the thread's stored user events carry: the clients' writes."""
    session = await gateway.app.hub.engine.session("demo", thread)  # type: ignore[union-attr]
    assert session is not None
    return [
        dict(event.actions.state_delta)
        for event in session.events
        if event.author == "user" and event.actions.state_delta
    ]


def recipe_helper() -> tuple[LlmAgent, InstructedScript]:
    return watched(root_agent)


async def test_the_model_sees_the_users_edit_and_the_run_opens_with_it_over_ws() -> None:
    agent, model = recipe_helper()
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway:
        async with gateway.socket() as ws:
            first = await ws.run(shared(thread, "hello", None))
            assert snapshots(first) == []  # it shared no state
            # The agent's own start: the page learns the starter recipe as a delta.
            [delta] = of_type(first, "STATE_DELTA")
            assert delta["delta"] == [{"op": "add", "path": "/recipe", "value": STARTER_RECIPE}]
            assert "oat milk" not in model.instructions[-1]
            events = await ws.run(shared(thread, "what would you change?", {"recipe": EDITED}))
        assert [e["type"] for e in events[:2]] == ["RUN_STARTED", "STATE_SNAPSHOT"]
        assert snapshots(events) == [{"recipe": EDITED}]
        assert "oat milk" in model.instructions[-1] and '"servings": 4' in model.instructions[-1]
        # A reload reads it back from the store.
        assert await stored_state(gateway, thread) == {"recipe": EDITED}


async def test_the_agent_changes_the_users_edit_not_its_own_default_over_sse() -> None:
    agent, _ = recipe_helper()
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway:
        status, _, events, _ = await post_run(
            gateway, shared(thread, "call it Sunday pancakes", {"recipe": EDITED})
        )
        assert status == 200
        assert snapshots(events) == [{"recipe": EDITED}]
        # The tool read the state with the edit in, and renamed that.
        [delta] = of_type(events, "STATE_DELTA")
        renamed = EDITED | {"title": "Sunday pancakes"}
        assert delta["delta"] == [{"op": "add", "path": "/recipe", "value": renamed}]
        assert await stored_state(gateway, thread) == {"recipe": renamed}


async def test_another_tab_of_the_thread_sees_the_edit_as_the_run_starts() -> None:
    agent, _ = recipe_helper()
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway:
        async with gateway.socket() as editor, gateway.socket() as other:
            await editor.run(shared(thread, "hello", None))
            await other.send({"type": "reattach", "threadId": thread})
            [before] = snapshots(await other.until_end())
            assert before == {"recipe": STARTER_RECIPE}
            await editor.run(shared(thread, "what would you change?", {"recipe": EDITED}))
            seen = await other.until_end()
        assert snapshots(seen) == [{"recipe": EDITED}]


async def test_a_client_that_sends_back_what_it_was_sent_writes_nothing() -> None:
    agent, _ = recipe_helper()
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        await ws.run(shared(thread, "hello", None))
        held = await stored_state(gateway, thread)
        for _ in range(3):
            events = await ws.run(shared(thread, "and now?", held))
            assert snapshots(events) == [held] and notices(events) == []
        assert await state_writes(gateway, thread) == []
        await ws.run(shared(thread, "and now?", {**held, "servings": 3}))
        assert await state_writes(gateway, thread) == [{"servings": 3}]


async def test_an_empty_state_erases_nothing_and_null_is_a_value() -> None:
    agent, _ = recipe_helper()
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        await ws.run(shared(thread, "hello", {"recipe": EDITED, "note": "for two"}))
        events = await ws.run(shared(thread, "again", {}))  # CopilotKit's before it has any
        assert snapshots(events) == []
        assert await stored_state(gateway, thread) == {"recipe": EDITED, "note": "for two"}
        # A key the client leaves out is kept; one it sends as null holds null.
        await ws.run(shared(thread, "again", {"note": None}))
        assert await stored_state(gateway, thread) == {"recipe": EDITED, "note": None}


async def test_scoped_keys_keep_the_threads_values_and_the_client_is_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent, _ = recipe_helper()
    thread = new_id("t")
    sent = {"recipe": EDITED, "user:plan": "pro", "app:banner": "hi", "temp:secret": 1}
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        with caplog.at_level(logging.INFO, logger="gateway.hub.planning"):
            events = await ws.run(shared(thread, "hello", sent))
        assert events[-1]["type"] == "RUN_FINISHED"
        [told] = notices(events)
        assert told["code"] == "STATE_KEYS_IGNORED"
        assert "'user:plan', 'app:banner', 'temp:secret'" in told["message"]
        assert snapshots(events) == [{"recipe": EDITED}]
        assert await stored_state(gateway, thread) == {"recipe": EDITED}
        assert "writes the client's state keys recipe (ignored: user:plan" in caplog.text


async def test_an_operator_may_let_clients_write_their_user_state() -> None:
    agent, _ = recipe_helper()
    thread = new_id("t")
    async with (
        running_gateway(agent=agent, client_state="session,user") as gateway,
        gateway.socket() as ws,
    ):
        events = await ws.run(shared(thread, "hello", {"user:units": "metric"}))
        assert notices(events) == []
        assert (await stored_state(gateway, thread))["user:units"] == "metric"
        # Another thread of the same user sees it: user: state is the user's.
        assert (await stored_state_after_run(gateway, ws))["user:units"] == "metric"


async def stored_state_after_run(gateway: RunningGateway, ws: Any) -> dict[str, Any]:
    other = new_id("t")
    await ws.run(shared(other, "hello", None))
    return await stored_state(gateway, other)


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("state", "says"),
    [
        ([1, 2], "RunAgentInput.state must be a JSON object (or null), not an array"),
        ({"notes": "x" * 3000}, "at most 2048 (GATEWAY_MAX_STATE_BYTES)"),
        ({f"k{i}": i for i in range(1001)}, "it may hold at most 1000"),
        ({"deep": nested(40)}, "is nested more than 32 levels deep"),
    ],
    ids=["array", "bytes", "keys", "depth"],
)
async def test_a_state_past_the_rules_is_refused_and_stores_nothing(state: Any, says: str) -> None:
    agent, _ = recipe_helper()
    thread = new_id("t")
    async with (
        running_gateway(agent=agent, max_state_bytes=2048) as gateway,
        gateway.socket() as ws,
    ):
        await ws.run(shared(thread, "hello", {"recipe": EDITED}))
        error = await ws.refused(shared(thread, "again", state))
        assert error["code"] == "VALIDATION_ERROR" and says in error["message"]
        assert await stored_state(gateway, thread) == {"recipe": EDITED}
        status, _, events, _ = await post_run(gateway, shared(thread, "again", state))
        assert status == 400 and says in events[-1]["message"]


async def test_a_stale_copy_sent_later_wins_over_what_a_run_wrote() -> None:
    """Last writer wins, key by key: an edit is applied as its own run starts."""
    agent, _ = recipe_helper()
    thread = new_id("t")
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        await ws.run(shared(thread, "call it Sunday pancakes", {"recipe": EDITED}))
        renamed = EDITED | {"title": "Sunday pancakes"}
        assert await stored_state(gateway, thread) == {"recipe": renamed}
        # A tab that never saw the rename sends its copy with the next message.
        events = await ws.run(shared(thread, "hello", {"recipe": EDITED, "servings": 4}))
        assert snapshots(events) == [{"recipe": EDITED, "servings": 4}]
        assert await stored_state(gateway, thread) == {"recipe": EDITED, "servings": 4}


def two_screens() -> LlmAgent:
    """An agent that opens two screens at once, then says so."""
    model = Speaker(
        turns=[
            [
                call("navigateToScreen", screenId="MNU-1"),
                call("navigateToScreen", screenId="MNU-2"),
            ],
            [say("both open")],
        ]
    )
    return LlmAgent(name="opener", model=model)


async def test_an_edit_sent_with_some_of_the_answers_is_stored_though_nothing_runs() -> None:
    thread = new_id("t")
    async with running_gateway(agent=two_screens()) as gateway, gateway.socket() as ws:
        first = await ws.run({**user_input(thread, "open both"), "state": {"tab": "a"}})
        calls = [c["id"] for c in tool_calls(first)]
        assert len(calls) == 2
        answer = tool_answer(thread, [(calls[0], {"status": "navigated"})])
        waiting = await ws.run({**answer, "state": {"tab": "b"}})
        assert waiting[-1]["outcome"]["pendingToolCallIds"] == [calls[1]]
        assert snapshots(waiting) == [{"tab": "b"}]
        assert await stored_state(gateway, thread) == {"tab": "b"}
        answer = tool_answer(thread, [(calls[1], {"status": "navigated"})])
        done = await ws.run({**answer, "state": {"tab": "b"}})
        assert "both open" in "".join(
            e.get("delta", "") for e in of_type(done, "TEXT_MESSAGE_CONTENT")
        )
        assert await state_writes(gateway, thread) == [{"tab": "a"}, {"tab": "b"}]


async def test_a_restart_reads_the_users_edit_back_on_either_store(db: str) -> None:
    thread = new_id("t")
    for attempt in ("before", "after"):
        agent, model = recipe_helper()
        async with running_gateway(agent=agent, db=db) as gateway, gateway.socket() as ws:
            if attempt == "before":
                await ws.run(shared(thread, "hello", {"recipe": EDITED}))
                continue
            assert await stored_state(gateway, thread) == {"recipe": EDITED}
            await ws.run(shared(thread, "what would you change?", None))
            assert "oat milk" in model.instructions[-1]
