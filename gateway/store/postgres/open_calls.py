"""The ``open_calls`` rows an event's ``RunProgress`` writes (see ``progress``), one call at
a time: for an event that names a call id twice, which the append's own statement
(``writes.append_event``) cannot apply in one go."""

from __future__ import annotations

import psycopg

from gateway.store.progress import RunProgress


def record_progress(
    db: psycopg.Connection, progress: RunProgress, session_pk: int, seq: int, invocation_seq: int
) -> None:
    """Opens the calls the event makes and closes the ones it answers."""
    if progress.answers:
        db.execute(
            "DELETE FROM open_calls WHERE session_pk = %s AND call_id = ANY(%s)",
            (session_pk, list(progress.answers)),
        )
    if progress.calls:
        with db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO open_calls"
                " (session_pk, call_id, name, seq, invocation_seq, long_running)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session_pk, call_id) DO UPDATE"
                " SET name = excluded.name, seq = excluded.seq,"
                " invocation_seq = excluded.invocation_seq, long_running = excluded.long_running",
                [
                    (session_pk, call_id, name, seq, invocation_seq, long_running)
                    for call_id, name, long_running in progress.calls
                ],
            )
