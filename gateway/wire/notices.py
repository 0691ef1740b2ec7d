"""What the gateway tells a client outside the model's words: notices, and runs of their own.

A notice is a ``CUSTOM`` event named ``gateway.notice`` with a code and a sentence (an
ignored duplicate answer, an expired approval, nothing to cancel, a reattach that missed
nothing). Sent outside any run, it
travels inside a run of its own, so the stream a client sees stays a valid AG-UI stream.
"""

from __future__ import annotations

import uuid

from gateway import wire as p

NOTICE = "gateway.notice"


def notice(code: str, message: str) -> p.Custom:
    return p.Custom(name=NOTICE, value={"code": code, "message": message})


def standalone(
    thread_id: str, events: list[p.Event], outcome: p.Outcome | None = None
) -> list[p.Event]:
    """Events outside any run travel as a run of their own, so the stream stays valid; its
    RUN_FINISHED says ``outcome`` (a success by default)."""
    run_id = f"notice-{uuid.uuid4().hex[:12]}"
    return [
        p.RunStarted(thread_id=thread_id, run_id=run_id, protocol_version=p.PROTOCOL_VERSION),
        *events,
        p.RunFinished(thread_id=thread_id, run_id=run_id, outcome=outcome or p.SuccessOutcome()),
    ]


def nothing_to_cancel(thread_id: str, run_id: str | None = None) -> list[p.Event]:
    message = (
        f"Run {run_id!r} of thread {thread_id!r} is not in progress; nothing was cancelled."
        if run_id is not None
        else f"Thread {thread_id!r} has no run in progress; nothing was cancelled."
    )
    return standalone(thread_id, [notice("NOTHING_TO_CANCEL", message)])


def up_to_date(thread_id: str, after: int) -> list[p.Event]:
    """The answer to a reattach by cursor that missed nothing, on a thread with no run in
    progress: said, so that a client can tell "up to date" from "lost"."""
    message = (
        f"Thread {thread_id!r} has nothing after {after} and no run in progress; "
        "you are up to date."
    )
    return standalone(thread_id, [notice("UP_TO_DATE", message)])
