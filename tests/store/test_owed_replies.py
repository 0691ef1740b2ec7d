"""A reply the model owes, asked for again by the gateway's own run (``cut_off.RESTARTED``),
and that run cut off in turn (a restart, a takeover, its worker's death): the thread goes on
the same way, at most ``FINISHING_ATTEMPTS`` runs in a row, and the model is shown one
``RESTARTED`` turn however many runs asked it (``gateway.store.recovery``)."""

from __future__ import annotations

import logging

import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.genai import types

from gateway import metrics as gateway_metrics
from gateway.store import SessionService
from gateway.store.cut_off import FINISHING_ATTEMPTS, NOTES, RESTARTED, Ending
from gateway.store.messages import Message
from gateway.store.recovery import Afterwards, Finishing, Unfinished
from gateway.translate.history import messages_snapshot
from tests.support.adk_events import call, event, result, user_says
from tests.support.backends import APP, reopened
from tests.support.speakers import Speaker, say

pytestmark = pytest.mark.unit

THREAD = "t"
INTERRUPTED = NOTES[Ending.INTERRUPTED]


def _owed() -> list[Event]:
    """A user's run cut off after its server tool's result: the model owes its reply."""
    return [
        user_says("열어줘", runId="run-1"),
        event("agent", call("c1", "find_screen", query="업무 요청")),
        event("agent", result("c1", "find_screen", screenId="MNU-3120")),
    ]


async def _asked_again(store: SessionService, attempt: int) -> None:
    """The gateway's run that asks again stores its turn, and is cut off before replying."""
    session = await store.get_session(app_name=APP, user_id="u", session_id=THREAD)
    assert session is not None
    turn = user_says(RESTARTED, f"inv-ask-{attempt}", runId=f"finish-{attempt}")
    await store.append_event(session, turn)


def _replied(attempt: int) -> Event:
    """The reply the asking run ``attempt`` stores after its turn."""
    return Event(
        invocation_id=f"inv-ask-{attempt}",
        author="agent",
        content=types.Content(role="model", parts=[types.Part(text="이동했습니다.")]),
        custom_metadata={"agui": {"runId": f"finish-{attempt}"}},
    )


async def _stored_owed(store: SessionService) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id=THREAD)
    for stored in _owed():
        await store.append_event(session, stored)


async def _owed_in(db: str) -> None:
    store = await reopened(db)
    try:
        await _stored_owed(store)
    finally:
        await store.close()


async def _asked_again_then_restarted(db: str, attempt: int) -> Unfinished:
    """An asking run stores its turn, the gateway dies, and a restart closes that run."""
    store = await reopened(db)
    try:
        await _asked_again(store, attempt)
    finally:
        await store.close()
    return await _closed_by_restart(db)


async def _closed_by_restart(db: str) -> Unfinished:
    store = await reopened(db)
    try:
        assert await store.close_interrupted(APP, author="agent") == 1
        [closed] = store.cut_off
        return closed
    finally:
        await store.close()


async def _what_the_next_ask_shows(db: str) -> list[types.Content]:
    """The contents of the model request the next asking run makes."""
    store = await reopened(db)
    model = Speaker(turns=[[say("이동했습니다.")]])
    runner = Runner(app_name=APP, agent=LlmAgent(name="agent", model=model), session_service=store)
    ask = types.Content(role="user", parts=[types.Part(text=RESTARTED)])
    try:
        async for _ in runner.run_async(user_id="u", session_id=THREAD, new_message=ask):
            pass
        return model.requests[-1]
    finally:
        await runner.close()
        await store.close()


def _texts(contents: list[types.Content]) -> list[str]:
    return [part.text.strip() for c in contents for part in c.parts or () if part.text]


async def test_an_asking_run_a_restart_cut_off_asks_again_with_one_turn_for_the_model(
    db: str,
) -> None:
    await _owed_in(db)
    first = await _closed_by_restart(db)
    assert (first.afterwards, first.attempts) == (Afterwards.ASK_AGAIN, 0)

    again = await _asked_again_then_restarted(db, 1)
    assert (again.afterwards, again.attempts) == (Afterwards.ASK_AGAIN, 1)

    # The model is asked as the first time: the result, its cut-off reply, one RESTARTED.
    seen = _texts(await _what_the_next_ask_shows(db))
    assert seen.count(RESTARTED) == 1 and seen[-1] == RESTARTED
    assert seen.count(INTERRUPTED) == 1


async def test_a_restart_before_the_asking_run_stored_its_turn_still_asks_again(
    db: str,
) -> None:
    await _owed_in(db)
    first = await _closed_by_restart(db)
    assert first.afterwards is Afterwards.ASK_AGAIN
    # The gateway died again before the run that asks stored anything: the reply is owed.
    again = await _closed_by_restart(db)
    assert again == first
    # Nothing was added: the model is asked as the first time.
    seen = _texts(await _what_the_next_ask_shows(db))
    assert seen.count(INTERRUPTED) == 1 and seen[-1] == RESTARTED


