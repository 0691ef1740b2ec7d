"""What a restart does with a run a crash cut off around a person's answer, decided from the
stored events alone (``gateway.store.recovery.closing``); the end-to-end sweep with real
processes is tests/hub/test_approval_crashes.py."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.events import Event
from google.adk.sessions import Session

from gateway.store.cut_off import (
    RESTARTED,
    Ending,
    ending_of,
    finishing_attempts,
)
from gateway.store.recovery import (
    STARTED_KEY,
    UNKNOWN_RESULT,
    Afterwards,
    OpenRun,
    StreamedMessage,
    closing,
)
from tests.support.adk_events import (
    agent_says,
    call,
    cut_off_before_a_word,
    event,
    result,
    user_says,
)

pytestmark = pytest.mark.unit

CONFIRM = "adk_request_confirmation"


def _asked() -> list[Event]:
    """A refund asked for, and ADK asking a person to confirm it (call c1, confirmation k1)."""
    original = {"id": "c1", "name": "refund", "args": {"order": "O-7"}}
    return [
        user_says("refund O-7"),
        event("agent", call("c1", "refund", order="O-7")),
        event("agent", result("c1", "refund", error="This tool call requires confirmation.")),
        event("agent", call("k1", CONFIRM, originalFunctionCall=original, toolConfirmation={})),
    ]


def _answered(confirmed: bool) -> Event:
    return event("user", result("k1", CONFIRM, confirmed=confirmed))


def _started() -> Event:
    return Event(invocation_id="inv", author="agent", custom_metadata={"agui": {STARTED_KEY: "c1"}})


def _close(events: list[Event], **run: Any) -> tuple[list[Event], Afterwards]:
    session = Session(id="t", app_name="app", user_id="u", events=events)
    return closing(
        session, OpenRun("u", "t", "inv", run.get("dangling", []), run.get("streamed")), "agent"
    )


@pytest.mark.parametrize("confirmed", [True, False])
def test_an_answer_not_acted_on_is_resumed_with_nothing_closed(confirmed: bool) -> None:
    assert _close([*_asked(), _answered(confirmed)]) == ([], Afterwards.RESUME)


def test_a_resumed_answer_keeps_what_a_client_was_sent() -> None:
    streamed = StreamedMessage("m9", "agent", "Refunding")
    events, afterwards = _close([*_asked(), _answered(True)], streamed=streamed)
    assert afterwards is Afterwards.RESUME
    assert [e.id for e in events] == ["m9"]


def test_an_approved_call_that_started_is_never_run_again() -> None:
    events, afterwards = _close([*_asked(), _answered(True), _started()])
    assert afterwards is Afterwards.ASK_AGAIN
    [answer, reply] = events
    [response] = answer.get_function_responses()
    assert (response.id, response.name, response.response) == ("c1", "refund", UNKNOWN_RESULT)
    # Owed: the run stays open until the model is asked again (``cut_off.OWED_KEY``).
    assert reply.custom_metadata == {"agui": {"ended": "interrupted", "owed": True}}


def test_a_call_whose_result_is_stored_asks_the_model_for_its_reply() -> None:
    done = event("agent", result("c1", "refund", status="refunded"))
    events, afterwards = _close([*_asked(), _answered(True), _started(), done])
    assert afterwards is Afterwards.ASK_AGAIN
    assert [e.get_function_responses() for e in events] == [[]]  # only the cut-off reply


def test_a_reply_already_given_leaves_nothing_to_do() -> None:
    done = event("agent", result("c1", "refund", status="refunded"))
    stored = [*_asked(), _answered(True), _started(), done, agent_says("Refunded.")]
    assert _close(stored)[1] is Afterwards.NOTHING


def test_an_approval_acted_on_and_replied_to_is_done() -> None:
    done = event("agent", result("c1", "refund", status="refunded"))
    stored = [*_asked(), _answered(True), done, agent_says("Refunded.")]
    assert _close(stored)[1] is Afterwards.NOTHING


# --- the gateway's own run that asked again, cut off in turn ------------------------------


def _asking(run_id: str) -> Event:
    """The turn a run of the gateway's stores as it asks the model again (invocation inv)."""
    return user_says(RESTARTED, runId=run_id)


def _replied_cut_off(run_id: str) -> Event:
    """How a close stored a reply cut off, in an invocation of its own."""
    return cut_off_before_a_word(run_id, f"before-{run_id}")


def test_an_asking_run_cut_off_asks_again_and_is_rewound_for_the_model() -> None:
    events, afterwards = _close([_replied_cut_off("run-1"), _asking("finish-1")])
    assert afterwards is Afterwards.ASK_AGAIN
    [reply, rewind] = events
    assert ending_of(reply) is Ending.INTERRUPTED  # what a client saw of it stays
    assert rewind.actions.rewind_before_invocation_id == "inv"
    assert rewind.custom_metadata == {"agui": {"runId": "finish-1"}}


def test_an_asking_run_a_user_resumed_since_closes_as_any_other() -> None:
    # A run of a user's went on with it since (it had paused on a person's approval).
    resumed = event("user", result("k1", CONFIRM, confirmed=False))
    resumed.custom_metadata = {"agui": {"runId": "run-2"}}
    events, afterwards = _close([_asking("finish-1"), resumed])
    assert afterwards is Afterwards.ASK_AGAIN  # it owes its reply to the answer
    assert all(e.actions.rewind_before_invocation_id is None for e in events)


def test_the_asking_runs_in_a_row_are_counted_back_to_a_users_run() -> None:
    assert finishing_attempts([]) == 0
    assert finishing_attempts([user_says("hi", runId="run-1"), _replied_cut_off("run-1")]) == 0
    in_a_row = [
        _asking("finish-0"),  # an earlier owed reply, before the user's run
        user_says("hi", runId="run-1"),
        _replied_cut_off("run-1"),
        _asking("finish-1"),
        _replied_cut_off("finish-1"),
        _asking("finish-2"),
    ]
    assert finishing_attempts(in_a_row) == 2
