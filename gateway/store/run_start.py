"""Where a run's stored events begin in its thread: the thread as it was before the run.

A client that joins a run another process is streaming, with no cursor, is sent the thread
as it stood before the run, then the run's frames from its RUN_STARTED on (``Hub``). The
run's own events must stay out of that snapshot, or a message would show twice: once from
the store, once from the frames that stream it. Every event of a run carries its id (ADK
copies the run's ``custom_metadata`` onto each, the user's message included), and a run's
events are the newest of its thread, so the boundary is the first of the newest rows that
carries the run's id.

The same stamp finds a run's first stored event wherever it is (``stored_run``): an input
sent again with a runId its thread ran is not run twice (``gateway.hub.dedupe``). Each
backend indexes the stamp of the events a user's input begins (its message, its answers),
``author = 'user'``: ``RUN_ID_SQLITE``, ``RUN_ID_POSTGRES``; the index finds the rows, and
``stored_run`` reads them as ``run_of`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import msgspec

from gateway.context import RUN_METADATA_KEY

# The run id a stored event carries, as SQLite indexes it (``sqlite.schema``): the index's
# expression and the read's must be the same text. ``json_valid`` keeps a damaged row (the
# quarantine's to find) from failing its insert.
RUN_ID_SQLITE = f"json_extract(data, '$.customMetadata.{RUN_METADATA_KEY}.runId')"
RUN_ID_SQLITE_ROWS = "author = 'user' AND json_valid(data)"
# As PostgreSQL indexes it: a pattern on the stored text, which cannot fail on a damaged
# row as a cast to jsonb would (its events are stored compact, the run's id first in ours).
RUN_ID_POSTGRES = f"""substring(data from '"{RUN_METADATA_KEY}":\\{{"runId":"([^"\\\\]*)"')"""
RUN_ID_POSTGRES_ROWS = "author = 'user'"


class _Stamped(msgspec.Struct, rename="camel"):  # events are stored by their aliases
    """Of a stored ADK event, only what names its run."""

    custom_metadata: dict[str, Any] | None = None


_stamped = msgspec.json.Decoder(_Stamped)


@dataclasses.dataclass(frozen=True, slots=True)
class StoredRun:
    """A run's first stored event: where it is (-1: found in a loaded session), and the id
    of the user's message it stored (None: it began with something else, answers or a
    press on a surface)."""

    seq: int
    message_id: str | None


def _ours(data: str) -> dict[str, Any]:
    try:
        metadata = _stamped.decode(data).custom_metadata or {}
    except msgspec.DecodeError:
        return {}
    ours = metadata.get(RUN_METADATA_KEY)
    return ours if isinstance(ours, dict) else {}


def run_of(data: str) -> str | None:
    """The id of the run a stored event belongs to; None if it names none (or is damaged:
    a damaged row is the quarantine's to find, not this read's)."""
    run_id = _ours(data).get("runId")
    return run_id if isinstance(run_id, str) else None


def stored_run(rows: Sequence[tuple[int, str]], run_id: str) -> StoredRun | None:
    """The first of ``rows`` (seq, data), oldest first, that belongs to ``run_id``."""
    for seq, data in rows:
        ours = _ours(data)
        if ours.get("runId") == run_id:
            message_id = ours.get("messageId")
            return StoredRun(seq, message_id if isinstance(message_id, str) else None)
    return None


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
