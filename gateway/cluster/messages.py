"""What the processes of a cluster tell each other: small typed messages, one a NOTIFY payload.

None carries an event: a notice names a thread and how far its log is committed, and the
processes that follow the thread read the frames from the log (``gateway.cluster`` says why);
a thread's change names the thread, and each process reads its summary from the store.
A payload that does not decode is not ours (anyone connected may NOTIFY the channel) and is
dropped, never raised.
"""

from __future__ import annotations

import logging

import msgspec

log = logging.getLogger(__name__)

# PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more.
PAYLOAD_LIMIT = 7999


class Committed(msgspec.Struct, tag="committed", frozen=True):
    """The thread's log holds its frames up to ``seq``, committed."""

    thread: str
    seq: int


class Cancel(msgspec.Struct, tag="cancel", frozen=True):
    """Stops the thread's run on the process ``to`` that holds it, as a cancel there does."""

    to: str
    thread: str
    user: str
    run: str | None = None  # the run meant, if the client named one


class Released(msgspec.Struct, tag="released", frozen=True):
    """The thread's lease is free: an input waiting for it on another process may take it."""

    thread: str


# A thread of a user created, updated or deleted: (user, thread, change).
Change = tuple[str, str, str]


class ThreadsChanged(msgspec.Struct, tag="threads", frozen=True):
    """Threads were created, updated or deleted on the process ``origin``, each
    ``(user, thread, change)``: the users' connections on the others hear of it too
    (``gateway.hub.thread_news``). One notice for the changes a process made together:
    every process hears every notice, and each costs its event loop."""

    origin: str
    changes: list[Change]


class ThreadChanged(msgspec.Struct, tag="thread", frozen=True):
    """One thread's change, as a process of an earlier version tells it (``ThreadsChanged``
    now): heard, so a cluster being upgraded a process at a time keeps its thread news."""

    origin: str
    user: str
    thread: str
    change: str


Message = Committed | Cancel | Released | ThreadsChanged | ThreadChanged

_decoder = msgspec.json.Decoder(Message)


def encoded(message: Message) -> str | None:
    """The payload of ``message``; None (logged) if PostgreSQL would refuse it as too long."""
    payload = msgspec.json.encode(message)
    if len(payload) > PAYLOAD_LIMIT:
        log.warning("a cluster message of %d bytes is too long to send; dropped", len(payload))
        return None
    return payload.decode()


def threads_changed(origin: str, changes: list[Change]) -> list[str]:
    """The payloads telling ``changes``, in order: one, unless PostgreSQL's limit on a
    payload splits them (a change too long to send alone is dropped, logged)."""
    if not changes:
        return []
    payload = msgspec.json.encode(ThreadsChanged(origin, changes))
    if len(payload) <= PAYLOAD_LIMIT:
        return [payload.decode()]
    if len(changes) == 1:
        log.warning("a thread change of %d bytes is too long to send; dropped", len(payload))
        return []
    half = len(changes) // 2
    return threads_changed(origin, changes[:half]) + threads_changed(origin, changes[half:])


def decoded(payload: str) -> Message | None:
    try:
        return _decoder.decode(payload)
    except msgspec.DecodeError:
        log.debug("ignored a notice on the cluster's channel that is not ours: %.80r", payload)
        return None