async def test_an_asking_run_cut_off_then_a_restart_before_the_next_ask_still_asks_again(
    db: str,
) -> None:
    await _owed_in(db)
    await _closed_by_restart(db)
    asked = await _asked_again_then_restarted(db, 1)
    assert (await _closed_by_restart(db)) == asked
    assert (asked.afterwards, asked.attempts) == (Afterwards.ASK_AGAIN, 1)
    seen = _texts(await _what_the_next_ask_shows(db))
    assert seen.count(RESTARTED) == 1 and seen.count(INTERRUPTED) == 1


async def test_the_asking_runs_cut_off_in_a_row_end_with_one_warning_and_a_count(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    await _owed_in(db)
    await _closed_by_restart(db)
    for attempt in range(1, FINISHING_ATTEMPTS):
        assert (await _asked_again_then_restarted(db, attempt)).afterwards is Afterwards.ASK_AGAIN

    store = await reopened(db)
    await _asked_again(store, FINISHING_ATTEMPTS)
    await store.close()
    store = await reopened(db)
    counted = gateway_metrics.for_setting("on")
    store.count_into(counted)
    try:
        with caplog.at_level(logging.WARNING, logger="gateway.store"):
            assert await store.close_interrupted(APP, author="agent") == 1
        [given_up] = store.cut_off
        assert given_up.afterwards is Afterwards.NOTHING
        assert given_up.attempts == FINISHING_ATTEMPTS
        assert sample(counted) == 1
        [line] = [r.getMessage() for r in caplog.records if "not asked for again" in r.message]
        assert THREAD in line and str(FINISHING_ATTEMPTS) in line
        # Nothing is left open: the next restart has nothing to close.
        assert await store.close_interrupted(APP, author="agent") == 0
    finally:
        await store.close()
    # The thread ends as after the first cut: the model's next turn sees that one reply,
    # and a client one cut-off reply, however many runs asked.
    assert len(_empty_replies(await _shown(db))) == 1
    assert _texts(await _what_the_next_ask_shows(db)).count(INTERRUPTED) == 1


async def _shown(db: str) -> list[Message]:
    """The thread as a client is shown it, from the rows (``/history``, a reattach), checked
    against the snapshot the thread's events make."""
    store = await reopened(db)
    try:
        messages, _ = await store.thread_messages(APP, "u", THREAD)
        session = await store.get_session(app_name=APP, user_id="u", session_id=THREAD)
        assert session is not None and messages_snapshot(session.events) == messages
        return messages
    finally:
        await store.close()


def _empty_replies(messages: list[Message]) -> list[Message]:
    """The replies a client would draw with nothing in them: no text, no tool call."""
    return [
        m
        for m in messages
        if m["role"] == "assistant" and not m.get("content") and not m.get("toolCalls")
    ]


async def test_the_asking_runs_cut_off_before_a_word_leave_no_empty_reply_once_it_comes(
    db: str,
) -> None:
    await _owed_in(db)
    await _closed_by_restart(db)
    await _asked_again_then_restarted(db, 1)
    # Two cut-off replies stored (the user's run's, the first ask's), neither said a word:
    # one shows, the sign that the turn's reply has not come.
    [cut] = _empty_replies(await _shown(db))
    assert cut["metadata"] == {"ended": "interrupted"}

    store = await reopened(db)
    try:
        await _asked_again(store, 2)
        session = await store.get_session(app_name=APP, user_id="u", session_id=THREAD)
        assert session is not None
        await store.append_event(session, _replied(2))
    finally:
        await store.close()
    shown = await _shown(db)
    assert _empty_replies(shown) == []
    assert [m.get("content") for m in shown if m["role"] == "assistant"][-1] == "이동했습니다."
    assert [m["role"] for m in shown].count("tool") == 1


def sample(counted: gateway_metrics.Metrics) -> float | None:
    return gateway_metrics.sample(counted, "gateway_owed_replies_given_up_total")


async def test_an_asking_run_its_worker_lost_before_it_stored_anything_is_tried_again(
    db: str,
) -> None:
    store = await reopened(db)
    try:
        await _stored_owed(store)
        first = await store.close_interrupted_thread(APP, THREAD, author="agent")
        assert first is not None and first.attempts == 0
        # Handed to a worker that was dying: nothing of the run reached the store.
        lost = Finishing("finish-1", first)
        again = await store.close_interrupted_thread(APP, THREAD, author="agent", finishing=lost)
        assert again == Unfinished("u", THREAD, Afterwards.ASK_AGAIN, first.invocation_id, 1)
        # One that stored its turn and its reply before its worker died owes nothing more.
        await _asked_again(store, 2)
        session = await store.get_session(app_name=APP, user_id="u", session_id=THREAD)
        assert session is not None
        await store.append_event(session, _replied(2))
        done = Finishing("finish-2", again)
        assert await store.close_interrupted_thread(APP, THREAD, finishing=done) is None
    finally:
        await store.close()


async def test_a_worker_lost_again_and_again_before_storing_is_bounded_too(db: str) -> None:
    store = await reopened(db)
    try:
        await _stored_owed(store)
        going_on = await store.close_interrupted_thread(APP, THREAD, author="agent")
        tries = 0
        while going_on is not None and going_on.afterwards is not Afterwards.NOTHING:
            tries += 1
            lost = Finishing(f"finish-{tries}", going_on)
            going_on = await store.close_interrupted_thread(APP, THREAD, finishing=lost)
        assert tries == FINISHING_ATTEMPTS
    finally:
        await store.close()
