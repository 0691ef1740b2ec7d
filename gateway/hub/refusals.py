"""What the hub refuses a caller, and the signals that send an input back to wait its turn.

A refusal a caller can meet is a ``GatewayError`` with a code and a sentence that says
what to do: another user's thread, a thread the store set aside as damaged, a cluster
whose database cannot be reached, a process that is draining for a restart. (What a busy
thread refuses is the busy policy's, in ``gateway.hub.busy``.)

``Claimed`` and ``HeldElsewhere`` never reach a caller: raised while an input claims its
thread, they tell ``Hub.start`` that a run got there first, here or on another process,
so the input waits its turn instead.
"""

from __future__ import annotations

from gateway import wire as p


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


def cluster_unreachable() -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.INTERNAL_ERROR,
        "The gateway cannot reach its database just now; try again in a moment.",
    )


class Claimed(Exception):
    """A run claimed the thread during an input's read: the input waits its turn after all."""


class HeldElsewhere(Exception):
    """Another process runs the thread: the input waits its turn for the lease."""
