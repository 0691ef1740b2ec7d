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

import msgspec
from google.adk.sessions import Session

from gateway import wire as p
from gateway.store import ThreadPage
from gateway.store.branches import BranchTree
from gateway.translate import history

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
