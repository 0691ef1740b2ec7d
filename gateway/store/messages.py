"""AG-UI messages as the store keeps them, and the projection it is given to make them.

Each event row keeps the AG-UI messages its event shows as, written with the event, so a
thread's snapshot is one read (``projection``). Which messages an ADK event shows as is
translation, a layer above the store: whoever opens a store gives it that projection
(``EventMessages``; the gateway's is ``gateway.translate.history.event_messages``), and the
store calls it on every append and in the SQLite migrations that recompute the column. So
the store never imports translation.

What the store needs of the messages themselves, with no ADK in it, is here: a message is
a JSON object (``Message``), and a snapshot keeps only the tool results whose call it shows,
and of the replies cut off before they said anything only the last of a turn
(``answered_calls_only``). Translation imports both from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from google.adk.events import Event

Message = dict[str, Any]

# The AG-UI messages one stored ADK event shows as, oldest first; none for an event that
# shows nothing. A change to what it returns needs a migration that recomputes the column.
EventMessages = Callable[[Event], list[Message]]


# The role of a message that marks an earlier one instead of adding one: its ``metadata``
# goes into the earlier message of its ``id`` (a live turn's reply the person spoke over,
# stored before the interruption that marks it), and it is never shown itself.
MARK = "mark"


def answered_calls_only(messages: Iterable[Message]) -> list[Message]:
    """``messages`` without the tool results whose call no earlier message makes, without
    the empty replies a later reply of their turn supersedes, and with the marks (``MARK``)
    applied.

    Such a result answers a call cut off by a history window, or an approval request
    (which travels as an AG-UI Interrupt, never as a tool call). A mark whose message is
    not among ``messages`` (cut off by a window) is dropped.

    An empty reply is one cut off before it said anything (``gateway.store.cut_off``: no
    text, no tool call, only ``metadata.ended``): each run that asked the model again for a
    reply a crash cut off, and was cut off in turn, leaves one. Once another reply of the
    turn follows, it says nothing the user should see; the last of a turn stays, the one
    sign that the turn's answer never came (the reference client offers a retry there).
    A reply with no text or tool call that was not cut off (one a projection shows by other
    means) is never dropped: only the cut-off mark says it was left empty.
    """
    kept: list[Message] = []
    calls_seen: set[str] = set()
    unsaid: list[int] = []  # where in ``kept`` this turn's empty replies are
    for message in messages:
        role = message["role"]
        if role == "tool":
            if message["toolCallId"] not in calls_seen:
                continue
        elif role == "assistant":
            if unsaid:  # superseded: a later reply of the turn follows
                for index in reversed(unsaid):
                    del kept[index]
                unsaid.clear()
            if calls := message.get("toolCalls"):
                calls_seen.update(call["id"] for call in calls)
            elif _unsaid(message):
                unsaid.append(len(kept))
        elif role == "user":
            unsaid.clear()
        elif role == MARK:
            _apply_mark(message, kept)
            continue
        kept.append(message)
    return kept


def ends_cut_off(messages: list[Message]) -> bool:
    """Whether the last reply of the last turn of ``messages`` (as joined) was cut off
    before a word: the page of ``/history`` that ends so may end in a turn that goes on in
    the page after it (``goes_on``), where the whole thread's snapshot would not show it."""
    for message in reversed(messages):
        if message["role"] == "user":
            return False
        if message["role"] == "assistant":
            return _unsaid(message)
    return False


def goes_on(messages: list[Message]) -> bool:
    """Whether ``messages`` go on with the turn before them: a reply comes before any
    user's message."""
    for message in messages:
        if message["role"] == "user":
            return False
        if message["role"] == "assistant":
            return True
    return False


def _unsaid(reply: Message) -> bool:
    """Whether an assistant message is a reply cut off before it said anything."""
    metadata = reply.get("metadata")
    cut_off = isinstance(metadata, dict) and metadata.get("ended") is not None
    return cut_off and not reply.get("content") and not reply.get("toolCalls")


def _apply_mark(mark: Message, kept: list[Message]) -> None:
    # The marked message is one of the last few: looked for from the end.
    for message in reversed(kept):
        if message["id"] == mark["id"]:
            message["metadata"] = {**(message.get("metadata") or {}), **mark["metadata"]}
            return
