"""A thread's branches in the store, on each backend: a fork keeps the version it leaves
as a sibling, the session (its events and its state) is the active path alone, and a
switch brings a kept version back whole, under it the branches last shown."""

from __future__ import annotations

import time

import pytest
from google.adk.events import Event, EventActions
from google.genai import types

from gateway.context import RUN_METADATA_KEY
from gateway.store import SessionService
from gateway.store.branches import BranchRefused, Fork, Switch

pytestmark = pytest.mark.process

APP, USER, THREAD = "app", "u1", "t1"


def _event(author: str, text: str, run_id: str, **agui: object) -> Event:
    return Event(
        invocation_id=f"inv-{run_id}",
        author=author,
        content=types.Content(
            role="user" if author == "user" else "model", parts=[types.Part(text=text)]
        ),
        custom_metadata={RUN_METADATA_KEY: {"runId": run_id, **agui}},
    )


async def _turn(store: SessionService, run_id: str, message_id: str, text: str) -> None:
    """A user's message and the agent's reply, which writes what it answered to the state."""
    session = await store.get_session(app_name=APP, user_id=USER, session_id=THREAD)
    assert session is not None
    await store.append_event(session, _event("user", text, run_id, messageId=message_id))
    reply = _event("agent", f"reply to {text}", run_id)
    reply.actions = EventActions(state_delta={"answered": text, f"seen-{message_id}": True})
    await store.append_event(session, reply)


async def _path(store: SessionService) -> tuple[list[str], dict[str, object]]:
    session = await store.get_session(app_name=APP, user_id=USER, session_id=THREAD)
    assert session is not None
    texts = [e.content.parts[0].text or "" for e in session.events if e.content and e.content.parts]
    return texts, dict(session.state)


def _fork(
    before: str, run_id: str, message_id: str, text: str, most: int = 0, implicit: bool = False
) -> Fork:
    return Fork(APP, USER, THREAD, before, run_id, message_id, text, time.time(), most, implicit)


async def test_a_fork_keeps_the_left_version_and_a_switch_brings_it_back(
    store: SessionService,
) -> None:
    await store.create_session(app_name=APP, user_id=USER, session_id=THREAD, state={"kept": 1})
    await _turn(store, "r1", "m1", "one")
    await _turn(store, "r2", "m2", "two")

    # Edit m2: the thread forks before its turn, and the new version continues from r1.
    moved = await store.move_branch(_fork("m2", "r3", "m2", "TWO", most=5))
    assert moved.changed and moved.parent_run_id == "r1"
    await _turn(store, "r3", "m2", "TWO")
    texts, state = await _path(store)
    assert texts == ["one", "reply to one", "TWO", "reply to TWO"]
    assert state == {"kept": 1, "answered": "TWO", "seen-m1": True, "seen-m2": True}
    (fork,) = moved.tree.listing()["forks"]
    assert fork["parentRunId"] == "r1" and fork["messageId"] == "m2"
    assert [(b["runId"], b["text"], b["active"]) for b in fork["branches"]] == [
        ("r2", "two", False),
        ("r3", "TWO", True),
    ]

    # A fork before the first turn splits the trunk; regenerating there twice adds siblings.
    first = await store.move_branch(_fork("m1", "r4", "m1", "one"))
    assert first.parent_run_id is None
    assert (await _path(store))[0] == []
    await _turn(store, "r4", "m1", "one")
    texts, state = await _path(store)
    assert texts == ["one", "reply to one"] and state == {
        "kept": 1,
        "answered": "one",
        "seen-m1": True,
    }

    # Back to the first version: its whole path comes back, the edit of m2 active under it.
    back = await store.move_branch(Switch(APP, USER, THREAD, "r1", time.time()))
    texts, state = await _path(store)
    assert texts == ["one", "reply to one", "TWO", "reply to TWO"]
    assert state["answered"] == "TWO"
    forks = back.tree.listing()["forks"]
    assert [[b["runId"] for b in f["branches"] if b["active"]] for f in forks] == [["r1"], ["r3"]]

    # And the trunk's original m2: one more switch, at the inner fork.
    await store.move_branch(Switch(APP, USER, THREAD, "r2", time.time()))
    texts, state = await _path(store)
    assert texts == ["one", "reply to one", "two", "reply to two"]
    assert state["answered"] == "two"

    # New events after a switch go on the active branch, after every kept seq.
    await _turn(store, "r5", "m5", "five")
    await store.move_branch(Switch(APP, USER, THREAD, "r4", time.time()))
    assert (await _path(store))[0] == ["one", "reply to one"]
    await store.move_branch(Switch(APP, USER, THREAD, "r2", time.time()))
    assert (await _path(store))[0][-2:] == ["five", "reply to five"]

    # Straight into a fork inside a version not shown: its path up to there comes along.
    await store.move_branch(Switch(APP, USER, THREAD, "r4", time.time()))
    deep = await store.move_branch(Switch(APP, USER, THREAD, "r3", time.time()))
    texts, state = await _path(store)
    assert texts == ["one", "reply to one", "TWO", "reply to TWO"]
    assert state == {"kept": 1, "answered": "TWO", "seen-m1": True, "seen-m2": True}
    forks = deep.tree.listing()["forks"]
    assert [[b["runId"] for b in f["branches"]] for f in forks] == [["r1", "r4"], ["r2", "r3"]]


async def test_a_move_the_thread_cannot_take_is_refused_and_changes_nothing(
    store: SessionService,
) -> None:
    await store.create_session(app_name=APP, user_id=USER, session_id=THREAD)
    await _turn(store, "r1", "m1", "one")
    with pytest.raises(BranchRefused) as refused:
        await store.move_branch(_fork("nope", "r2", "m2", "two", most=5))
    assert refused.value.reason == "no_message"
    # Asked by a stock client resending a message: an unknown id is just a new message.
    assert not (await store.move_branch(_fork("nope", "r2", "m2", "x", implicit=True))).changed
    with pytest.raises(BranchRefused) as refused:
        await store.move_branch(Switch(APP, USER, THREAD, "r9", time.time()))
    assert refused.value.reason == "no_branch"
    await store.move_branch(_fork("m1", "r2", "m1", "again", most=1))
    await _turn(store, "r2", "m1", "again")
    with pytest.raises(BranchRefused) as refused:
        await store.move_branch(_fork("m1", "r3", "m1", "again", most=1))
    assert (refused.value.reason, refused.value.limit) == ("too_many", 1)
    assert (await _path(store))[0] == ["again", "reply to again"]
