"""What the store answers about thread leases (``gateway.cluster``), whatever its backend.

A lease taken is numbered with an epoch the database gives out, never twice, and a new
one whenever the thread changes holder. That number is the lease's fencing token: each
write a holder makes under it carries its ``Fence``, and the database refuses the write,
in the write's own transaction, once the thread's lease is no longer that epoch
(``FencedError``). A holder that stalled past its lease (a GC pause, a frozen VM) and
wakes up after another process took its thread over can therefore store nothing more,
whatever its clock says.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Taken:
    """A lease this process now holds; ``from_dead`` names the holder it was taken from,
    whose cut-off run the taker closes before anything else happens on the thread."""

    thread_id: str
    from_dead: str | None
    # The lease's fencing token; None where nothing is fenced (one process, SQLite).
    epoch: int | None = None


@dataclass(frozen=True, slots=True)
class Fence:
    """The lease a write is made under: stored only while it is still the thread's."""

    thread_id: str
    epoch: int


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
