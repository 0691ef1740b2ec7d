"""What the hub refuses a caller, and the signals that send an input back to wait its turn.

A refusal a caller can meet is a ``GatewayError`` with a code and a sentence that says
what to do: another user's thread, a thread the store set aside as damaged, a cluster
whose database cannot be reached, a process that is draining for a restart. (What a busy
thread refuses is the busy policy's, in ``gateway.hub.busy``.) So are the ends of a run that
the database, not the run, decided: lost mid-run, or a thread another process took over
from this one.

``Claimed`` and ``HeldElsewhere`` never reach a caller: raised while an input claims its
thread, they tell ``Admission`` that a run got there first, here or on another process,
so the input waits its turn instead.
"""

from __future__ import annotations

from gateway import wire as p
from gateway.store import QuarantinedThreadError, StoreError


def check_owner(owner: str, user_id: str, thread_id: str) -> None:
    if owner != user_id:
        raise p.GatewayError(
            p.ErrorCode.ACCESS_DENIED,
            f"Thread {thread_id!r} belongs to another user; start a new thread.",
        )


def quarantined(thread_id: str) -> p.GatewayError:
    """What the owner of a thread the store quarantined is told; the log names the row."""
    return p.GatewayError(
        p.ErrorCode.INTERNAL_ERROR,
        f"Thread {thread_id!r} cannot be loaded: part of its stored history is damaged, so it "
        "was set aside for an operator to look at. Start a new thread to go on.",
    )


def draining() -> p.GatewayError:
    """What an input meets on a process that is shutting down: retryable, elsewhere or later."""
    return p.GatewayError(
        p.ErrorCode.SERVICE_UNAVAILABLE,
        "This gateway process is shutting down for a restart and takes no new runs; send the "
        "same input again in a moment: it reaches a process that is up.",
    )


def cut_by_restart() -> p.GatewayError:
    """How a run still going when a stop's grace ran out ends for those who follow it."""
    return p.GatewayError(
        p.ErrorCode.SERVICE_UNAVAILABLE,
        "This gateway process restarted before the reply finished (GATEWAY_DRAIN_SECONDS ran "
        "out); what it said is kept, marked interrupted. Send your message again to go on.",
    )


def store_unavailable() -> p.GatewayError:
    """An input refused because the database cannot be reached, or cannot commit, now."""
    return p.GatewayError(
        p.ErrorCode.STORE_UNAVAILABLE,
        "The gateway cannot reach its database just now; try again in a moment.",
    )


def store_refusal(error: BaseException, thread_id: str) -> p.GatewayError | None:
    """What a client is told of a store failure while its input takes the thread (a
    quarantined thread, a database lost: not an unexpected failure); None for anything else."""
    if isinstance(error, QuarantinedThreadError):
        return quarantined(thread_id)
    if isinstance(error, StoreError):
        return store_unavailable()
    return None


def store_lost() -> p.GatewayError:
    """A run whose writes the database stopped taking (an outage, a lost connection)."""
    return p.GatewayError(
        p.ErrorCode.STORE_UNAVAILABLE,
        "The gateway lost its database in the middle of this run, so the run stopped; what "
        "was stored before is kept. Send your message again in a moment.",
    )


def lease_lost(thread_id: str) -> p.GatewayError:
    """A run stopped because its process could not renew the thread's lease in time."""
    return p.GatewayError(
        p.ErrorCode.STORE_UNAVAILABLE,
        f"This gateway process lost touch with its database for longer than its hold on "
        f"thread {thread_id!r} lasts, so the run stopped. Reattach to the thread to see what "
        "was stored, and send your message again if it is not there.",
    )


def taken_over(thread_id: str) -> p.GatewayError:
    """A run whose process stalled past its lease while another process took the thread."""
    return p.GatewayError(
        p.ErrorCode.THREAD_TAKEN_OVER,
        f"This gateway process stalled and another one took thread {thread_id!r} over, so "
        "nothing more of this run is stored. Reattach to the thread to see it as it is now.",
    )


class Claimed(Exception):
    """A run claimed the thread during an input's read: the input waits its turn after all."""


class HeldElsewhere(Exception):
    """Another process runs the thread: the input waits its turn for the lease."""
