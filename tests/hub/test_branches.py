"""Regenerate, edit and switch over /ws on the flagship agent, on either store
(docs/branches.md): a regenerate keeps the earlier reply as a sibling, an edit forks and
goes on, a switch shows the other branch to every connection, a reattach keeps the active
one, and the navigation of a branch left and come back to is never done again."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.agui import (
    new_id,
    outcome,
    resume,
    seq_of,
    snapshot_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.approvals import APPROVE
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def gateway(gateway_on_each_store: RunningGateway) -> RunningGateway:
    """Branches hold on either store: SQLite in memory, and a PostgreSQL database."""
    return gateway_on_each_store


def _branch(frame: dict[str, Any], **branch: str) -> dict[str, Any]:
    return {**frame, "forwardedProps": {"branch": branch}}


def _switch(thread: str, run_id: str) -> dict[str, Any]:
    return _branch(user_input(thread, "") | {"messages": []}, switchTo=run_id)


def _forks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    [listing] = [e["value"] for e in events if e.get("name") == "gateway.branches"]
    forks: list[dict[str, Any]] = listing["forks"]
    return forks


def _active(fork: dict[str, Any]) -> str:
    [active] = [b["runId"] for b in fork["branches"] if b["active"]]
    return active


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["content"] for m in messages if m["role"] in ("user", "assistant") and m.get("content")
    ]


async def test_regenerate_keeps_the_reply_as_a_sibling_and_a_switch_shows_it_again(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws, gateway.socket() as other:
        first = user_input(thread, "hello", message_id="m1")
        said = await ws.run(first)
        [original] = {e["messageId"] for e in said if e["type"] == "TEXT_MESSAGE_START"}
        # The thread's other tab follows it, and is shown each move.
        await other.send({"type": "reattach", "threadId": thread})
        await other.until_end()
        again = _branch(user_input(thread, "hello", message_id="m1"), before="m1")
        regenerated = await ws.run(again)
        assert regenerated[0]["type"] == "RUN_STARTED" and "parentRunId" not in regenerated[0]
        [fork] = _forks(regenerated)
        assert fork["messageId"] == "m1" and fork["parentRunId"] is None
        assert [(b["runId"], b["active"]) for b in fork["branches"]] == [
            (first["runId"], False),
            (again["runId"], True),
        ]
        # The asker shows its messages already; no snapshot for it, only the new reply.
        assert not any(e["type"] == "MESSAGES_SNAPSHOT" for e in regenerated)
        [reply] = {e["messageId"] for e in regenerated if e["type"] == "TEXT_MESSAGE_START"}
        assert reply != original and text_of(regenerated)

        # The other tab drops the old version (the path up to the fork: nothing before m1),
        # then sees the new one as the asker does.
        watched = await other.until_end()
        assert [e["type"] for e in watched[:3]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "CUSTOM"]
        assert snapshot_of(watched) == [] and watched[0]["runId"] == again["runId"]
        assert text_of(watched) == text_of(regenerated)
        switched = await ws.run(_switch(thread, first["runId"]))
        assert [e["type"] for e in switched] == [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "CUSTOM",
            "STATE_SNAPSHOT",
            "RUN_FINISHED",
        ]
        assert [m["id"] for m in snapshot_of(switched)] == ["m1", original]
        assert _active(_forks(switched)[0]) == first["runId"]
        seen = await other.until_end()
        assert [m["id"] for m in snapshot_of(seen)] == ["m1", original]

    # A reload keeps the branch the thread shows, not the newest one; /history says so too.
    async with gateway.socket() as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    assert [m["id"] for m in snapshot_of(events)] == ["m1", original]
    assert _active(_forks(events)[0]) == first["runId"]
    async with httpx.AsyncClient(base_url=gateway.http) as client:
        page = await client.get(
            "/history", params={"threadId": thread}, headers={"X-Gateway-User": "demo"}
        )
    assert [m["id"] for m in page.json()["messages"]] == ["m1", original]
    assert page.json()["branches"]["forks"] == _forks(events)


async def test_an_edit_forks_and_going_back_never_navigates_again(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        hello = user_input(thread, "hello", message_id="m1")
        await ws.run(hello)
        asked = user_input(thread, FLAGSHIP, message_id="m2")
        first = await ws.run(asked)
        [navigate] = tool_calls(first, "navigateToScreen")
        moved = await ws.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
        assert text_of(moved) == MOVED

        # A stock client's edit: m2 again, new words, no forwardedProps.
        edit = user_input(thread, "thanks", message_id="m2")
        edited = await ws.run(edit)
        # Only the read finds it a fork. Its RUN_STARTED went out before the read, without
        # parentRunId, unless a cluster's connection waited for the read (docs/first-event.md);
        # the fork it makes names the run it forks from either way.
        assert edited[0].get("parentRunId") in (None, hello["runId"])
        assert not tool_calls(edited) and outcome(edited) == {"type": "success"}
        [fork] = _forks(edited)
        assert fork["parentRunId"] == hello["runId"]
        assert [b["text"] for b in fork["branches"]] == [FLAGSHIP, "thanks"]
        assert _active(fork) == edit["runId"]

        # Back to the navigation's branch: shown, answered, not asked of the browser again.
        back = await ws.run(_switch(thread, asked["runId"]))
        assert not tool_calls(back)
        assert not any(e.get("name") == "gateway.executor" for e in back)
        assert outcome(back) == {"type": "success"}
        messages = snapshot_of(back)
        assert _texts(messages)[-1] == MOVED and FLAGSHIP in _texts(messages)
        shown_calls = [c["id"] for m in messages for c in m.get("toolCalls", [])]
        assert navigate["id"] in shown_calls
        assert any(m["role"] == "tool" and m["toolCallId"] == navigate["id"] for m in messages)

        # And the conversation goes on from there, with the model seeing that branch.
        on = await ws.run(user_input(thread, "thanks", message_id="m3"))
        assert "parentRunId" not in on[0] and outcome(on) == {"type": "success"}
    async with gateway.socket() as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    assert _texts(snapshot_of(events))[-2] == "thanks"
    assert FLAGSHIP in _texts(snapshot_of(events))


async def test_moves_the_thread_cannot_take_are_refused_with_a_sentence(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        await ws.run(user_input(thread, "hello", message_id="m1"))
        unknown = await ws.refused(_branch(user_input(thread, "x"), before="nope"))
        assert (
            unknown["code"] == "VALIDATION_ERROR" and "no such user message" in unknown["message"]
        )
        nobody = await ws.refused(_switch(thread, "run-nobody"))
        assert nobody["code"] == "VALIDATION_ERROR" and "gateway.branches" in nobody["message"]
        both = await ws.refused(_branch(user_input(thread, "x"), before="m1", switchTo="r"))
        assert both["code"] == "VALIDATION_ERROR" and "exactly one" in both["message"]
        hostile = await ws.refused(_branch(user_input(thread, "x"), before="m" * 300))
        assert hostile["code"] == "VALIDATION_ERROR"
        assert "$.forwardedProps.branch.before" in hostile["message"]
        # Another user's thread is neither forked nor switched, nor told it has branches.
        async with gateway.socket(user="eve") as eve:
            denied = await eve.refused(
                _branch(user_input(thread, "x", message_id="m1"), before="m1")
            )
            assert denied["code"] == "ACCESS_DENIED"
            denied = await eve.refused(_switch(thread, "run-x"))
            assert denied["code"] == "ACCESS_DENIED"
        # A thread waiting on the browser is not forked under its open call.
        waiting = await ws.run(user_input(thread, FLAGSHIP, message_id="m2"))
        assert tool_calls(waiting, "navigateToScreen")
        busy = await ws.refused(_branch(user_input(thread, "hi", message_id="m2"), before="m2"))
        assert busy["code"] == "SESSION_BUSY"
        # The thread is as it was: one message each, the call still open.
        events = await ws.run({"type": "reattach", "threadId": thread})
        assert [m["id"] for m in snapshot_of(events) if m["role"] == "user"] == ["m1", "m2"]


async def test_a_client_that_missed_a_switch_is_replayed_it_by_cursor(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        first = user_input(thread, "hello", message_id="m1")
        said = await ws.run(first)
        regenerated = await ws.run(_branch(user_input(thread, "hi", message_id="m1"), before="m1"))
        cursor = seq_of(regenerated[-1])
        assert cursor is not None
        await ws.run(_switch(thread, first["runId"]))
    # A tab that saw the regenerate, then lost its connection while the switch happened.
    async with gateway.socket() as back:
        replayed = await back.run({"type": "reattach", "threadId": thread, "after": cursor})
    assert [e["type"] for e in replayed][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert all((seq_of(e) or 0) > cursor for e in replayed)
    [original] = {e["messageId"] for e in said if e["type"] == "TEXT_MESSAGE_START"}
    assert [m["id"] for m in snapshot_of(replayed)] == ["m1", original]
    assert _active(_forks(replayed)[0]) == first["runId"]


async def test_an_approval_given_on_one_branch_is_asked_again_on_a_new_one(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        asked = await ws.run(user_input(thread, APPROVE, message_id="m1"))
        [interrupt] = outcome(asked)["interrupts"]
        approved = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
        assert outcome(approved) == {"type": "success"}
        # Regenerated: the model asks for the same tool, and the person is asked again.
        again = await ws.run(_branch(user_input(thread, APPROVE, message_id="m1"), before="m1"))
        assert outcome(again)["type"] == "interrupt"
        [asked_again] = outcome(again)["interrupts"]
        assert asked_again["id"] != interrupt["id"]
        assert asked_again["toolCallId"] != interrupt["toolCallId"]
