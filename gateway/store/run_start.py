"""Where a run's stored events begin in its thread: the thread as it was before the run.

A client that joins a run another process is streaming, with no cursor, is sent the thread
as it stood before the run, then the run's frames from its RUN_STARTED on (``Hub``). The
run's own events must stay out of that snapshot, or a message would show twice: once from
the store, once from the frames that stream it. Every event of a run carries its id (ADK
copies the run's ``custom_metadata`` onto each, the user's message included), and a run's
events are the newest of its thread, so the boundary is the first of the newest rows that
carries the run's id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from gateway.context import RUN_METADATA_KEY


class _Stamped(msgspec.Struct, rename="camel"):  # events are stored by their aliases
    """Of a stored ADK event, only what names its run."""

    custom_metadata: dict[str, Any] | None = None


_stamped = msgspec.json.Decoder(_Stamped)


def run_of(data: str) -> str | None:
    """The id of the run a stored event belongs to; None if it names none (or is damaged:
    a damaged row is the quarantine's to find, not this read's)."""
    try:
        metadata = _stamped.decode(data).custom_metadata or {}
    except msgspec.DecodeError:
        return None
    ours = metadata.get(RUN_METADATA_KEY)
    run_id = ours.get("runId") if isinstance(ours, dict) else None
    return run_id if isinstance(run_id, str) else None


def run_start(rows: Sequence[tuple[int, str]], run_id: str) -> int:
    """The seq of the first of ``rows`` (seq, data), oldest first, that belongs to
    ``run_id``; past the last of them when none does (the run has stored nothing yet), 0
    when there are none (the thread has no event).

    ``rows`` run from where the thread's latest invocation began (a stored event, which is
    at or before the run's first: a run starts an invocation, or resumes the latest one) to
    the thread's newest event.
    """
    past_newest = rows[-1][0] + 1 if rows else 0
    return next((seq for seq, data in rows if run_of(data) == run_id), past_newest)
