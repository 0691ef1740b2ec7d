"""An input sent twice runs once: a thread runs each runId once.

Theory of operation. A client cut off just after sending a RunAgentInput cannot know
whether it arrived; the reference client (clients/agui-websocket) sends it again, with the
same runId, once it has reconnected, until it sees that run begin. So the gateway runs a
runId once per thread: an input whose runId the thread has admitted, is running, or ran
is a ``Duplicate``. Nothing of it runs or is stored; its sender is answered as a reattach
is (docs/reconnects.md), with a ``RUN_DEDUPED`` notice naming the run first, and the log
line and ``gateway_inputs_deduped`` count it.

Where a runId is found, cheapest first:

- in memory, as the input is admitted, with nothing read (``Admission.admit``): an input
  admitted on the thread that has not claimed it yet, or the thread's run going here;
- in the thread as the run's claim read it, once the input has claimed its thread and
  before it is planned (``Hub._start``): its recent events (``GATEWAY_HISTORY_WINDOW``'s
  window), which carry the runId the gateway stamps on every event of a run; no read more;
- in the store, when that window does not hold the whole thread, or for an input waiting
  for a run on another process, before it would interrupt it: the run's first stored event,
  through an index on that stamp (``gateway.store.run_start``). The thread and the store
  are what survive a restart, and what another process of a cluster stored;
- in the thread's lease, for an input waiting for a run on another process: the lease
  names the run it was taken for (``Admission._not_running_elsewhere``), which has its
  thread before it has stored anything. A copy that reaches another process while its
  first is still being planned there is found only so, and then follows that run live.

Nothing grows per client: what memory knows is what the hub holds anyway (its admitted
inputs and its runs), and the store's index grows with the events it indexes.

A copy says what the first input of its runId said (``said``, compared where that is
known). The same runId with another input is not a copy, and runs as any input does:
CopilotKit's ``useInterrupt`` resumes an interrupted run under that run's runId, with the
person's answer. Only while the first input is still admitted, before its run has its thread,
is another under its runId refused (VALIDATION_ERROR): two inputs in flight under one runId
are no client's doing, and the admission keeps one entry a runId.
"""

from __future__ import annotations

import hashlib
import logging
from typing import NoReturn

import msgspec
from google.adk.sessions import Session

from gateway import wire as p
from gateway.adk.engine import Engine
from gateway.context import event_metadata
from gateway.metrics import Metrics
from gateway.store.run_start import StoredRun
from gateway.wire.notices import NOTICE, standalone

log = logging.getLogger(__name__)

# The notice a duplicate's sender is sent (its ``runId``: the run it sent again).
DEDUPED = "RUN_DEDUPED"
# What a turn from a press on a surface stores as its message id (``gateway.hub.inputs``).
ACTION_MESSAGE = "a2ui-action-"


class Duplicate(Exception):
    """An input whose runId its thread has admitted, runs, or ran (``found``: "here",
    "elsewhere": another process runs it, or "stored"): it does not run again."""

    def __init__(self, thread_id: str, run_id: str, found: str) -> None:
        super().__init__(f"run {run_id} of thread {thread_id} was received already ({found})")
        self.thread_id = thread_id
        self.run_id = run_id
        self.found = found


def said(run_input: p.RunAgentInput) -> str:
    """What an input says, as a short key: its user message's id, or a digest of the
    press, the answers or the approvals it brings."""
    try:
        action = p.user_action(run_input)
    except p.GatewayError:  # its plan refuses it, in its turn
        action = None
    if action is not None:
        return f"action:{_digest(msgspec.json.encode(action))}"
    if run_input.resume:
        return f"resume:{_digest(msgspec.json.encode(run_input.resume))}"
    messages = run_input.messages
    if messages and isinstance(messages[-1], p.UserMessage):
        return f"message:{messages[-1].id}"
    answers = [messages[i] for i in p.trailing_tool_messages(messages)]
    return f"answers:{_digest(msgspec.json.encode(answers))}"


def in_session(session: Session, run_id: str) -> StoredRun | None:
    """The first of the session's events (a window of its newest) that a user's input of
    ``run_id`` began, as the store's index would find it."""
    for event in session.events:
        if event.author == "user" and (ours := event_metadata(event)).get("runId") == run_id:
            message_id = ours.get("messageId")
            return StoredRun(-1, message_id if isinstance(message_id, str) else None)
    return None


async def check_stored(
    engine: Engine, user_id: str, run_input: p.RunAgentInput, session: Session | None = None
) -> None:
    """Raises Duplicate for a user's input whose run the thread has stored (it ran here
    before a restart, or on another process), unless that run's input said something else
    (then it is a new input). ``session``: the thread as its claim read it, a window of its
    newest events; the store's index is read only when that window may not hold the whole
    thread."""
    stored = None
    if session is not None:
        stored = in_session(session, run_input.run_id)
        whole = len(session.events) < engine.sessions.history_window
        if stored is None and whole:
            return
    if stored is None:
        stored = await engine.run_input(user_id, run_input.thread_id, run_input.run_id)
    if stored is not None:
        found_stored(run_input, stored)


def found_stored(run_input: p.RunAgentInput, stored: StoredRun) -> None:
    """Raises Duplicate for an input whose run the store has (``stored``: that run's first
    stored event), unless that run's input said something else (then it is a new input):
    the user's message is compared by its id, other inputs the store cannot tell apart."""
    message_id = stored.message_id
    compared = message_id is not None and not message_id.startswith(ACTION_MESSAGE)
    if compared and not is_copy(f"message:{message_id}", said(run_input)):
        return
    raise Duplicate(run_input.thread_id, run_input.run_id, "stored")


def is_copy(first: str | None, again: str) -> bool:
    """Whether an input that says ``again`` is a copy of the first input of its runId,
    which said ``first`` (None: not known, so a copy)."""
    return first is None or first == again


def refuse_in_flight(thread_id: str, run_id: str) -> NoReturn:
    """VALIDATION_ERROR for another input under the runId of one still admitted."""
    raise p.GatewayError(
        p.ErrorCode.VALIDATION_ERROR,
        f"Run {run_id!r} of thread {thread_id!r} was received already with another"
        " message, which has not begun; nothing was run. Send a new message with a new runId.",
    )


def noted(duplicate: Duplicate, metrics: Metrics) -> None:
    """The log line and the count of an input not run again."""
    log.info("%s; it is not run again", duplicate)
    metrics.input_deduped(duplicate.found)


def told(duplicate: Duplicate, *, started: bool) -> list[p.Event]:
    """What the sender of a duplicate is told before the thread as a reattach shows it: a
    RUN_DEDUPED notice naming its run. ``started``: the run's RUN_STARTED went out as the
    input was admitted, so the notice ends that run; else it comes in a run of its own."""
    thread_id, run_id = duplicate.thread_id, duplicate.run_id
    message = (
        f"Run {run_id!r} of thread {thread_id!r} was received already; it is not run again."
        " The thread follows as it stands."
    )
    value = {"code": DEDUPED, "message": message, "runId": run_id}
    notice = p.Custom(name=NOTICE, value=value)
    if not started:
        return standalone(thread_id, [notice])
    return [notice, p.RunFinished(thread_id=thread_id, run_id=run_id, outcome=p.SuccessOutcome())]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()
