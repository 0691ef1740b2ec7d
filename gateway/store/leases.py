"""What the store answers about thread leases (``gateway.cluster``), whatever its backend."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Taken:
    """A lease this process now holds; ``from_dead`` names the holder it was taken from,
    whose cut-off run the taker closes before anything else happens on the thread."""

    thread_id: str
    from_dead: str | None


@dataclass(frozen=True, slots=True)
class Held:
    """Who runs a thread: the live holder of its lease, and the user whose run it is."""

    holder: str
    user_id: str
    run_id: str


@dataclass(frozen=True, slots=True)
class DeadLease:
    """A lease whose holder died (or stopped renewing it) with a run of the thread going."""

    thread_id: str
    user_id: str
    holder: str
