"""A write under a thread's lease (``writes.Fenced``), checked in PostgreSQL.

A write a process makes of a thread it holds carries the lease's epoch (its ``Fence``),
and is applied only while the epoch is still the thread's, checked in the write's own
transaction with the lease's row locked to its end: a take of the thread, which gives it a
new epoch, waits for that lock, so no write of an old holder commits after its thread
changed hands (docs/cluster.md).

The writes a run makes all along (an event, frames, a streamed text, a trim) carry the
check in their own statement (``LEASES``, ``current``): it costs no round trip of its own.
Any other fenced write's lease is read and locked before the batch's writes
(``lease_epochs``) and checked in Python (``writes.unfenced``).

Leases are locked ``FOR KEY SHARE``, the weakest lock a take waits for: the epoch is a
key (``leases``'s unique index), so a take's update of it waits, while the heartbeat's
renewal (``leases.renew``) and a waiter's mark (``leases.want``), which change no key, wait
for no batch. A batch may so lock its leases a statement at a time, in any order, and never
meet a renewal in a circle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from gateway.store.errors import FencedError
from gateway.store.leases import Fence
from gateway.store.postgres.json_rows import document
from gateway.store.writes import not_found

# The leases of a statement's fenced writes (``%(fenced)s``, their threads as a JSON
# array: ``json_rows``), locked to the end of the transaction: the first part of the
# statement's WITH.
LEASES = (
    "leases AS (SELECT thread_id, epoch, holder, tell_holder FROM gateway_leases"
    " WHERE thread_id = ANY(ARRAY(SELECT json_array_elements_text(%(fenced)s::json)))"
    " FOR KEY SHARE),"
)


def current(fenced: bool, epoch: str, thread: str) -> str:
    """Whether a write of the statement may be applied: one of no fence (its ``epoch``
    NULL) always, a fenced one while its epoch is its ``thread``'s lease's (``LEASES``)."""
    if not fenced:
        return "TRUE"
    return (
        f"({epoch}::bigint IS NULL OR COALESCE({epoch}::bigint ="
        f" (SELECT epoch FROM leases WHERE leases.thread_id = {thread}), FALSE))"
    )


def fenced_threads(fences: Sequence[Fence | None]) -> str:
    """The threads whose leases a statement locks (``LEASES``'s ``%(fenced)s``)."""
    return document(sorted({fence.thread_id for fence in fences if fence is not None}))


def epochs(fences: Sequence[Fence | None] | None, threads: Sequence[str]) -> list[int | None]:
    """Each write's fence epoch, or None; a write's lease is its thread's
    (``ThreadWrites.submit`` fences a write by the thread it writes)."""
    if fences is None:
        return [None] * len(threads)
    assert all(f is None or f.thread_id == t for f, t in zip(fences, threads, strict=True))
    return [fence.epoch if fence is not None else None for fence in fences]


def refused(fence: Fence | None) -> FencedError:
    assert fence is not None  # only a fenced write is ever refused
    return FencedError(fence.thread_id, fence.epoch)


def fencing(params: dict[str, object], fences: Sequence[Fence | None] | None) -> bool:
    """Whether a statement of several writes is fenced: if any write is, its parameters get
    the leases to lock (``LEASES``); each write's epoch goes in its row (``epochs``)."""
    if fences is None or not any(fences):
        return False
    params["fenced"] = fenced_threads(fences)
    return True


def outcomes(
    found: Sequence[tuple[Any, ...]],
    fences: Sequence[Fence | None] | None,
    wrote: Sequence[tuple[Any, str]],
) -> list[Any]:
    """Each write's outcome from the rows of a statement of several (the write's number and
    whether it was current): what it ``wrote`` (a value, and its thread) if it was current,
    ``FencedError`` if not, the error of a thread that is not there if no row names it."""
    applied = {row[0]: row[1] for row in found}
    each: list[Any] = []
    for number, (value, thread) in enumerate(wrote):
        if number not in applied:
            each.append(not_found(thread))
        elif not applied[number]:
            each.append(refused(fences[number] if fences is not None else None))
        else:
            each.append(value)
    return each


def lease_epochs(db: psycopg.Connection, thread_ids: list[str]) -> dict[str, int]:
    """The current lease epochs of the threads (none for a thread without a lease), their
    rows locked until the transaction ends, for the fenced writes whose statement does not
    check its fence itself.

    The lock is the one a fenced statement takes (``LEASES``): a taker waits for this
    transaction to end, and one that reads after the hand-over finds the new epoch.
    """
    if not thread_ids:
        return {}
    found = db.execute(
        "SELECT thread_id, epoch FROM gateway_leases WHERE thread_id = ANY(%s) FOR KEY SHARE",
        (thread_ids,),
    ).fetchall()
    return {str(thread_id): int(epoch) for thread_id, epoch in found}
