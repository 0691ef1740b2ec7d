"""The ``open_calls`` rows an event's ``RunProgress`` writes (see ``progress``)."""

from __future__ import annotations

import sqlite3

from gateway.store.progress import RunProgress


def record_progress(
    db: sqlite3.Connection, progress: RunProgress, session_pk: int, seq: int, invocation_seq: int
) -> None:
    """Opens the calls the event makes and closes the ones it answers."""
    if progress.answers:
        db.executemany(
            "DELETE FROM open_calls WHERE session_pk = ? AND call_id = ?",
            [(session_pk, call_id) for call_id in progress.answers],
        )
    if progress.calls:
        db.executemany(
            "INSERT OR REPLACE INTO open_calls"
            " (session_pk, call_id, name, seq, invocation_seq, long_running)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [
                (session_pk, call_id, name, seq, invocation_seq, long_running)
                for call_id, name, long_running in progress.calls
            ],
        )
