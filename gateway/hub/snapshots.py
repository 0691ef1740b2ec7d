"""What a reattach shows of a thread when it is not replayed from the log: snapshots.

A reattach without a cursor (or with one the log cannot answer) is sent the thread as it
is stored: MESSAGES_SNAPSHOT with the live message ids and, in its metadata, when each
message was stored (``MESSAGE_TIMES``); then, if the snapshot left older messages out
(``snapshot_bytes``), where to page them in (``HISTORY``); when the thread has forks, its
branches on the active path (``BRANCHES``, docs/branches.md); then STATE_SNAPSHOT. A client
instance that executes the run's client calls is told which calls were made before it
came (``EXECUTOR``), so it executes them, or sends their results again.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

import msgspec
from google.adk.sessions import Session

from gateway import wire as p
from gateway.hub.open_calls import open_calls
from gateway.store import ThreadPage
from gateway.store.branches import BranchTree
from gateway.translate import history
from gateway.wire.notices import standalone

if TYPE_CHECKING:
    from gateway.hub.planning import Planner
    from gateway.hub.threads import Run

# Where a MESSAGES_SNAPSHOT says when each message was stored ({messageId: ms since the
# epoch}, in its metadata): AG-UI messages carry no time, and a reloaded page shows one.
MESSAGE_TIMES = "gateway.times"
HISTORY = "gateway.history"
# Tells a reattached connection that it executes the run: the calls named were made
# before it came, and are its own to execute, or to send the result of again.
EXECUTOR = "gateway.executor"
# Lists a thread's forks on its active path, and the branches of each (docs/branches.md).
BRANCHES = "gateway.branches"


def encoded_size(events: list[p.Event]) -> int:
    """The bytes ``events`` take on the wire: what a reattach is charged (``SendBudget``)."""
    return sum(len(p.encode(event)) for event in events)


def executor_event(call_ids: list[str]) -> p.Custom:
    return p.Custom(name=EXECUTOR, value={"toolCallIds": call_ids})


def branches_event(tree: BranchTree) -> p.Custom:
    return p.Custom(name=BRANCHES, value=tree.listing())


def thread_snapshot(
    thread_id: str, page: ThreadPage, session: Session | None, tree: BranchTree | None = None
) -> list[p.Event]:
    """What a reattach shows of a thread: its messages, where to page in older ones, its
    branches (when it has any), its state."""
    return [
        p.MessagesSnapshot(
            messages=msgspec.convert(page.messages, list[p.Message]),
            metadata={MESSAGE_TIMES: page.times_ms()} if page.times else None,
        ),
        *_earlier_part(thread_id, page),
        *([branches_event(tree)] if tree is not None and tree.branches else []),
        p.StateSnapshot(snapshot=history.state_snapshot(session) if session else {}),
    ]


def idle_view(
    thread_id: str,
    snapshot: list[p.Event],
    session: Session | None,
    client: str | None,
    planner: Planner,
) -> list[p.Event]:
    """A thread with no run in progress, as one standalone run: its snapshot, the calls of
    its last run this client instance executes, and in its RUN_FINISHED what the thread
    waits on (open browser calls, approvals), as the run's own end said it."""
    open_items = open_calls(session)
    own = [
        call_id
        for call_id, call in open_items.items()
        if client is not None
        and call.client == client
        and not call.server  # the agent's own call: no browser executes it
    ]
    shown = [*snapshot, *([executor_event(own)] if own else [])]
    return standalone(thread_id, shown, planner.waiting_for(open_items))


def run_view(run: Run, snapshot: list[p.Event], client: str | None) -> tuple[list[p.Event], bool]:
    """A run in progress as a joining subscriber catches up on it: its RUN_STARTED, the
    thread's snapshot, and what the run has open (a message, a call); and whether this
    client instance, the one whose input started the run, executes its browser calls."""
    started = p.RunStarted(
        thread_id=run.thread.thread_id, run_id=run.run_id, protocol_version=p.PROTOCOL_VERSION
    )
    executes = client is not None and client == run.owner
    if executes:
        snapshot = [*snapshot, executor_event(sorted(run.translator.client_calls))]
    if run.burst is not None:
        run.burst.flush()  # the catch-up shows the text held: it is not sent again after
    return [started, *snapshot, *run.translator.reopen()], executes


def _earlier_part(thread_id: str, page: ThreadPage) -> list[p.Event]:
    """After a snapshot that leaves older messages out: where to page them in from."""
    if page.earlier is None:
        return []
    query = urllib.parse.urlencode({"threadId": thread_id, "before": page.earlier})
    return [
        p.Custom(
            name=HISTORY,
            value={"earlier": True, "before": page.earlier, "href": f"/history?{query}"},
        )
    ]
