"""What an input meets on a thread whose run is still going: the busy policy.

- ``reject``: ``SESSION_BUSY`` at once (409 on SSE), as before.
- ``interrupt``: a new user message stops the running run as a cancel does (its reply
  kept, marked stopped), then runs once that run has ended; answers to open calls (a
  browser's result, an approval) never stop a run, they wait as ``enqueue`` does.
- ``enqueue``: the input waits for the running run to end, then runs.

Inputs that wait take their turns in the order they came, at most ``WAITING_PER_THREAD``
of them a thread (the next is ``SESSION_BUSY``); one whose client goes away drops out.
The gateway's default is ``GATEWAY_BUSY``; an input may ask for another with
``forwardedProps: {"gateway": {"busy": "enqueue"}}``.
"""

from __future__ import annotations

import contextlib
import enum

from gateway import wire as p

# Inputs one thread may have waiting for its run to end.
WAITING_PER_THREAD = 3


class Busy(enum.StrEnum):
    REJECT = "reject"
    INTERRUPT = "interrupt"
    ENQUEUE = "enqueue"


def requested(run_input: p.RunAgentInput, default: Busy) -> Busy:
    """The policy an input asks for in ``forwardedProps.gateway.busy``, else ``default``."""
    asked = run_input.forwarded("gateway").get("busy")
    if asked is None:
        return default
    if isinstance(asked, str):
        with contextlib.suppress(ValueError):
            return Busy(asked)
    choices = ", ".join(f"'{policy}'" for policy in Busy)
    raise p.GatewayError(
        p.ErrorCode.VALIDATION_ERROR,
        f"forwardedProps.gateway.busy must be one of {choices}, or left out for the "
        f"gateway's default ('{default}').",
    )


def in_progress(thread_id: str) -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.SESSION_BUSY,
        f"Thread {thread_id!r} already has a run in progress; wait for it to finish or cancel "
        "it (or send forwardedProps.gateway.busy 'interrupt' or 'enqueue').",
    )


def queue_full(thread_id: str) -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.SESSION_BUSY,
        f"Thread {thread_id!r} already has {WAITING_PER_THREAD} messages waiting for its run to "
        "end; wait for them to run.",
    )
